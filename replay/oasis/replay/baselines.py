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
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

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
