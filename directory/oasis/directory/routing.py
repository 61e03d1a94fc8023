"""Resource selection: rank engines for a query from their summaries with CORI.

CORI is from Callan, Lu & Croft, "Searching Distributed Collections with Inference Networks" (SIGIR 1995),
in the form of Callan, "Distributed Information Retrieval" (2000), Eqs. for T, I and p(r_k|c_i):

    T = df / (df + 50 + 150 * cw / avg_cw)
    I = log((|C| + 0.5) / cf) / log(|C| + 1.0)
    p(r_k | c_i) = b + (1 - b) * T * I,   b = 0.4

where df is the number of documents of collection c_i containing term r_k, cw the number of words in c_i,
avg_cw the mean of cw over the collections, |C| the number of collections and cf the number of collections
containing r_k. A query's belief is the mean of p(r_k | c_i) over its terms (the #sum operator).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from oasis.directory.analysis import analyse
from oasis.directory.registry import EngineRecord

DEFAULT_BELIEF = 0.4  # b in CORI


@dataclass(frozen=True, kw_only=True)
class Routed:
    name: str
    address: str
    score: float


@dataclass(frozen=True, kw_only=True)
class Route:
    engines: tuple[Routed, ...]
    omitted: tuple[str, ...] = ()  # engines that may hold matches but were ranked beyond k
    skipped_engines: tuple[Routed, ...] = ()  # live engines that share no query term (score 0), by name

    @property
    def skipped(self) -> tuple[str, ...]:
        """The names of the skipped engines."""
        return tuple(e.name for e in self.skipped_engines)


def cori_t(df: int, cw: int, avg_cw: float) -> float:
    # CORI T (Callan et al. 1995): df / (df + 50 + 150 * cw / avg_cw)
    if df < 0 or cw < 0 or avg_cw < 0:
        raise ValueError("df, cw and avg_cw must be non-negative")
    ratio = cw / avg_cw if avg_cw > 0 else 1.0
    return df / (df + 50.0 + 150.0 * ratio)


def cori_i(n_collections: int, cf: int) -> float:
    # CORI I (Callan et al. 1995): log((|C| + 0.5) / cf) / log(|C| + 1.0)
    if n_collections < 1 or not 1 <= cf <= n_collections:
        raise ValueError(f"need 1 <= cf <= |C|, got cf={cf}, |C|={n_collections}")
    return math.log((n_collections + 0.5) / cf) / math.log(n_collections + 1.0)


def cori_belief(t: float, i: float, b: float = DEFAULT_BELIEF) -> float:
    # CORI p(r_k | c_i) = b + (1 - b) * T * I (Callan et al. 1995), b = 0.4
    return b + (1.0 - b) * t * i


def route(query: str, engines: Sequence[EngineRecord], k: int = 0) -> Route:
    """Rank ``engines`` for ``query`` by CORI belief; engines sharing no query term are skipped.

    ``k`` > 0 keeps the best k. When no engine shares a term, every engine is routed (largest first).
    A term counts as shared when it is in an engine's term statistics, in its analysed topic keywords, or
    in its vocabulary filter (a term without statistics contributes the default belief only): a summary
    cut to its top terms never turns "holds the term" into "shares no term" (issue 15, item 7). Engines
    ranked beyond ``k`` are returned as ``omitted``: they were not asked and the answer is partial.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    terms = analyse(query)
    n = len(engines)
    avg_cw = sum(e.summary.total_terms for e in engines) / n if n else 0.0
    cf = {t: sum(1 for e in engines if t in e.summary.terms) for t in terms}
    ranked: list[Routed] = []
    skipped: list[Routed] = []
    for e in engines:
        if not terms or not any(e.summary.may_hold(t) for t in terms):
            skipped.append(Routed(name=e.name, address=e.address, score=0.0))
            continue
        beliefs = []
        for t in terms:
            stats = e.summary.terms.get(t)
            if stats is None or stats.df == 0:
                beliefs.append(DEFAULT_BELIEF)
            else:
                tt = cori_t(stats.df, e.summary.total_terms, avg_cw)
                beliefs.append(cori_belief(tt, cori_i(n, cf[t])))
        ranked.append(Routed(name=e.name, address=e.address, score=sum(beliefs) / len(beliefs)))
    if terms and not ranked and skipped:
        # No summary lists any query term. Summaries hold only an engine's most frequent terms, so absence
        # is weak evidence: rather than answer from no engine at all, rank every engine by its size.
        by_size = sorted(engines, key=lambda e: (-e.summary.documents, e.name))
        ranked = [Routed(name=e.name, address=e.address, score=DEFAULT_BELIEF) for e in by_size]
        omitted = tuple(sorted(r.name for r in ranked[k:])) if k else ()
        return Route(engines=tuple(ranked[:k] if k else ranked), omitted=omitted)
    ranked.sort(key=lambda r: (-r.score, r.name))
    omitted = tuple(sorted(r.name for r in ranked[k:])) if k else ()
    if k:
        ranked = ranked[:k]
    return Route(
        engines=tuple(ranked), omitted=omitted, skipped_engines=tuple(sorted(skipped, key=lambda e: e.name))
    )
