"""Session 21 probe (docs/replay.md "Session 21: a prior of the in-link weight ..."): per run of ``TRAINING``,
greedy-anchor-mean's and the robot's first-traversal margins over greedy-anchor (%) beside statistics of the
web's link structure (and, as an upper bound no crawler has before it crawls, of the topic's relevance).

    .venv/bin/python docs/probes/s21_structure.py 0 48 > a.jsonl &
    .venv/bin/python docs/probes/s21_structure.py 48 96 > b.jsonl
"""

from __future__ import annotations

import json
import sys

import numpy as np

from oasis.replay.shipped import TRAINING, _prepare, baseline_ps, pct, whittle_p
from oasis.robot.scheduling.config import SHIPPED


def ranks(x: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(x))


def main(lo: int, hi: int) -> None:
    for i in range(lo, hi):
        p = _prepare(*TRAINING[i])
        g, reach = p.replay.graph, p.replay.reach.nonzero()[0]
        indeg = np.bincount(g.indices, minlength=len(p.replay))
        outdeg = np.diff(g.indptr)
        rel = np.asarray(p.replay.relevance)
        hubs = np.nonzero(indeg > 0.5 * len(reach))[0]
        b = baseline_ps(p, ("greedy-anchor", "greedy-anchor-mean"))
        robot = whittle_p(p, SHIPPED, 1, None)[0]
        row = {
            "i": i,
            "n": len(reach),
            "mean_vs_ga": pct(b["greedy-anchor-mean"], b["greedy-anchor"]),
            "robot_vs_ga": pct(robot, b["greedy-anchor"]),
            "outdeg": float(outdeg[reach].mean()),
            "indeg": float(indeg[reach].mean()),
            "nav": float((indeg[reach] > 0.5 * len(reach)).mean()),
            "nav_links": float(np.isin(g.indices, hubs).mean()),
            "rho_indeg_rel": float(np.corrcoef(ranks(indeg[reach]), ranks(rel[reach]))[0, 1]),
            "rel_top": float(np.sort(rel[reach])[-max(1, len(reach) // 20) :].mean()),
            "rel_mean": float(rel[reach].mean()),
        }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
