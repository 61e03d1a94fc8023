"""Re-crawl research: the vectorised ephemeral Whittle index and the baseline re-crawl schedules.

The live robot's part -- change-rate estimation, the per-document index of papers/002 Theorem 1 and the
:class:`~oasis.robot.scheduling.recrawl.WhittleRecrawl` hook -- lives in :mod:`oasis.robot.scheduling.recrawl`
(the module docstring there explains how a retrieved document becomes an arm of papers/002). This module adds
what only the experiments need: :func:`recrawl_index_array` for whole collections, and the uniform and
Nutch-adaptive schedules with their hook :class:`ScheduleRecrawl`. Pure code (no grpc, no clock).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from oasis.robot.scheduling.recrawl import AdaptiveFetchSchedule, ScheduleRecrawl, UniformSchedule

__all__ = [
    "AdaptiveFetchSchedule",
    "ScheduleRecrawl",
    "UniformSchedule",
    "freshness_index_array",
    "recrawl_index_array",
]

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


def freshness_index_array(
    relevance: NDArray[np.float64], change_rate: NDArray[np.float64], age: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Vectorised :func:`oasis.robot.scheduling.recrawl.freshness_index`:
    W(a) = r [(1 - e^{-lam a}) / lam - a e^{-lam a}] (r lam a^2 / 2 for small lam a)."""
    r = np.asarray(relevance, dtype=np.float64)
    lam = np.asarray(change_rate, dtype=np.float64)
    a = np.asarray(age, dtype=np.float64)
    x = lam * a
    with np.errstate(divide="ignore", invalid="ignore"):
        full = (-np.expm1(-x) - x * np.exp(-x)) / lam
    small = a * (x / 2.0 - x * x / 3.0)
    return r * np.where(x < 1e-4, small, full)
