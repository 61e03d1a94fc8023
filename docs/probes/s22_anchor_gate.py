"""Session 22 probe (docs/replay.md "Session 22: which half of the in-link mean ..."): greedy-anchor-mean's
parent mean applied only where no link's anchor names the topic. Per run of ``TRAINING``, the first traversal
(raw P, %) over greedy-anchor's of greedy-anchor-mean and of the gated key ``B + k (mean(p) - p*)`` if the
gate's anchor relevance is at most ``thr``, else ``B`` (B the best link's p + a, p* its parent part, k = .5;
the gate: the largest anchor relevance among the page's links, ``max``, or the best link's, ``best``).
Scratch baselines, not part of the package.

    .venv/bin/python docs/probes/s22_anchor_gate.py 0 52 > a.jsonl &
    .venv/bin/python docs/probes/s22_anchor_gate.py 52 104 > b.jsonl
"""

from __future__ import annotations

import json
import sys
from typing import Any

from oasis.replay.baselines import ANCHOR_MEAN_WEIGHT, REPLAY_BASELINES, GreedyAnchorMeanController
from oasis.replay.shipped import TRAINING, _prepare, baseline_ps, pct
from oasis.robot.scheduling.controller import TIE_WEIGHT
from oasis.robot.scheduling.state import DiscoveryContext

PAIR = ("greedy-anchor", "greedy-anchor-mean")
GATES = (("max", 0.0), ("best", 0.0), ("max", 0.05))


def variant(gate: str, thr: float) -> type[GreedyAnchorMeanController]:
    """greedy-anchor-mean with the parent mean gated by the anchors' relevance."""

    class Gated(GreedyAnchorMeanController):
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self._sp: dict[int, float] = {}
            self._amax: dict[int, float] = {}
            self._best: dict[int, tuple[float, float]] = {}

        def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
            if ctx.parent_url is not None:
                self._sp[doc], self._amax[doc] = ctx.parent_relevance, ctx.anchor_relevance
                self._best[doc] = (ctx.parent_relevance, ctx.anchor_relevance)
            return super()._key_for(doc, ctx)

        def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
            if doc not in self._n:  # a seed
                return
            b = parent_rel + anchor_rel
            if b > sum(self._best[doc]):
                self._best[doc] = (parent_rel, anchor_rel)
            tie = max(self._tie[doc], b)
            n = self._n[doc] = self._n[doc] + 1
            sp = self._sp[doc] = self._sp[doc] + parent_rel
            amax = self._amax[doc] = max(self._amax[doc], anchor_rel)
            best_p, best_a = self._best[doc]
            shown = amax if gate == "max" else best_a
            primary = tie + (ANCHOR_MEAN_WEIGHT * (sp / n - best_p) if shown <= thr else 0.0)
            key = primary + TIE_WEIGHT * tie
            self._tie[doc] = tie
            if key != self.docs.key[doc]:
                self._primary[doc], self.docs.key[doc] = primary, key
                self._fringe.push(doc, key, self.docs.host_id[doc])

    return Gated


def main(lo: int, hi: int) -> None:
    original = REPLAY_BASELINES["greedy-anchor-mean"]
    for i in range(lo, hi):
        p = _prepare(*TRAINING[i])
        b = baseline_ps(p, PAIR)
        row: dict[str, Any] = {"i": i, "mean": pct(b["greedy-anchor-mean"], b["greedy-anchor"])}
        for gate, thr in GATES:
            REPLAY_BASELINES["greedy-anchor-mean"] = variant(gate, thr)
            try:
                v = baseline_ps(p, PAIR)
            finally:
                REPLAY_BASELINES["greedy-anchor-mean"] = original
            row[f"{gate}{thr}"] = pct(v["greedy-anchor-mean"], v["greedy-anchor"])
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
