"""Session 22 probe (docs/replay.md "Session 22: the next crawl's in-link weight ..."): per run of
``TRAINING``, after one traversal of the robot as shipped, its second traversal (raw P over greedy-anchor's
first, %) as shipped and with each fixed in-link weight of LINK_GRID (the first traversal's table carried,
``link_learn`` off), the weight least squares picks on *all* of the first traversal's samples (``full``: the
learned weight's criterion without its early stop), and per weight the non-learning greedy-anchor-mean's
first traversal of the whole web (``base``: the replay of a web known after one crawl).

    .venv/bin/python docs/probes/s22_next_weight.py 0 52 > a.jsonl &
    .venv/bin/python docs/probes/s22_next_weight.py 52 104 > b.jsonl
"""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import replace
from typing import Any

from oasis.replay import baselines
from oasis.replay.experiment import Experiment, ExperimentConfig, Prepared
from oasis.replay.shipped import TRAINING, _prepare, baseline_ps, pct
from oasis.robot.scheduling import residual
from oasis.robot.scheduling.config import LINK_GRID, SHIPPED, ControllerConfig
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.residual import start_table

MADE: list[residual.LinkWeight] = []
_init = residual.LinkWeight.__init__


def noted_init(self: residual.LinkWeight, config: Any) -> None:
    """LinkWeight.__init__, keeping the instance (its sums hold every sample of the traversal)."""
    _init(self, config)
    MADE.append(self)


def one(p: Prepared, cfg: ControllerConfig, q: QTable) -> float:
    """One traversal's raw P of the robot with ``cfg``, learning in ``q``."""
    e = Experiment(
        p, ExperimentConfig(policies=("whittle",), traversals=1, controller=cfg), q_tables={"whittle": q}
    )
    return float(e.run()["policies"]["whittle"]["P"][0])


def main(lo: int, hi: int) -> None:
    residual.LinkWeight.__init__ = noted_init  # type: ignore[method-assign]
    for i in range(lo, hi):
        p = _prepare(*TRAINING[i])
        ga = baseline_ps(p, ("greedy-anchor",))["greedy-anchor"]
        q = start_table(SHIPPED)
        MADE.clear()
        p1 = one(p, SHIPPED, q)
        errors = MADE[-1].errors()
        full = min(errors, key=lambda k: (errors[k], k))
        row: dict[str, Any] = {"i": i, "t1": pct(p1, ga), "n": MADE[-1].n, "full": full}
        row["t2_shipped"] = pct(one(p, SHIPPED, copy.deepcopy(q)), ga)
        row["t2"] = {
            str(k): pct(one(p, replace(SHIPPED, link_learn=None, link_mean=k), copy.deepcopy(q)), ga)
            for k in LINK_GRID
        }
        base = {}
        for k in LINK_GRID:
            baselines.ANCHOR_MEAN_WEIGHT = k
            base[str(k)] = pct(baseline_ps(p, ("greedy-anchor-mean",))["greedy-anchor-mean"], ga)
        row["base"] = base
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
