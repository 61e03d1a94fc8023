"""Session 22 probe (docs/replay.md "Session 22: which half of the in-link mean ..."): greedy-anchor-mean's
key split into its two halves, and its parent half gated by the anchors, against greedy-anchor on the runs of
``TRAINING`` (first traversal, raw P, %). With k = .5 (greedy-anchor-mean's weight), B = the best link's
p + a, p*, a* its parent and anchor parts:

    full:    (1 - k) B + k mean(p + a)     (greedy-anchor-mean itself: reproduces its P to the digit)
    P:       B + k (mean(p) - p*)          (only the parent relevances averaged)
    A:       B + k (mean(a) - a*)          (only the anchor relevances averaged)
    max0.0:  P's key where no link's anchor relevance is above 0, else B (the parent mean only where no
             anchor names the topic); best0.0: the same gated on the best link's anchor a*; max0.05: on
             the links' largest anchor relevance above .05

Scratch baselines, not part of the package.

    .venv/bin/python docs/probes/s22_split_mean.py 0 52 > a.jsonl &
    .venv/bin/python docs/probes/s22_split_mean.py 52 104 > b.jsonl
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
# (name, the key's averaged part, the gate: None or (the anchor it reads, its threshold))
MODES: tuple[tuple[str, str, tuple[str, float] | None], ...] = (
    ("full", "full", None),
    ("P", "P", None),
    ("A", "A", None),
    ("max0.0", "P", ("max", 0.0)),
    ("best0.0", "P", ("best", 0.0)),
    ("max0.05", "P", ("max", 0.05)),
)


def variant(part: str, gate: tuple[str, float] | None) -> type[GreedyAnchorMeanController]:
    """greedy-anchor-mean with the key averaging ``part`` (full, P or A), optionally gated (P only)."""

    class Split(GreedyAnchorMeanController):
        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self._sp: dict[int, float] = {}
            self._sa: dict[int, float] = {}
            self._amax: dict[int, float] = {}
            self._best: dict[int, tuple[float, float]] = {}

        def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
            if ctx.parent_url is not None:
                self._sp[doc], self._sa[doc] = ctx.parent_relevance, ctx.anchor_relevance
                self._amax[doc] = ctx.anchor_relevance
                self._best[doc] = (ctx.parent_relevance, ctx.anchor_relevance)
            return super()._key_for(doc, ctx)

        def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
            if doc not in self._n:  # a seed
                return
            b, k = parent_rel + anchor_rel, ANCHOR_MEAN_WEIGHT
            if b > sum(self._best[doc]):
                self._best[doc] = (parent_rel, anchor_rel)
            tie = max(self._tie[doc], b)
            n = self._n[doc] = self._n[doc] + 1
            sp = self._sp[doc] = self._sp[doc] + parent_rel
            sa = self._sa[doc] = self._sa[doc] + anchor_rel
            amax = self._amax[doc] = max(self._amax[doc], anchor_rel)
            best_p, best_a = self._best[doc]
            if part == "A":
                primary = tie + k * (sa / n - best_a)
            elif part == "full":
                primary = (1.0 - k) * tie + k * (sp + sa) / n
            elif gate is not None and (amax if gate[0] == "max" else best_a) > gate[1]:
                primary = tie  # an anchor names the topic: the best link's key
            else:
                primary = tie + k * (sp / n - best_p)
            key = primary + TIE_WEIGHT * tie
            self._tie[doc] = tie
            if key != self.docs.key[doc]:
                self._primary[doc], self.docs.key[doc] = primary, key
                self._fringe.push(doc, key, self.docs.host_id[doc])

    return Split


def main(lo: int, hi: int) -> None:
    original = REPLAY_BASELINES["greedy-anchor-mean"]
    for i in range(lo, hi):
        p = _prepare(*TRAINING[i])
        b = baseline_ps(p, PAIR)
        row: dict[str, Any] = {"i": i, "mean": pct(b["greedy-anchor-mean"], b["greedy-anchor"])}
        for name, part, gate in MODES:
            REPLAY_BASELINES["greedy-anchor-mean"] = variant(part, gate)
            try:
                v = baseline_ps(p, PAIR)
            finally:
                REPLAY_BASELINES["greedy-anchor-mean"] = original
            row[name] = pct(v["greedy-anchor-mean"], v["greedy-anchor"])
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
