"""Result merging: normalise each engine's scores, combine, dedupe by canonical URL.

Raw BM25F scores of different engines are not comparable (each engine has its own idf and length
statistics), so each engine's scores are normalised before merging. Two normalisations are offered:

* ``max``: s / s_max of the engine (s_max is the engine's best score for the query), a score in [0, 1];
* ``cori``: the CORI merge (Callan, "Distributed Information Retrieval", 2000; Si & Callan 2002):
  D' = (D - D_min) / (D_max - D_min) with D_min = 0 for BM25, C' = (C - C_min) / (C_max - C_min) over the
  engines queried (C is the engine's resource-selection belief), and D'' = (D' + 0.4 * D' * C') / 1.4.

* ``global``: s / the largest s_max over the engines merged: one scale for all engines, so the ranking is
  that of the raw scores. It assumes raw BM25F scores are comparable, which holds roughly when engines share
  the analyser and BM25F parameters and their term statistics are alike; ``oasis bench merge-quality``
  measured it closest to one central index on the three documentation corpora (docs/directory-broker.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from oasis.runtime.engine_types import EngineHit
from oasis.runtime.urls import InvalidURL, canonicalize

Normalisation = Literal["max", "cori", "global"]
NORMALISATIONS: tuple[Normalisation, ...] = ("max", "cori", "global")
# canonicalize() is pure and costs ~60 us: 19 % of the broker's CPU per query before this cache (py-spy)
_canonical = lru_cache(maxsize=65536)(canonicalize)


@dataclass(frozen=True, kw_only=True)
class EngineResult:
    engine: str
    route_score: float  # the directory's belief C for this engine and query
    max_score: float  # the engine's best score for the query (0 when it has no hit)
    hits: tuple[EngineHit, ...]


@dataclass(frozen=True, kw_only=True)
class MergedHit:
    url: str  # canonical URL
    title: str
    snippet: str
    score: float  # normalised, comparable across engines
    engine: str
    raw_score: float


def max_norm(d: float, d_max: float) -> float:
    # D' = (D - D_min) / (D_max - D_min), D_min = 0 for BM25 (its scores are >= 0)
    return d / d_max if d_max > 0 else 0.0


def cori_merge(d_norm: float, c_norm: float) -> float:
    # CORI merge (Callan 2000): D'' = (D' + 0.4 * D' * C') / 1.4
    return (d_norm + 0.4 * d_norm * c_norm) / 1.4


def _c_norm(results: Sequence[EngineResult]) -> dict[str, float]:
    # C' = (C - C_min) / (C_max - C_min) over the engines being merged; all equal -> 1
    scores = [r.route_score for r in results]
    lo, hi = (min(scores), max(scores)) if scores else (0.0, 0.0)
    return {r.engine: (r.route_score - lo) / (hi - lo) if hi > lo else 1.0 for r in results}


def _d_max(result: EngineResult) -> float:
    return max([result.max_score, *(h.score for h in result.hits)])


def normalised_scores(
    result: EngineResult, c_norm: float, method: Normalisation, global_max: float = 0.0
) -> list[float]:
    d_max = _d_max(result)
    if method == "global":
        return [max_norm(h.score, global_max) for h in result.hits]
    if method == "max":
        return [max_norm(h.score, d_max) for h in result.hits]
    if method == "cori":
        return [cori_merge(max_norm(h.score, d_max), c_norm) for h in result.hits]
    raise ValueError(f"unknown normalisation {method!r}; choose one of {NORMALISATIONS}")


def merge(results: Sequence[EngineResult], k: int, method: Normalisation = "max") -> list[MergedHit]:
    """The k best hits over all engines by normalised score, one per canonical URL (its best score).

    Ties are broken by URL so the ranking is deterministic. Hits whose URL cannot be canonicalised are
    dropped (an engine indexes only canonical http(s) URLs, so that would be a broken engine).
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    c_norm = _c_norm(results)
    global_max = max((_d_max(r) for r in results), default=0.0)
    best: dict[str, MergedHit] = {}
    for result in results:
        for hit, score in zip(
            result.hits, normalised_scores(result, c_norm[result.engine], method, global_max), strict=True
        ):
            try:
                url = _canonical(hit.url)
            except InvalidURL:
                continue
            current = best.get(url)
            if current is None or score > current.score:
                best[url] = MergedHit(
                    url=url,
                    title=hit.title,
                    snippet=hit.snippet,
                    score=score,
                    engine=result.engine,
                    raw_score=hit.score,
                )
    ranked = sorted(best.values(), key=lambda h: (-h.score, h.url))
    return ranked[:k]
