"""Re-crawl research: the vectorised ephemeral Whittle index and the baseline re-crawl schedules.

The live robot's part -- change-rate estimation, the per-document index of papers/002 Theorem 1 and the
:class:`~oasis.robot.scheduling.recrawl.WhittleRecrawl` hook -- lives in :mod:`oasis.robot.scheduling.recrawl`
(the module docstring there explains how a retrieved document becomes an arm of papers/002). This module adds
what only the experiments need: :func:`recrawl_index_array` for whole collections, and the uniform and
Nutch-adaptive schedules with their hook :class:`ScheduleRecrawl`. Pure code (no grpc, no clock).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from oasis.robot.scheduling.recrawl import ChangeRateEstimator, CrawledDoc, DocHistory, PerDocumentTracker

_ETA_TOL = 1e-9  # ages that are whole periods up to rounding count as whole periods

# ---------------------------------------------------------------------------------------------------------
# (a) The ephemeral Whittle index of a whole collection
# ---------------------------------------------------------------------------------------------------------


def recrawl_index_array(
    relevance: NDArray[np.float64],
    change_rate: NDArray[np.float64],
    age: NDArray[np.float64],
    *,
    period: float = 1.0,
    cost: NDArray[np.float64] | float = 1.0,
) -> NDArray[np.float64]:
    """Vectorised :func:`recrawl_index`, through the form Theorem 1 takes for a document.

    With x = r (1 - e^{-lam a}), alpha = e^{-lam T}, u = r (1 - alpha): (u - (1 - alpha) x) / u = e^{-lam a},
    so eta = ceil(a / T) and Theorem 1 becomes

        gamma(a) = (r / C) [1 - alpha^eta - eta (1 - alpha) e^{-lam a}],   eta = ceil(a / T).

    (On the grid a = k T this is r [1 - alpha^k - k (1 - alpha) alpha^k] / C.) Inputs must be valid (>= 0).
    """
    r = np.asarray(relevance, dtype=np.float64)
    lam = np.asarray(change_rate, dtype=np.float64)
    a = np.asarray(age, dtype=np.float64)
    eta = np.ceil(a / period - _ETA_TOL)
    eta = np.maximum(eta, 0.0)
    one_minus_alpha = -np.expm1(-lam * period)
    # papers/002 Theorem 1 specialised to x = r (1 - e^{-lam a})
    g = r * (-np.expm1(-lam * period * eta) - eta * one_minus_alpha * np.exp(-lam * a))
    return np.where((lam > 0) & (a > 0), np.maximum(g, 0.0), 0.0) / cost


# ---------------------------------------------------------------------------------------------------------
# (b) Baseline re-crawl schedules
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class UniformSchedule:
    """Re-crawl every document every ``interval`` time units, whatever it does (Cho & Garcia-Molina's
    uniform policy). At a fixed budget of B fetches per tick over D documents, interval = D / B ticks,
    which is the same as always fetching the document with the largest age (round robin)."""

    interval: float

    def __post_init__(self) -> None:
        if not (self.interval > 0 and math.isfinite(self.interval)):
            raise ValueError(f"interval must be finite and > 0, got {self.interval}")

    def next_interval(self, interval: float, changed: bool) -> float:
        return self.interval

    def priority(self, age: float, interval: float) -> float:
        """Overdue ratio age / interval; a document is due at >= 1."""
        return age / self.interval


@dataclass(frozen=True, kw_only=True)
class AdaptiveFetchSchedule:
    """Apache Nutch's AdaptiveFetchSchedule rule (org.apache.nutch.crawl.AdaptiveFetchSchedule).

    After each re-fetch the document's interval is multiplied by (1 + inc_rate) if the page was not modified
    and by (1 - dec_rate) if it was, then clamped to [min_interval, max_interval]. Defaults are Nutch's
    nutch-default.xml values (db.fetch.schedule.adaptive.inc_rate = 0.4, dec_rate = 0.2, min_interval = 60 s,
    max_interval = 365 days) expressed in seconds; pass values in your own time unit. Nutch's optional
    SYNC_DELTA adjustment needs the server's last-modified time, which a change/no-change observation does
    not give, so it is not modelled.
    """

    inc_rate: float = 0.4
    dec_rate: float = 0.2
    min_interval: float = 60.0
    max_interval: float = 365.0 * 24 * 3600
    initial_interval: float = 30.0 * 24 * 3600  # db.fetch.interval.default

    def __post_init__(self) -> None:
        if not self.inc_rate >= 0:
            raise ValueError("inc_rate must be >= 0")
        if not 0 <= self.dec_rate < 1:
            raise ValueError("dec_rate must be in [0, 1)")
        if not 0 < self.min_interval <= self.max_interval:
            raise ValueError("need 0 < min_interval <= max_interval")
        if not self.min_interval <= self.initial_interval <= self.max_interval:
            raise ValueError("initial_interval must lie in [min_interval, max_interval]")

    def next_interval(self, interval: float, changed: bool) -> float:
        # Nutch AdaptiveFetchSchedule.setFetchSchedule: MODIFIED -> *(1 - DEC_RATE),
        # NOTMODIFIED -> *(1 + INC_RATE)
        nxt = interval * (1.0 - self.dec_rate) if changed else interval * (1.0 + self.inc_rate)
        return min(self.max_interval, max(self.min_interval, nxt))

    def priority(self, age: float, interval: float) -> float:
        """Overdue ratio age / interval; a document is due at >= 1 (most overdue first at equal budget)."""
        if interval <= 0:
            raise ValueError("interval must be > 0")
        return age / interval


# ---------------------------------------------------------------------------------------------------------
# The baselines' re-crawl hook for the request controller: ``hook(arm, now) -> float`` (relevance)
# ---------------------------------------------------------------------------------------------------------


class ScheduleRecrawl(PerDocumentTracker):
    """``recrawl_index`` hook for the baselines: a document is due once its age reaches its interval (fixed
    for :class:`UniformSchedule`, adapted per document by :class:`AdaptiveFetchSchedule`); a due document is
    worth its relevance (Nutch's generator ranks due pages by score), one not due is passive (0)."""

    def __init__(self, schedule: UniformSchedule | AdaptiveFetchSchedule, *, initial_interval: float) -> None:
        if not initial_interval > 0:
            raise ValueError("initial_interval must be > 0")
        super().__init__()
        self.schedule = schedule
        self.initial_interval = initial_interval

    def _first_seen(self, arm: CrawledDoc) -> DocHistory:
        return DocHistory(
            fetches=arm.fetches,
            changes=arm.changes,
            last_fetch=arm.last_fetch,
            estimator=ChangeRateEstimator(),
            interval=self.initial_interval,
        )

    def _fetched(self, h: DocHistory, interval: float, changed: bool) -> None:
        h.interval = self.schedule.next_interval(h.interval, changed)

    def interval(self, arm: CrawledDoc) -> float:
        return self._history(arm).interval

    def __call__(self, arm: CrawledDoc, now: float) -> float:
        interval = self.interval(arm)
        return arm.relevance if now - arm.last_fetch >= interval else 0.0
