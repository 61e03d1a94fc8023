"""``oasis bench scheduler``: request-controller throughput and memory at 10^4, 10^5, 10^6 queued URLs.

For each size n and policy, a controller is filled by a synthetic crawl (each fetch reports 10 new links
with random parent and anchor relevance on 1,000 hosts) until n URLs are queued; then K scheduling
decisions are timed, each a ``next_batch(1)`` plus a ``report`` that adds one new link (the queue stays at
n). A second timing counts pure selections: ``next_batch(100)`` calls on the filled queue with no reports
(min(K, n/2) decisions). Memory is the tracemalloc peak of building the filled controller (URL strings
included). The baseline
in the same process is a bare ``heapq`` push + pop of ``(priority, seq, int)`` tuples at the same size;
the table reports selections/s, full cycles/s (select + report + Q-update; by wall clock and by process CPU
time, which other processes on a shared machine disturb less), the split of a cycle into the time inside
``next_batch`` ("sel us") and the rest ("rep us": building the outcome and ``report``), and the ratio
selections / heapq.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import random
import time
import tracemalloc
from pathlib import Path
from typing import Any

from oasis.robot.scheduling import SHIPPED, ControllerConfig, Discovered, FetchOutcome, make_controller
from oasis.robot.scheduling.gcpolicy import freeze_long_lived
from oasis.runtime.files import write_json_atomic

POLICIES = ("whittle", "whittle:generalising", "whittle:parent", "whittle:hybrid", "greedy-parent", "bfs")


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("scheduler", help="request controller: decisions/s and memory at 1e4..1e6 queued URLs")
    p.add_argument("--sizes", default="10000,100000,1000000", help="queued URLs (comma-separated)")
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--decisions", type=int, default=50_000, help="timed decisions per run")
    p.add_argument("--politeness", action="store_true", help="pass a host_ready that blocks 1/4 of the hosts")
    p.add_argument("--json-out", type=Path, default=None)
    p.set_defaults(func=run)


def _url(i: int) -> str:
    return f"http://h{i % 1000}.example.org/docs/page-{i}.html"


def _controller(policy: str) -> Any:
    """A fresh controller, its process's garbage-collector policy applied as the robot's process applies it
    once its controller is built (robot/__main__: scheduling.gcpolicy; a fresh robot, nothing resumed)."""
    if policy == "whittle":  # the shipped robot: the residual index (SHIPPED)
        ctl = make_controller("whittle", rng=random.Random(1), config=SHIPPED)
    else:
        state = policy.split(":", 1)[1] if ":" in policy else "generalising"
        name = "whittle" if policy.startswith("whittle") else policy
        ctl = make_controller(name, rng=random.Random(1), config=ControllerConfig(state=state))
    freeze_long_lived()
    return ctl


def fill(policy: str, n: int, rng: random.Random) -> tuple[Any, int]:
    ctl = _controller(policy)
    ctl.add_seeds([_url(0)])
    nxt = 1
    while ctl.frontier_size() < n:
        batch = ctl.next_batch(1, 0.0)
        if not batch:
            break
        k = min(10, n - ctl.frontier_size() + 1)
        links = [Discovered(_url(nxt + j), "", rng.random() ** 3) for j in range(k)]
        nxt += k
        ctl.report(FetchOutcome(batch[0], "new", rng.random() ** 3, links), 0.0)
    return ctl, nxt


def heap_baseline(n: int, k: int, rng: random.Random) -> float:
    heap = [(-rng.random(), i, i) for i in range(n)]
    heapq.heapify(heap)
    seq = n
    t0 = time.perf_counter()
    for _ in range(k):
        heapq.heappop(heap)
        seq += 1
        heapq.heappush(heap, (-rng.random(), seq, seq))
    return k / (time.perf_counter() - t0)


def measure(policy: str, n: int, k: int, politeness: bool) -> dict[str, Any]:
    rng = random.Random(7)
    gc.collect()
    tracemalloc.start()
    ctl, _ = fill(policy, n, rng)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del ctl
    gc.collect()
    ctl, nxt = fill(policy, n, random.Random(7))
    ready = None
    if politeness:

        def ready(host: str) -> bool:
            return hash(host) % 4 != 0

    clock = time.perf_counter
    select_s = 0.0  # time inside next_batch; the rest of a cycle is the report (and building its outcome)
    cpu0 = time.process_time()
    t0 = clock()
    done = 0
    for _ in range(k):
        t_sel = clock()
        batch = ctl.next_batch(1, 1.0, ready)
        select_s += clock() - t_sel
        if not batch:
            break
        ctl.report(
            FetchOutcome(batch[0], "new", rng.random() ** 3, [Discovered(_url(nxt), "", rng.random())]), 1.0
        )
        nxt += 1
        done += 1
    wall = clock() - t0
    cpu = time.process_time() - cpu0
    rate = done / wall
    queued = ctl.frontier_size()
    k_sel = min(k, n // 2)
    t0 = time.perf_counter()
    picked = 0
    while picked < k_sel:
        got = ctl.next_batch(min(100, k_sel - picked), 2.0, ready)
        if not got:
            break
        picked += len(got)
    select_rate = picked / (time.perf_counter() - t0)
    del ctl
    gc.collect()
    return {
        "policy": policy,
        "queued": queued,
        "decisions_per_s": rate,
        "decisions_per_cpu_s": done / cpu if cpu > 0 else float("nan"),
        "cycle_us": 1e6 * wall / max(done, 1),
        "cycle_select_us": 1e6 * select_s / max(done, 1),
        "cycle_report_us": 1e6 * (wall - select_s) / max(done, 1),
        "selections_per_s": select_rate,
        "peak_mb": peak / 2**20,
        "bytes_per_url": peak / max(queued, 1),
    }


def run(args: argparse.Namespace) -> int:
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    rows = []
    header = (
        "policy", "queued", "select/s", "cycle/s", "cycle/cpu-s", "sel us", "rep us", "heapq/s", "ratio",
        "peak MB", "B/URL",
    )  # fmt: skip
    print("{:<22} {:>9} {:>10} {:>9} {:>11} {:>6} {:>6} {:>10} {:>6} {:>8} {:>6}".format(*header))
    for n in sizes:
        for policy in policies:
            row = measure(policy, n, args.decisions, args.politeness)
            base = heap_baseline(n, args.decisions, random.Random(3))  # right after, under the same load
            row.update(size=n, heapq_per_s=base, ratio=row["selections_per_s"] / base)
            rows.append(row)
            print(
                f"{policy:<22} {row['queued']:>9} {row['selections_per_s']:>10,.0f} "
                f"{row['decisions_per_s']:>9,.0f} {row['decisions_per_cpu_s']:>11,.0f} "
                f"{row['cycle_select_us']:>6.1f} {row['cycle_report_us']:>6.1f} "
                f"{base:>10,.0f} {row['ratio']:>6.3f} "
                f"{row['peak_mb']:>8.1f} {row['bytes_per_url']:>6.0f}",
                flush=True,
            )
    result = {
        "benchmark": "scheduler",
        "decisions": args.decisions,
        "politeness": args.politeness,
        "rows": rows,
    }
    if args.json_out:
        write_json_atomic(args.json_out, result, indent=1)
    return 0
