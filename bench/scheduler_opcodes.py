"""Python opcodes and Python function calls per scheduler learning cycle, by function: a load-independent
measure (sys.settrace counts, not seconds) of the cycle `oasis bench scheduler` times (next_batch(1) +
report with one new link + the Eq. 10 update), on a controller filled as the benchmark fills it.

usage (from a checkout with its .venv):
    PYTHONHASHSEED=0 .venv/bin/python -P bench/scheduler_opcodes.py POLICY [QUEUED [CYCLES]]
(another checkout: cd there and give this file's path). Defaults: 20,000 queued, 3,000 cycles.
"""

from __future__ import annotations

import collections
import random
import sys
from types import FrameType
from typing import Any


def main() -> int:
    from oasis.bench.scheduler import _url, fill
    from oasis.robot.scheduling import Discovered, FetchOutcome

    policy = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
    k = int(sys.argv[3]) if len(sys.argv) > 3 else 3_000
    rng = random.Random(7)
    ctl, nxt = fill(policy, size, rng)
    ops: collections.Counter[str] = collections.Counter()
    calls = [0]

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        calls[0] += 1
        frame.f_trace_opcodes = True
        code = frame.f_code
        name = f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}"

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                ops[name] += 1
            return local

        return local

    sys.settrace(tracer)
    for _ in range(k):
        batch = ctl.next_batch(1, 1.0, None)
        links = [Discovered(_url(nxt), "", rng.random())]
        ctl.report(FetchOutcome(batch[0], "new", rng.random() ** 3, links), 1.0)
        nxt += 1
    sys.settrace(None)
    total = sum(ops.values())
    print(f"{policy} {size} queued: {total / k:.1f} opcodes/cycle, {calls[0] / k:.2f} Python calls/cycle")
    for name, count in ops.most_common(12):
        print(f"{count / k:8.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
