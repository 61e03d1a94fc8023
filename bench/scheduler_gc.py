"""The garbage collector in the scheduler benchmark's loop: collections by generation and their CPU time over
the timed learning cycles (a ``gc.callbacks`` hook), and what one full collection of the filled controller
costs without and with ``gc.freeze()`` (scheduling.gcpolicy).

usage (from a checkout with its .venv):
    PYTHONHASHSEED=0 .venv/bin/python -P bench/scheduler_gc.py POLICY [QUEUED [CYCLES]]
(another checkout: cd there and give this file's path). Defaults: 10^6 queued, 200,000 cycles. The loop is
bench/paired.sh's (the fill of `oasis bench scheduler`, then next_batch(1) + report with one new link).
"""

from __future__ import annotations

import gc
import random
import resource
import sys
import time
from typing import Any


def main() -> int:
    from oasis.bench.scheduler import _url, fill
    from oasis.robot.scheduling import Discovered, FetchOutcome

    policy = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    k = int(sys.argv[3]) if len(sys.argv) > 3 else 200_000
    rng = random.Random(7)
    gc.collect()
    ctl, nxt = fill(policy, size, rng)
    stats = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
    start = [0.0]

    def hook(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            start[0] = time.process_time()
        else:
            row = stats[info["generation"]]
            row[0] += 1
            row[1] += time.process_time() - start[0]

    gc.callbacks.append(hook)
    cpu0 = time.process_time()
    for _ in range(k):
        batch = ctl.next_batch(1, 1.0, None)
        ctl.report(
            FetchOutcome(batch[0], "new", rng.random() ** 3, [Discovered(_url(nxt), "", rng.random())]), 1.0
        )
        nxt += 1
    cpu = time.process_time() - cpu0
    gc.callbacks.remove(hook)
    spent = sum(t for _, t in stats.values())
    print(f"{policy} at {size} queued: {k / cpu:,.0f} cycles per CPU second; collections (count, CPU s) by")
    print("  generation " + ", ".join(f"{g}: {c} / {t:.3f}" for g, (c, t) in stats.items()), end="")
    print(f"; {spent / cpu:.1%} of the CPU; frozen objects {gc.get_freeze_count()}")
    gc.unfreeze()  # (a fill that froze: undo it for the "without" figure)
    times = []
    for _ in range(2):
        t = time.process_time()
        gc.collect()
        times.append(time.process_time() - t)
    gc.freeze()
    t = time.process_time()
    gc.collect()
    frozen = time.process_time() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"  one full collection: {times[0]:.3f} / {times[1]:.3f} s CPU; after gc.freeze(): {frozen:.4f} s "
        f"({gc.get_freeze_count()} objects frozen); peak RSS {rss:.0f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
