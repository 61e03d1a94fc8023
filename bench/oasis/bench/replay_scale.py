"""``oasis bench replay-scale``: wall time of one full offline replay of a synthetic web of 10^5 and 10^6
pages (every reachable page fetched, m per step), for the learning controller and the BFS baseline run in
the same process (the ratio whittle / bfs is what drifts least on a shared machine)."""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

from oasis.replay.simulator import Replay
from oasis.robot.scheduling.controller import ControllerConfig, make_controller
from oasis.runtime.files import write_json_atomic
from oasis.web.synthetic import synthetic_web


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("replay-scale", help="replay time of synthetic webs of 1e5 and 1e6 pages")
    p.add_argument("--sizes", default="100000,1000000", help="pages (comma-separated)")
    p.add_argument("--policies", default="bfs,whittle:generalising")
    p.add_argument("--m", type=int, default=10, help="fetches per step")
    p.add_argument("--hosts", type=int, default=50)
    p.add_argument("--json-out", type=Path, default=None)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    rows: list[dict[str, Any]] = []
    head = ("pages", "links", "policy", "gen s", "replay s", "cpu s", "fetches/s", "vs first")
    print("{:>9} {:>10} {:<22} {:>7} {:>9} {:>7} {:>10} {:>8}".format(*head))
    for n in (int(float(s)) for s in args.sizes.split(",")):
        t0 = time.perf_counter()
        corpus = synthetic_web(f"synthetic:pages={n},hosts={args.hosts},topics=3,seed=1")
        graph = corpus.graph()
        replay = Replay(graph, graph.relevance, [int(s) for s in graph.seeds])
        gen = time.perf_counter() - t0
        steps = replay.steps_for(replay.reachable, args.m)
        base: float | None = None
        for policy in (p.strip() for p in args.policies.split(",")):
            state = policy.split(":", 1)[1] if ":" in policy else "generalising"
            ctl = make_controller(
                policy.split(":")[0], rng=random.Random(1), config=ControllerConfig(state=state)
            )
            with tqdm(total=steps, desc=f"{n} {policy}", unit="step", leave=False, mininterval=1.0) as bar:
                t1, c1 = time.perf_counter(), time.process_time()
                res = replay.run(ctl, m=args.m, steps=steps, progress=bar.update)
                secs, cpu = time.perf_counter() - t1, time.process_time() - c1
            base = secs if base is None else base
            row = {
                "pages": n,
                "links": graph.num_edges,
                "reachable": replay.reachable,
                "policy": policy,
                "generate_s": gen,
                "replay_s": secs,
                "cpu_s": cpu,
                "fetches": len(res.fetched),
                "fetches_per_s": len(res.fetched) / secs,
                "ratio_vs_first": secs / base,
                "P_static": res.P,
                "m": args.m,
            }
            rows.append(row)
            print(
                f"{n:>9} {graph.num_edges:>10} {policy:<22} {gen:>7.1f} {secs:>9.1f} {cpu:>7.1f} "
                f"{row['fetches_per_s']:>10,.0f} {row['ratio_vs_first']:>8.2f}",
                flush=True,
            )
    if args.json_out:
        write_json_atomic(args.json_out, {"benchmark": "replay-scale", "rows": rows}, indent=1)
    return 0
