"""Collection quality of papers/004, Eqs. 1-3, as pure functions.

* Eq. 1 -- recall ``R(C_t) = sum_{i in C_t ∩ V_t} r(i) / sum_{i in V_t} r(i)`` and freshness
  ``F(C_t) = sum_{i in C_t ∩ V_t} r(i) / sum_{i in C_t} r(i)``. A collection entry is in ``V_t`` only while
  the document exists in the version the collection holds (a modification is a deletion plus an addition).
* Eq. 2 -- quality ``M(C_t) = min(R(C_t), F(C_t))``.
* Eq. 3 -- performance ``P = integral_0^T M(C_t) dt``. Time is discrete: step t (t = 1..T) fetches m
  documents during ``(t-1, t]``; ``C_t`` is the collection after step t and holds until the next step, so
  ``P = sum_{t=1..T} M(C_t)`` (unit steps).

Conventions for empty sums (0/0): ``F`` of an empty collection is 1 (nothing in it is stale); ``R`` when the
web holds no relevance is 1 (there is nothing to miss).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence


def recall_from_sums(fresh: float, web: float) -> float:
    # Eq. 1 (papers/004): R = sum_{C ∩ V} r / sum_V r
    if web < 0 or fresh < 0:
        raise ValueError("relevance sums must be non-negative")
    if web == 0.0:
        return 1.0
    return min(fresh / web, 1.0)


def freshness_from_sums(fresh: float, collection: float) -> float:
    # Eq. 1 (papers/004): F = sum_{C ∩ V} r / sum_C r
    if collection < 0 or fresh < 0:
        raise ValueError("relevance sums must be non-negative")
    if collection == 0.0:
        return 1.0
    return min(fresh / collection, 1.0)


def quality(R: float, F: float) -> float:
    # Eq. 2 (papers/004): M = min(R, F)
    return min(R, F)


def performance(M: Iterable[float], dt: float = 1.0) -> float:
    # Eq. 3 (papers/004): P = integral of M dt, M piecewise constant over steps of length dt
    return dt * math.fsum(M)


def recall(C: Iterable[str], V: Iterable[str], r: Mapping[str, float]) -> float:
    """Eq. 1 recall over sets: ``C`` collection entries (fresh ones count), ``V`` documents on the web."""
    Vs = set(V)
    return recall_from_sums(math.fsum(r[i] for i in set(C) & Vs), math.fsum(r[i] for i in Vs))


def freshness(C: Iterable[str], V: Iterable[str], r: Mapping[str, float]) -> float:
    """Eq. 1 freshness over sets: entries of ``C`` whose version is on the web (in ``V``), over ``C``."""
    Cs = set(C)
    return freshness_from_sums(math.fsum(r[i] for i in Cs & set(V)), math.fsum(r[i] for i in Cs))


def upper_bound_schedule(relevance: Sequence[float]) -> list[int]:
    """The unconstrained optimal static schedule: every document reachable at once, fetched by decreasing
    relevance (ties by index)."""
    return sorted(range(len(relevance)), key=lambda i: (-relevance[i], i))


def static_recall_curve(fetched: Sequence[float], total: float, m: int, T: int) -> list[float]:
    """R(C_t), t = 1..T, on a static web (F = 1) for documents fetched in the given order, m per step."""
    if m < 1 or T < 0:
        raise ValueError("m must be >= 1 and T >= 0")
    out: list[float] = []
    acc = 0.0
    k = 0
    for _ in range(T):
        for r in fetched[k : k + m]:
            acc += r
        k += m
        out.append(recall_from_sums(acc, total))
    return out


def upper_bound_performance(relevance: Sequence[float], m: int, T: int) -> float:
    """Closed form of Eq. 3 for the upper-bound schedule on a static web: with ``r_(1) >= r_(2) >= ...`` and
    document k fetched at step ``ceil(k / m)``, it counts in ``T - ceil(k / m) + 1`` steps:
    ``P = sum_k r_(k) max(0, T - ceil(k / m) + 1) / sum_k r_k``."""
    if m < 1 or T < 0:
        raise ValueError("m must be >= 1 and T >= 0")
    total = math.fsum(relevance)
    if total == 0.0:
        return float(T)
    ordered = sorted(relevance, reverse=True)
    return math.fsum(r * max(0, T - (k + m - 1) // m + 1) for k, r in enumerate(ordered, start=1)) / total
