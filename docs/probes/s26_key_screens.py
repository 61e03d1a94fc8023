"""Session 26 screens (docs/replay.md "Session 26: three non-learning screens of the key"): greedy-anchor's
key with an interaction term, with the parent relevance weighted apart from the anchor's, and
greedy-anchor-mean with the mean over the k best in-links only, each against greedy-anchor on the runs of
``TRAINING`` (first traversal, raw P, %). Scratch baselines, not part of the package.

    .venv/bin/python docs/probes/s26_key_screens.py 0 70 > a.jsonl &
    .venv/bin/python docs/probes/s26_key_screens.py 70 140 > b.jsonl
"""

from __future__ import annotations

import heapq
import json
import sys
from typing import Any

import oasis.replay.experiment as experiment
from oasis.replay.baselines import ANCHOR_MEAN_WEIGHT, REPLAY_BASELINES
from oasis.replay.experiment import Experiment, ExperimentConfig
from oasis.replay.shipped import TRAINING, _prepare, pct
from oasis.robot.scheduling.controller import TIE_WEIGHT, GreedyAnchorController
from oasis.robot.scheduling.state import DiscoveryContext


def weighted(lam: float, wp: float = 1.0) -> type[GreedyAnchorController]:
    """greedy-anchor whose key is ``wp p + a + lam p a`` (its best link's)."""

    class Weighted(GreedyAnchorController):
        def _primary_for(self, doc: int, ctx: DiscoveryContext) -> float:
            p, a = ctx.parent_relevance, ctx.anchor_relevance
            return wp * p + a + lam * p * a

        def _rediscovered_primary(self, doc: int, parent_rel: float, anchor_rel: float) -> float:
            return wp * parent_rel + anchor_rel + lam * parent_rel * anchor_rel

    return Weighted


def top_mean(k: int, w: float = ANCHOR_MEAN_WEIGHT) -> type[GreedyAnchorController]:
    """greedy-anchor-mean whose mean is over the ``k`` best in-links' p + a only."""

    class TopMean(GreedyAnchorController):
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self._links: dict[int, list[float]] = {}

        def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
            if ctx.parent_url is not None:
                self._links[doc] = [ctx.parent_relevance + ctx.anchor_relevance]
            return super()._key_for(doc, ctx)

        def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
            if doc not in self._links:  # a seed
                return
            b = parent_rel + anchor_rel
            self._links[doc].append(b)
            tie = max(self._tie[doc], b)
            top = heapq.nlargest(k, self._links[doc])
            primary = (1.0 - w) * tie + w * sum(top) / len(top)
            key = primary + TIE_WEIGHT * tie
            self._tie[doc] = tie
            if key != self.docs.key[doc]:
                self._primary[doc], self.docs.key[doc] = primary, key
                self._fringe.push(doc, key, self.docs.host_id[doc])

    return TopMean


VARIANTS = {"x1": weighted(1.0), "x4": weighted(4.0), "xm1": weighted(-1.0)}
VARIANTS |= {f"p{wp:g}": weighted(0.0, wp) for wp in (2.0, 0.5, 0.25, 0.1, 0.03)}
VARIANTS |= {f"top{k}": top_mean(k) for k in (2, 3, 5)}


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
