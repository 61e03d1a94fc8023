"""Re-crawl building blocks (robot scheduling): change-rate estimators and the per-document Whittle index."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.robot.scheduling.recrawl import (
    ChangeRateEstimator,
    cho_garcia_molina_rate,
    expected_staleness,
    poisson_rate_mle,
    recrawl_index,
)


def test_cho_garcia_molina_hand_worked() -> None:
    # n = 10 accesses 2 time units apart, 4 saw a change: -ln((10 - 4 + 0.5) / 10.5) / 2
    assert cho_garcia_molina_rate(10, 4, 2.0) == pytest.approx(-math.log(6.5 / 10.5) / 2.0)
    # every access saw a change: still finite (the plain MLE is infinite)
    assert math.isfinite(cho_garcia_molina_rate(5, 5, 1.0))
    assert cho_garcia_molina_rate(5, 0, 1.0) == 0.0


def test_mle_regular_intervals_matches_closed_form() -> None:
    # regular intervals I: the MLE solves X I / (e^{lam I} - 1) = (n - X) I, so lam = ln(n / (n - X)) / I
    lam = poisson_rate_mle([3.0] * 4, [3.0] * 6)
    assert lam == pytest.approx(math.log(10 / 6) / 3.0, rel=1e-8)
    assert poisson_rate_mle([], [1.0, 2.0]) == 0.0
    assert poisson_rate_mle([1.0], []) == math.inf


def test_estimator_equals_bias_reduced_estimator_on_regular_intervals() -> None:
    est = ChangeRateEstimator()
    pattern = [True, False, False, True, True, False, False, False, True, False]
    for changed in pattern:
        est.observe(2.0, changed)
    assert est.n == 10 and est.changes == 4
    assert est.rate() == pytest.approx(cho_garcia_molina_rate(10, 4, 2.0), rel=1e-7)


def test_estimator_converges_on_irregular_poisson_observations() -> None:
    rng = np.random.default_rng(7)
    true_rate = 0.3
    est = ChangeRateEstimator(window=5000)
    for _ in range(3000):
        t = float(rng.uniform(0.5, 6.0))
        est.observe(t, bool(rng.random() < 1.0 - math.exp(-true_rate * t)))
    assert est.rate() == pytest.approx(true_rate, rel=0.1)


def test_estimator_prior_no_change_and_window() -> None:
    est = ChangeRateEstimator(prior_rate=0.2, window=3)
    assert est.rate() == 0.2
    est.observe(1.0, False)
    assert est.rate() == 0.2  # 0.5 / 1 capped by the prior
    est.observe(9.0, False)
    assert est.rate() == pytest.approx(0.05)  # half a change in 10 time units
    for _ in range(3):
        est.observe(1.0, True)
    assert est.n == 3 and est.changes == 3  # the two unchanged observations left the window
    assert math.isfinite(est.rate()) and est.rate() > 1.0
    with pytest.raises(ValueError):
        est.observe(0.0, True)


def test_recrawl_index_hand_worked() -> None:
    # r = 1, lam = ln 2, T = 1: alpha = 1/2, u = 1/2.
    lam = math.log(2.0)
    # age 1: x = 1/2, eta = 1, gamma = (1/2 * 1/2 - 1/2) + 1/2 = 1/4
    assert recrawl_index(1.0, lam, 1.0) == pytest.approx(0.25)
    # age 2: x = 3/4, eta = 2, gamma = 2 (3/8 - 1/2) + (3/4) / (1/2) * 1/2 = 1/2
    assert recrawl_index(1.0, lam, 2.0) == pytest.approx(0.5)
    # relevance scales it, the cost divides it
    assert recrawl_index(3.0, lam, 2.0, cost=2.0) == pytest.approx(0.75)
    assert recrawl_index(1.0, 0.0, 5.0) == 0.0
    assert recrawl_index(0.0, 1.0, 5.0) == 0.0
    # a copy that is surely stale is worth its whole relevance
    assert recrawl_index(2.0, 1.0, 1e6) == pytest.approx(2.0)


@settings(max_examples=60, deadline=None)
@given(
    r=st.floats(0.01, 10.0),
    lam=st.floats(1e-3, 5.0),
    a1=st.floats(0.0, 50.0),
    a2=st.floats(0.0, 50.0),
)
def test_recrawl_index_increasing_in_age_and_bounded(r: float, lam: float, a1: float, a2: float) -> None:
    lo, hi = sorted((a1, a2))
    g_lo, g_hi = recrawl_index(r, lam, lo), recrawl_index(r, lam, hi)
    assert g_lo <= g_hi + 1e-9 * r
    assert 0.0 <= g_lo <= r * (1 + 1e-9)
    assert expected_staleness(r, lam, hi) <= r


def test_recrawl_index_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        recrawl_index(-1.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        recrawl_index(1.0, math.nan, 1.0)
    with pytest.raises(ValueError):
        recrawl_index(1.0, 1.0, 1.0, period=0.0)
