"""Session 22 probe (docs/replay.md "Session 22: which half of the in-link mean ..."): a rank criterion for
the in-link weight. Per run of ``TRAINING``, the samples the learned weight sees in the shipped robot's first
traversal (the best link's p + a, the in-link mean, the reward; pages with two or more in-links at their
fetch); per prefix of them (16, 32, 64, 128, all) each weight's Spearman correlation of x_k = (1 - k) best +
k mean with the rewards and its line's squared error; and the first traversal with each fixed weight of
LINK_GRID (raw P over greedy-anchor's, %), to score a weight picked by either criterion.

    .venv/bin/python docs/probes/s22_rank_weight.py 0 52 > a.jsonl &
    .venv/bin/python docs/probes/s22_rank_weight.py 52 104 > b.jsonl
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any

import numpy as np

from oasis.replay.shipped import TRAINING, _prepare, baseline_ps, pct, whittle_p
from oasis.robot.scheduling import residual
from oasis.robot.scheduling.config import LINK_GRID, SHIPPED

SAMPLES: list[tuple[float, float, float]] = []
_add = residual.LinkWeight.add


def logged_add(self: residual.LinkWeight, best: float, mean: float, r: float, current: float) -> float | None:
    """LinkWeight.add, keeping the sample."""
    SAMPLES.append((best, mean, r))
    return _add(self, best, mean, r, current)


def rankdata(a: np.ndarray) -> np.ndarray:
    """Ranks from 0, ties given their mean rank."""
    order = np.argsort(a, kind="mergesort")
    ranks = np.empty(len(a))
    sa = a[order]
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and sa[j + 1] == sa[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2.0
        i = j + 1
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (NaN with fewer than 3 samples or a constant side)."""
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(rankdata(x), rankdata(y))[0, 1])


def sse(x: np.ndarray, y: np.ndarray) -> float:
    """The squared error of the least-squares line y ~ x."""
    if np.ptp(x) == 0:
        return float(((y - y.mean()) ** 2).sum())
    b = np.polyfit(x, y, 1)
    return float(((y - np.polyval(b, x)) ** 2).sum())


def main(lo: int, hi: int) -> None:
    residual.LinkWeight.add = logged_add  # type: ignore[method-assign]
    for i in range(lo, hi):
        p = _prepare(*TRAINING[i])
        ga = baseline_ps(p, ("greedy-anchor",))["greedy-anchor"]
        SAMPLES.clear()
        shipped = pct(whittle_p(p, SHIPPED, 1, None)[0], ga)
        s = np.array(SAMPLES) if SAMPLES else np.zeros((0, 3))
        row: dict[str, Any] = {"i": i, "shipped": shipped, "n": len(s)}
        for m in (16, 32, 64, 128, len(s)):
            part = s[:m]
            if len(part) < 3:
                continue
            xs = {k: (1 - k) * part[:, 0] + k * part[:, 1] for k in LINK_GRID}
            rho = {str(k): spearman(xs[k], part[:, 2]) for k in LINK_GRID}
            err = {str(k): sse(xs[k], part[:, 2]) for k in LINK_GRID}
            row["all" if m == len(s) else str(m)] = {"rho": rho, "sse": err}
        residual.LinkWeight.add = _add  # type: ignore[method-assign]
        row["fixed"] = {
            str(k): pct(whittle_p(p, replace(SHIPPED, link_learn=None, link_mean=k), 1, None)[0], ga)
            for k in LINK_GRID
        }
        residual.LinkWeight.add = logged_add  # type: ignore[method-assign]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
