"""The in-link weight the next crawl of a web starts with, from a replay of the web this crawl fetched
(``link_replay``; docs/replay.md "Session 22").

The residual index mixes a fringe page's best in-link with the mean of its in-links at a weight k
(``link_mean``). Which k orders a web best is the topic's, and nothing seen early in a first crawl says which
(session 21). Once a crawl has fetched the web, it knows that web: each fetched page's relevance and its links
with their anchors' relevance (:class:`KnownWeb`). :func:`replay_weights` then crawls that known web once per
weight of a grid with the robot's own index frozen at that weight (the crawl's table, no learning: the
calibration, c(x) and d(D) it has learned), from the crawl's seeds, inside the fetched pages only, and scores
each order by the area under its relevance curve (the sum over the fetches of the relevance fetched so far:
the static web's P for one fetch per step, up to the total). The best weight, if it beats the current one by
the ``link_replay`` margin, is the one the *next* crawl of this web starts with and holds: a memory of a web
already crawled, reported apart from what generalises to a new web (``FEATURES_ONLY``); the crawl that learned
it keeps its own weight (a weight chosen on part of a crawl and used at once lost more runs than it won in
session 21).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence

from oasis.robot.scheduling.interface import Discovered, FetchOutcome, RequestController


class KnownWeb:
    """The pages a crawl has fetched, each with its relevance and its links (target page, anchor relevance);
    pages are the controller's document numbers.

    Kept flat, as the crawl's own tables are: one position per page (``_pos``) into typed arrays of
    relevance and link offsets, and the links of every page one after another in two typed arrays (targets,
    anchors). A page costs a dict entry and 16 bytes plus 16 bytes a link, where a list of (target, anchor)
    tuples cost about 110 bytes a link and left the garbage collector a tuple per link to walk."""

    def __init__(self) -> None:
        self._pos: dict[int, int] = {}  # doc -> its position in _rel and _lo
        self._rel = array("d")
        self._lo = array("q", [0])  # page i's links are _to[_lo[i]:_lo[i + 1]]
        self._to = array("q")
        self._an = array("d")
        self.seeds: list[int] = []
        self.chosen_at = 0  # pages known at the last choice (0: none yet)
        self.scores: dict[float, float] = {}  # each weight's score at the last choice

    def __len__(self) -> int:
        return len(self._pos)

    def __contains__(self, doc: object) -> bool:
        return doc in self._pos

    def relevance(self, doc: int) -> float:
        """A fetched page's relevance (0 for a page never fetched)."""
        i = self._pos.get(doc)
        return 0.0 if i is None else self._rel[i]

    def links(self, doc: int) -> Iterable[tuple[int, float]]:
        """A fetched page's links as recorded (none for a page never fetched)."""
        i = self._pos.get(doc)
        if i is None:
            return ()
        lo, hi = self._lo[i], self._lo[i + 1]
        return zip(self._to[lo:hi], self._an[lo:hi], strict=True)

    def add(self, doc: int, relevance: float, links: Iterable[tuple[int, float]], seed: bool = False) -> None:
        """Record a fetched page (once: a page fetched again keeps its first record)."""
        if doc in self._pos:
            return
        self._pos[doc] = len(self._rel)
        self._rel.append(relevance)
        to, an = self._to, self._an
        for target, anchor in links:
            to.append(target)
            an.append(anchor)
        self._lo.append(len(to))
        if seed:
            self.seeds.append(doc)

    def due(self, minimum: int, growth: float = 1.1) -> bool:
        """Whether a choice is worth making now: ``minimum`` pages known, and ``growth`` x the pages known at
        the last choice (a crawl whose fringe empties again and again replays the web a bounded number of
        times)."""
        n = len(self._pos)
        return n >= minimum and n >= growth * self.chosen_at and bool(self.seeds)

    def choose(self, scores: Mapping[float, float], default: float, margin: float) -> float:
        """The weight with the best score (ties: the one nearest ``default``) if that score exceeds
        ``default``'s by the fraction ``margin``, else ``default``; notes the scores and the pages known now
        (:meth:`due`)."""
        self.scores, self.chosen_at = dict(scores), len(self._pos)
        best = max(scores, key=lambda k: (scores[k], -abs(k - default)))
        return best if scores[best] > (1.0 + margin) * scores[default] else default


def replay_score(
    ctl: RequestController, known: KnownWeb, urls: Sequence[str], ids: Mapping[str, int]
) -> float:
    """Crawl the known web with ``ctl`` from its seeds, one fetch per step, links to pages never fetched left
    out; the sum over the fetches of the relevance fetched so far."""
    ctl.add_seeds([urls[s] for s in known.seeds])
    cum = score = 0.0
    step = 0
    while batch := ctl.next_batch(1, float(step)):
        step += 1
        url = batch[0]
        doc = ids[url]
        r = known.relevance(doc)
        found = [Discovered(urls[c], "", a) for c, a in known.links(doc) if c in known]
        ctl.report(FetchOutcome(url, "new", r, found), float(step))
        cum += r
        score += cum
    return score


def replay_weights(
    frozen: Callable[[float], RequestController],
    known: KnownWeb,
    urls: Sequence[str],
    ids: Mapping[str, int],
    weights: Sequence[float],
) -> dict[float, float]:
    """Each weight's :func:`replay_score` with the controller ``frozen(weight)``."""
    return {k: replay_score(frozen(k), known, urls, ids) for k in weights}
