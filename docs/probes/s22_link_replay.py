"""Session 22 probe (docs/replay.md "Session 22: the next crawl's in-link weight ..."): the replayed
in-link weight chosen with greedy-anchor-mean's non-learning key (not kept; the robot's own frozen index is
the form that ships). On abb50d1 with ``docs/probes/s22_link_replay.patch`` applied, per run of ``TRAINING``
ten traversals of the robot as shipped then and with ``link_replay`` at three margins (raw P per traversal
over greedy-anchor's first, %, as served).

    git checkout abb50d1 && git apply docs/probes/s22_link_replay.patch
    .venv/bin/python docs/probes/s22_link_replay.py 0 52 > a.jsonl &
    .venv/bin/python docs/probes/s22_link_replay.py 52 104 > b.jsonl
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any

from oasis.replay.shipped import TRAINING, _prepare, baseline_ps, pct, whittle_p
from oasis.robot.scheduling.config import SHIPPED

VARIANTS: dict[str, dict[str, Any]] = {
    "shipped": {},
    "m0": {"link_replay": 0.0},
    "m005": {"link_replay": 0.005},
    "m02": {"link_replay": 0.02},
    "nodir": {"dir_weight": 0.0},
    "m0_nodir": {"link_replay": 0.0, "dir_weight": 0.0},
}


def main(lo: int, hi: int) -> None:
    for i in range(lo, hi):
        p = _prepare(*TRAINING[i])
        ga = baseline_ps(p, ("greedy-anchor",))["greedy-anchor"]
        row: dict[str, Any] = {"i": i}
        for name, over in VARIANTS.items():
            row[name] = [pct(x, ga) for x in whittle_p(p, replace(SHIPPED, **over), 10, None)]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
