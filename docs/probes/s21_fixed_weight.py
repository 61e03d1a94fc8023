"""Session 21 probe (docs/replay.md "Session 21: the in-link weight ..."): per run of ``TRAINING``, the first
traversal of the robot as shipped and of the robot with each fixed in-link weight of LINK_GRID (not learned)
over greedy-anchor's (raw P, %), and the learned weight's checks (samples, weight in use, weight chosen, each
weight's squared error) during the shipped robot's traversal.

    .venv/bin/python docs/probes/s21_fixed_weight.py 0 48 > a.jsonl &
    .venv/bin/python docs/probes/s21_fixed_weight.py 48 96 > b.jsonl
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any

from oasis.replay.shipped import TRAINING, _prepare, baseline_ps, pct, whittle_p
from oasis.robot.scheduling import residual
from oasis.robot.scheduling.config import LINK_GRID, SHIPPED

CHECKS: list[Any] = []
_add = residual.LinkWeight.add


def logged_add(self: residual.LinkWeight, best: float, mean: float, r: float, current: float) -> float | None:
    """LinkWeight.add, noting every check (the sample count at which the weights are compared)."""
    due = self.n + 1.0 >= self._next
    k = _add(self, best, mean, r, current)
    if due:
        CHECKS.append((int(self.n), current, k, {str(w): e for w, e in self.errors().items()}))
    return k


def main(lo: int, hi: int) -> None:
    residual.LinkWeight.add = logged_add  # type: ignore[method-assign]
    for i in range(lo, hi):
        p = _prepare(*TRAINING[i])
        ga = baseline_ps(p, ("greedy-anchor",))["greedy-anchor"]
        CHECKS.clear()
        shipped = pct(whittle_p(p, SHIPPED, 1, None)[0], ga)
        checks = list(CHECKS)
        fixed = {}
        for k in LINK_GRID:
            cfg = replace(SHIPPED, link_learn=None, link_mean=k)
            fixed[str(k)] = pct(whittle_p(p, cfg, 1, None)[0], ga)
        print(json.dumps({"i": i, "shipped": shipped, "fixed": fixed, "checks": checks[:8]}), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
