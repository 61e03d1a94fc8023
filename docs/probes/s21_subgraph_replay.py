"""Session 21 probe (docs/replay.md "Session 21: the in-link weight ..."): choose the in-link weight k by
replaying each k on the part of the web fetched so far. A best-first crawler keyed ``(1 - k) best + k mean``
of the in-links' parent + anchor relevance (greedy-anchor-mean's key, no learning; k = 0 is greedy-anchor and
reproduces its P) is run per run of ``TRAINING``: ``full`` -- each fixed k on the whole web; ``sub<f>`` --
each k replayed on the subgraph of the first fraction f of k = .5's fetches (P on that subgraph); ``c<...>``
-- k = .5, re-chosen at the given fractions of the crawl by the subgraph replay, over greedy-anchor's P (%).

    .venv/bin/python docs/probes/s21_subgraph_replay.py 0 48 > a.jsonl &
    .venv/bin/python docs/probes/s21_subgraph_replay.py 48 96 > b.jsonl
"""

from __future__ import annotations

import heapq
import json
import sys
from collections.abc import Sequence

from oasis.replay.shipped import TRAINING, _prepare

KS = (0.0, 0.25, 0.5, 0.75, 1.0)
TIE = 1e-7  # the shared tie-break weight on the best link


class Crawl:
    """One best-first crawl of a replayed web (m = 1, static), optionally inside ``allowed`` pages."""

    def __init__(
        self, indptr: list[int], indices: Sequence[int], anchor: list[float], rel: list[float]
    ) -> None:
        self.indptr, self.indices, self.anchor, self.rel = indptr, indices, anchor, rel

    def run(
        self, seed: int, k: float, allowed: set[int] | None = None, checks: Sequence[int] = ()
    ) -> tuple[list[int], list[float]]:
        """The fetch order, and the weights chosen at the fetch counts ``checks`` (by :meth:`choose`)."""
        best: dict[int, float] = {}
        tot: dict[int, float] = {}
        cnt: dict[int, int] = {}
        key: dict[int, float] = {seed: float("inf")}
        heap: list[tuple[float, int, int]] = [(-float("inf"), 0, seed)]
        done: set[int] = set()
        order: list[int] = []
        marks, chosen, seq, k0 = sorted(checks), [], 0, k

        def value(c: int) -> float:
            return (1 - k) * best[c] + k * tot[c] / cnt[c] + TIE * best[c]

        while heap:
            neg, _s, d = heapq.heappop(heap)
            if d in done or -neg != key.get(d):
                continue
            done.add(d)
            order.append(d)
            for pos in range(self.indptr[d], self.indptr[d + 1]):
                c = int(self.indices[pos])
                if c in done or (allowed is not None and c not in allowed):
                    continue
                b = self.rel[d] + self.anchor[pos]
                if c in best:
                    best[c], tot[c], cnt[c] = max(best[c], b), tot[c] + b, cnt[c] + 1
                else:
                    best[c], tot[c], cnt[c] = b, b, 1
                v = value(c)
                if key.get(c) != v:
                    key[c], seq = v, seq + 1
                    heapq.heappush(heap, (-v, seq, c))
            if marks and len(order) == marks[0]:
                marks.pop(0)
                new = self.choose(seed, set(order), k0)
                chosen.append(new)
                if new != k:
                    k, heap = new, []
                    for c in best:
                        if c not in done:
                            key[c], seq = value(c), seq + 1
                            heap.append((-key[c], seq, c))
                    heapq.heapify(heap)
        return order, chosen

    def p(self, order: list[int], total: float) -> float:
        cum = s = 0.0
        for d in order:
            cum += self.rel[d]
            s += cum / total
        return s

    def on_subgraph(self, seed: int, pages: set[int]) -> dict[float, float]:
        total = sum(self.rel[d] for d in pages) or 1.0
        return {k: self.p(self.run(seed, k, allowed=pages)[0], total) for k in KS}

    def choose(self, seed: int, pages: set[int], default: float) -> float:
        scores = self.on_subgraph(seed, pages)
        return max(KS, key=lambda k: (scores[k], -abs(k - default)))


def main(lo: int, hi: int) -> None:
    for i in range(lo, hi):
        replay = _prepare(*TRAINING[i]).replay
        g = replay.graph
        crawl = Crawl(
            g.indptr.tolist(), g.indices.tolist(), replay.anchor or [0.0] * len(g.indices), replay.rel_list
        )
        seed, total, n = replay.seeds[0], replay.total_relevance, replay.reachable
        full = {k: crawl.p(crawl.run(seed, k)[0], total) for k in KS}
        row: dict[str, object] = {"i": i, "n": n, "full": {str(k): v for k, v in full.items()}}
        base = crawl.run(seed, 0.5)[0]
        for f in (0.05, 0.1, 0.25, 0.5):
            sub = crawl.on_subgraph(seed, set(base[: max(5, int(f * n))]))
            row[f"sub{f}"] = {str(k): v for k, v in sub.items()}
        for name, fractions in (("c10", (0.1,)), ("c25", (0.25,)), ("c10_25_50", (0.1, 0.25, 0.5))):
            order, chosen = crawl.run(seed, 0.5, checks=[int(f * n) for f in fractions])
            row[name] = [crawl.p(order, total) / full[0.0] * 100.0 - 100.0, chosen]
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
