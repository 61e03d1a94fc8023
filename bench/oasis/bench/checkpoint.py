"""``oasis bench checkpoint``: how long a robot's request controller takes to write and to restore its
checkpoint with a large frontier, against parsing the same checkpoint's JSON in the same process (the ratio
is what drifts least on a shared machine).

A controller of each policy is fed a stream of fetches, each reporting ``--links`` links to pages drawn from
``size`` URLs on 7 hosts (so most queued pages are reached by several links, as on a real web), until about
``size`` pages are known; then ``state_dict`` + ``json.dumps`` (write), ``json.loads`` (the baseline) and
``load_state`` into a fresh controller (restore) are timed, and the restored controller's next decisions
are checked against the original's. A restore quadratic in the frontier (session 16 found one: 338 s for
85,365 queued pages at ``--sizes 100000``, docs/speed.md) shows as a ratio that grows with the size."""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from oasis.robot.scheduling import SHIPPED, Discovered, FetchOutcome, make_controller
from oasis.runtime.files import write_json_atomic


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("checkpoint", help="controller checkpoint write / restore time vs parsing its JSON")
    p.add_argument("--sizes", default="10000,100000", help="URLs the links are drawn from (comma-separated)")
    p.add_argument("--policies", default="whittle,bfs")
    p.add_argument("--links", type=int, default=50, help="links reported per fetch")
    p.add_argument("--json-out", type=Path, default=None)
    p.set_defaults(func=run)


def crawled(policy: str, size: int, links: int, seed: int = 1) -> Any:
    """A controller of ``policy`` (the robot as shipped for ``whittle``) after fetches reporting ``links``
    links each, drawn from ``size`` URLs, until about ``size`` pages are known."""
    rng = random.Random(seed)
    ctl = make_controller(policy, rng=random.Random(seed), config=SHIPPED)
    ctl.add_seeds(["http://h0.example.org/p0.html"])
    step = 0
    while len(ctl.docs) < 0.9 * size:
        batch = ctl.next_batch(1, float(step))
        if not batch:
            break
        found = [
            Discovered(f"http://h{j % 7}.example.org/p{j}.html", "", rng.random() * 0.3)
            for j in rng.sample(range(size), links)
        ]
        ctl.report(FetchOutcome(batch[0], "new", rng.random(), found), float(step))
        step += 1
    return ctl


def measure(policy: str, size: int, links: int) -> dict[str, Any]:
    """One row: the frontier, the checkpoint's size and the write, parse and restore times (s)."""
    ctl = crawled(policy, size, links)
    t0 = time.perf_counter()
    text = json.dumps(ctl.state_dict())
    write = time.perf_counter() - t0
    t0 = time.perf_counter()
    state = json.loads(text)
    parse = time.perf_counter() - t0
    t0 = time.perf_counter()
    restored = make_controller(policy, rng=random.Random(1), config=SHIPPED)
    restored.load_state(state)
    restore = time.perf_counter() - t0
    same = restored.next_batch(20, 1e9) == ctl.next_batch(20, 1e9)
    return {
        "policy": policy,
        "size": size,
        "known": len(ctl.docs),
        "frontier": ctl.frontier_size(),
        "checkpoint_mb": len(text) / 1e6,
        "write_s": write,
        "parse_s": parse,
        "restore_s": restore,
        "restore_vs_parse": restore / parse,
        "write_vs_parse": write / parse,
        "same_decisions": same,
    }


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    sizes = [int(float(s)) for s in args.sizes.split(",")]
    policies = [p.strip() for p in args.policies.split(",")]
    head = ("policy", "size", "frontier", "MB", "write s", "parse s", "restore s", "restore/parse", "same")
    rows: list[dict[str, Any]] = []
    for policy, size in tqdm([(p, s) for p in policies for s in sizes], desc="checkpoint", leave=False):
        rows.append(measure(policy, size, args.links))
    print("{:<10} {:>8} {:>9} {:>6} {:>8} {:>8} {:>9} {:>13} {:>5}".format(*head))
    for r in rows:
        print(
            f"{r['policy']:<10} {r['size']:>8} {r['frontier']:>9} {r['checkpoint_mb']:>6.1f} "
            f"{r['write_s']:>8.2f} {r['parse_s']:>8.2f} {r['restore_s']:>9.2f} "
            f"{r['restore_vs_parse']:>13.2f} {'yes' if r['same_decisions'] else 'NO':>5}"
        )
    if args.json_out:
        write_json_atomic(args.json_out, {"benchmark": "checkpoint", "rows": rows}, indent=1)
    return 0 if all(r["same_decisions"] for r in rows) else 1
