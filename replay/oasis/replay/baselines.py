"""Reference schedules of papers/004's evaluation, on the same graph and budget as the robot.

* ``upper``: every reachable document available at once, fetched by decreasing relevance (closed form on a
  static web, :func:`oasis.replay.metrics.upper_bound_performance`); on a changing web a true upper bound of
  M(C_t) for any schedule of m fetches per step (:meth:`oasis.replay.simulator.Replay.upper_bound_curve`:
  the t m most relevant pages that exist at t, over S_V(t)), which never counts a page before it exists.
* ``random``: a uniformly random fringe document each fetch; the mean (and spread) of many runs.
* ``bfs``, ``greedy-parent`` (practical best-first), ``greedy-oracle`` (fringe-greedy on the true
  relevance, the paper's "fringe greedy"), ``greedy-lookahead`` (an oracle that also sees the relevance of a
  fringe document's out-links: ``r(j) + lookahead_weight * sum_k r(k)``, a practical ceiling where relevant
  pages sit behind irrelevant hubs).
* ``greedy-anchor-dir`` (:class:`GreedyAnchorDirController`): greedy-anchor plus the URL directory's mean
  residual, with fixed weights: the non-learning baseline of the information the robot's directory term uses.
* ``greedy-anchor-mean`` (:class:`GreedyAnchorMeanController`): greedy-anchor whose key mixes the best link's
  parent + anchor relevance with their mean over every retrieved page linking to the document (weights .5,
  fixed): the non-learning baseline of the in-link evidence the shipped robot's estimate uses (session 7).
* ``greedy-anchor-shuffled`` (:class:`GreedyAnchorShuffledController`): greedy-anchor with its exact ties in a
  random order instead of discovery order; run ``--random-runs`` times, its spread is how much a web's
  first-traversal P depends on the order among pages this evidence cannot tell apart (session 9).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from oasis.robot.scheduling.controller import TIE_WEIGHT, GreedyAnchorController
from oasis.robot.scheduling.equations import shrunk_mean
from oasis.robot.scheduling.residual import url_directory
from oasis.robot.scheduling.state import DiscoveryContext
from oasis.web.model import WebGraph

LOOKAHEAD_WEIGHT = 0.5


def child_relevance_sums(graph: WebGraph, relevance: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``sum_{k in out(j)} r(k)`` for every node j (CSR prefix sums)."""
    cs = np.concatenate(([0.0], np.cumsum(relevance[graph.indices]))) if len(graph.indices) else np.zeros(1)
    ptr = graph.indptr
    if not len(graph.indices):
        return np.zeros(len(graph))
    return cs[ptr[1:]] - cs[ptr[:-1]]


def lookahead_scores(
    graph: WebGraph, relevance: npt.NDArray[np.float64], weight: float = LOOKAHEAD_WEIGHT
) -> npt.NDArray[np.float64]:
    """The oracle-with-lookahead priority ``r(j) + weight * sum_{k in out(j)} r(k)``."""
    if weight < 0:
        raise ValueError("lookahead weight must be >= 0")
    return relevance + weight * child_relevance_sums(graph, relevance)


