"""Small hand-made web graphs for the replay tests (node i is ``http://t/i``; ``rel`` its relevance)."""

from __future__ import annotations

import numpy as np

from oasis.web.model import WebGraph


def graph(edges: dict[int, list[int]], n: int, rel: list[float]) -> WebGraph:
    indptr = [0]
    indices: list[int] = []
    for i in range(n):
        indices += edges.get(i, [])
        indptr.append(len(indices))
    return WebGraph(
        [f"http://t/{i}" for i in range(n)],
        np.array(indptr, dtype=np.int64),
        np.array(indices, dtype=np.int32),
        np.array(rel, dtype=np.float64),
        np.array([0], dtype=np.int64),
    )
