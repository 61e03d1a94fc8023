"""Session 21 probe (docs/replay.md "Session 21: a prior of the in-link weight ..."): greedy-anchor-mean with
each in-link weighted by its parent's out-degree, or without hub parents, against greedy-anchor on the runs
of ``TRAINING`` (first traversal, raw P, %). Scratch baselines, not part of the package.

    .venv/bin/python docs/probes/s21_hub_mean.py 0 48 > a.jsonl &
    .venv/bin/python docs/probes/s21_hub_mean.py 48 96 > b.jsonl
"""

from __future__ import annotations

import json
import sys
from typing import Any

import oasis.replay.experiment as experiment
from oasis.replay.baselines import ANCHOR_MEAN_WEIGHT, REPLAY_BASELINES
from oasis.replay.experiment import Experiment, ExperimentConfig
from oasis.replay.shipped import TRAINING, _prepare, pct
from oasis.robot.scheduling.controller import TIE_WEIGHT, GreedyAnchorController
from oasis.robot.scheduling.interface import FetchOutcome
from oasis.robot.scheduling.state import DiscoveryContext


def weighted_mean(beta: float, cap: int | None) -> type[GreedyAnchorController]:
    """greedy-anchor-mean whose mean weighs a link 1 / out-degree ** beta (0 above ``cap`` links)."""

    class Weighted(GreedyAnchorController):
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self._sum: dict[int, float] = {}
            self._w: dict[int, float] = {}
            self._out = 1

        def report(self, outcome: FetchOutcome, now: float) -> list[str]:
            self._out = max(1, len(outcome.links))  # the links of the page being reported: the parent's
            return super().report(outcome, now)

        def _weight(self) -> float:
            return 1e-9 if cap is not None and self._out > cap else 1.0 / self._out**beta

        def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
            if ctx.parent_url is not None:
                w = self._weight()
                self._sum[doc], self._w[doc] = w * (ctx.parent_relevance + ctx.anchor_relevance), w
            return super()._key_for(doc, ctx)

        def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
            if doc not in self._w:  # a seed
                return
            b, w = parent_rel + anchor_rel, self._weight()
            tie = max(self._tie[doc], b)
            total = self._sum[doc] = self._sum[doc] + w * b
            weights = self._w[doc] = self._w[doc] + w
            primary = (1.0 - ANCHOR_MEAN_WEIGHT) * tie + ANCHOR_MEAN_WEIGHT * total / weights
            key = primary + TIE_WEIGHT * tie
            self._tie[doc] = tie
            if key != self.docs.key[doc]:
                self._primary[doc], self.docs.key[doc] = primary, key
                self._fringe.push(doc, key, self.docs.host_id[doc])

    return Weighted


VARIANTS = {"w1": weighted_mean(1.0, None), "w05": weighted_mean(0.5, None)}
VARIANTS |= {"cap100": weighted_mean(0.0, 100), "cap50": weighted_mean(0.0, 50)}


def main(lo: int, hi: int) -> None:
    REPLAY_BASELINES.update(VARIANTS)
    experiment.BASELINES = (*experiment.BASELINES, *VARIANTS)  # type: ignore[assignment]  # names it accepts
    policies = ("greedy-anchor", "greedy-anchor-mean", *VARIANTS)
    cfg = ExperimentConfig(policies=policies, traversals=1)
    for i in range(lo, hi):
        pol = Experiment(_prepare(*TRAINING[i]), cfg).run()["policies"]
        ps = {name: float(pol[name]["P"][0]) for name in policies}
        ga = ps.pop("greedy-anchor")
        print(json.dumps({"i": i, **{name: pct(p, ga) for name, p in ps.items()}}), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