def upper_order(relevance: npt.NDArray[np.float64], reach: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """Reachable nodes by decreasing relevance (ties by node id): the upper-bound schedule."""
    idx = np.flatnonzero(reach)
    return idx[np.lexsort((idx, -relevance[idx]))]


ANCHOR_DIR_SHRINK = 3.0  # pseudo-samples at 0 of greedy-anchor-dir's directory mean (fixed, not learned)


class GreedyAnchorDirController(GreedyAnchorController):
    """greedy-anchor plus a fixed rule on the pages fetched so far in this crawl: a fringe document's key is
    ``b_i + d(D)``, b_i = the best parent + anchor relevance among its links (greedy-anchor's key) and d(D)
    = the mean of ``r_j - b_j`` over the pages j fetched from the same URL directory D, shrunk towards 0 by
    :data:`ANCHOR_DIR_SHRINK` pseudo-samples (weight 1, nothing carried between crawls); every queued
    document of D is re-keyed when d(D) moves. The same tie-break as every best-first policy."""

    name = "greedy-anchor-dir"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._dir_of: dict[int, str] = {}
        self._members: dict[str, set[int]] = {}  # directory -> documents queued in it (pruned lazily)
        self._stats: dict[str, tuple[float, float]] = {}  # directory -> (n, mean r - b)

    def _d(self, directory: str) -> float:
        n, mean = self._stats.get(directory, (0.0, 0.0))
        return shrunk_mean(mean, n, ANCHOR_DIR_SHRINK)

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        key = super()._key_for(doc, ctx)
        if ctx.parent_url is None:
            return key
        directory = url_directory(ctx.url)
        self._dir_of[doc] = directory
        self._members.setdefault(directory, set()).add(doc)
        return key + self._d(directory)

    def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
        docs = self.docs
        directory = self._dir_of.get(doc)
        if directory is None:  # a seed
            return
        primary = max(self._primary[doc], self._rediscovered_primary(doc, parent_rel, anchor_rel))
        tie = max(self._tie[doc], parent_rel + anchor_rel)
        key = primary + self._d(directory) + TIE_WEIGHT * tie
        if key > docs.key[doc]:
            self._primary[doc], self._tie[doc], docs.key[doc] = primary, tie, key
            self._fringe.push(doc, key, docs.host_id[doc])

    def _learn(self, doc: int, was_fringe: bool, g: float, children: list[int]) -> None:
        directory = self._dir_of.get(doc)
        if not was_fringe or directory is None:
            return
        n, mean = self._stats.get(directory, (0.0, 0.0))
        n += 1.0
        self._stats[directory] = (n, mean + (g - self._primary[doc] - mean) / n)
        d, docs, fringe = self._d(directory), self.docs, self._fringe
        queued = self._members[directory] = {i for i in self._members[directory] if i in fringe}
        for i in queued:
            docs.key[i] = self._primary[i] + d + TIE_WEIGHT * self._tie[i]
            fringe.push(i, docs.key[i], docs.host_id[i])


ANCHOR_MEAN_WEIGHT = 0.5  # greedy-anchor-mean's fixed weight of the mean link (the shipped robot's link_mean)


class GreedyAnchorMeanController(GreedyAnchorController):
    """greedy-anchor with every in-link counted: a fringe document's key is ``(1 - k) max_l (p_l + a_l) +
    k mean_l (p_l + a_l)`` over the retrieved pages l linking to it (k = :data:`ANCHOR_MEAN_WEIGHT`, not
    learned), re-keyed at every new link, so a page linked from many pages (a site's navigation) is not
    ranked by the best of many draws. The same tie-break as every best-first policy."""

    name = "greedy-anchor-mean"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._sum: dict[int, float] = {}  # the sum of p + a over the document's links (the best is ``_tie``)
        self._n: dict[int, int] = {}

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        if ctx.parent_url is not None:
            self._sum[doc], self._n[doc] = ctx.parent_relevance + ctx.anchor_relevance, 1
        return super()._key_for(doc, ctx)

    def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
        if doc not in self._n:  # a seed
            return
        b = parent_rel + anchor_rel
        tie = max(self._tie[doc], b)  # the best link's p + a: greedy-anchor's key and the shared tie-break
        total = self._sum[doc] = self._sum[doc] + b
        n = self._n[doc] = self._n[doc] + 1
        k = ANCHOR_MEAN_WEIGHT
        primary = (1.0 - k) * tie + k * total / n
        key = primary + TIE_WEIGHT * tie
        docs = self.docs
        self._tie[doc] = tie
        if key != docs.key[doc]:
            self._primary[doc], docs.key[doc] = primary, key
            self._fringe.push(doc, key, docs.host_id[doc])


TIE_SHUFFLE = 1e-3  # greedy-anchor-shuffled's jitter in the tie-break term (x TIE_WEIGHT: ~1e-10 of the key)


class GreedyAnchorShuffledController(GreedyAnchorController):
    """greedy-anchor whose exact ties are broken at random: a fringe document's tie-break term is its best
    ``p + a`` plus a uniform draw in ``[0, TIE_SHUFFLE)`` made once per document (the controller's rng), so
    documents of equal ``p + a`` -- the siblings of one parent with no topic words in their anchors, most
    links of a documentation page -- go in a random order instead of the order they were discovered in, and
    documents of different ``p + a`` keep greedy-anchor's order (a primary difference below ~1e-10 aside).
    Run many times (``--random-runs``), the spread of its P measures how much a first traversal's P depends on
    choices this evidence does not inform: the noise floor a learner's margin over greedy-anchor is read
    against."""

    name = "greedy-anchor-shuffled"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._jitter = self.docs.column("d")

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        key = super()._key_for(doc, ctx)
        if ctx.parent_url is None:
            return key
        self._jitter[doc] = jitter = self.rng.random() * TIE_SHUFFLE
        self._tie[doc] += jitter
        return key + TIE_WEIGHT * jitter

    def _rediscovered_tie(self, doc: int, parent_rel: float, anchor_rel: float) -> float:
        return parent_rel + anchor_rel + self._jitter[doc]  # the document's own draw: one order per document


# the replay's own best-first baselines (not robot policies), by policy name
REPLAY_BASELINES: dict[str, type[GreedyAnchorController]] = {
    "greedy-anchor-dir": GreedyAnchorDirController,
    "greedy-anchor-mean": GreedyAnchorMeanController,
    "greedy-anchor-shuffled": GreedyAnchorShuffledController,
}
