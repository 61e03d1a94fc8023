"""Re-crawl building blocks (robot scheduling): change-rate estimators and the per-document Whittle index."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.robot.scheduling import RecrawlArm
from oasis.robot.scheduling.recrawl import (
    ChangeRateEstimator,
    SiteUpdate,
    WhittleRecrawl,
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


def _first_retrievals(hook: WhittleRecrawl, histories: list[tuple[float, float]]) -> float:
    """Each (interval since the crawl's start, Last-Modified age) is one page's first retrieval at time
    ``interval``: its history, then the hook's first look at it. Returns the pooled rate."""
    for k, (interval, ago) in enumerate(histories):
        url = f"http://h/p{k}"
        hook.observe_history(url, interval, ago)
        hook(RecrawlArm(url, 0.5, interval, interval, 1, 0), interval)
    assert hook.pool is not None
    return hook.pool.rate()


def test_a_first_retrieval_last_modified_is_one_change_observation_over_the_interval() -> None:
    hook = WhittleRecrawl(period=1.0)
    # changed since the crawl's start (last modified 3 s ago, retrieved 10 s after the start)
    assert hook.observe_history("http://h/a", 10.0, 3.0)
    hook(RecrawlArm("http://h/a", 0.5, 10.0, 10.0, 1, 0), 10.0)
    est = hook._docs["http://h/a"].estimator
    assert (est.n, est.changes) == (1, 1) and list(est._order) == [(True, 10.0)]
    # unchanged since before the start (modified 30 s before the response)
    assert hook.observe_history("http://h/b", 10.0, 30.0)
    hook(RecrawlArm("http://h/b", 0.5, 10.0, 10.0, 1, 0), 10.0)
    assert list(hook._docs["http://h/b"].estimator._order) == [(False, 10.0)]
    assert hook.pool is not None and (hook.pool.changes, hook.pool.exposure) == (1, 20.0)


def test_history_that_tells_nothing_is_left_out() -> None:
    hook = WhittleRecrawl(period=1.0)
    assert not hook.observe_history("http://h/now", 10.0, 0.0)  # a dynamic page: "modified now"
    assert not hook.observe_history("http://h/edge", 10.0, 9.5)  # within a second of the reference
    assert not hook.observe_history("http://h/early", 1.5, 30.0)  # retrieved within 2 s of the start
    assert not hook.observe_history("http://h/nan", math.nan, 30.0)
    hook(RecrawlArm("http://h/known", 0.5, 5.0, 5.0, 1, 0), 5.0)
    assert not hook.observe_history("http://h/known", 10.0, 30.0)  # the hook has seen the page already
    for url in ("http://h/now", "http://h/edge", "http://h/early"):
        hook(RecrawlArm(url, 0.5, 10.0, 10.0, 1, 0), 10.0)
        assert hook._docs[url].estimator.n == 0
    assert hook.pool is not None and hook.pool.exposure == 0.0


def test_first_retrievals_teach_the_pooled_rate_before_any_recrawl() -> None:
    rng = np.random.default_rng(3)

    def histories(rate: float) -> list[tuple[float, float]]:
        out = []
        for t in np.linspace(5.0, 200.0, 300):
            since_change = float(rng.exponential(1.0 / rate))  # Poisson changes: the age of the last one
            out.append((float(t), since_change))
        return out

    slow = _first_retrievals(WhittleRecrawl(period=1.0), histories(0.001))
    fast = _first_retrievals(WhittleRecrawl(period=1.0), histories(0.05))
    blind = WhittleRecrawl(period=1.0)  # the same retrievals without their Last-Modified
    for k, (t, _) in enumerate(histories(0.05)):
        blind(RecrawlArm(f"http://h/p{k}", 0.5, t, t, 1, 0), t)
    assert blind.pool is not None and blind.pool.exposure == 0.0
    # without history the rate is the scale-free prior's (half a change over the elapsed time); with it
    # the rate follows the web's: within a factor 2 of the truth, and 10x apart for webs 50x apart
    assert blind.pool.rate() == pytest.approx(0.5 / 195.0, rel=0.01)
    assert 0.05 / 2 < fast < 0.05 * 2
    assert slow < 0.005 and fast > 10 * slow


def test_a_site_wide_update_is_judged_from_recrawls_last_modified() -> None:
    """Four re-crawls find changes stamped within a second of t = 100: a site-wide update at 100. Of the
    seven copies fetched before it and re-crawled after, four changed then (one other changed at 20, not
    with the update): q = (4 + 1/2) / (7 + 1)."""
    site = SiteUpdate()
    assert site.update() is None and site.survival(50.0) == 1.0
    site.recrawl(40.0, 90.0, None)  # re-crawled before the update: not exposed to it
    site.recrawl(60.0, 101.5, 100.2)
    site.recrawl(61.0, 102.0, None)
    site.recrawl(62.0, 102.5, 99.6)
    site.recrawl(63.0, 103.0, None)
    site.recrawl(64.0, 103.5, 100.4)
    assert site.update() is None  # three changes at 100 are not yet an update
    site.recrawl(65.0, 103.8, 100.0)
    site.recrawl(100.8, 104.0, None)  # fetched within a second of it: neither before nor after
    site.recrawl(30.0, 104.5, 20.0)  # an old change: no update at 20 from one stamp
    found = site.update()
    assert found is not None
    at, q = found
    assert at == pytest.approx(100.0) and q == pytest.approx(4.5 / 8.0)
    assert site.survival(95.0) == pytest.approx(1.0 - 4.5 / 8.0)  # a copy fetched before the update
    assert site.survival(101.0) == 1.0  # after it
    # a later update replaces it
    for now in (210.0, 211.0, 212.0, 213.0):
        site.recrawl(150.0, now, 205.0)
    found = site.update()
    assert found is not None and found[0] == pytest.approx(205.0) and found[1] == pytest.approx(4.5 / 5.0)
    assert site.survival(101.0) == pytest.approx(1.0 - 4.5 / 5.0)


def test_changes_as_dense_as_usual_are_no_site_wide_update() -> None:
    """A web whose pages change every half second stamps four or five changes in every two seconds: no
    update; ten stamped in one second against that are one."""
    site = SiteUpdate()
    for k in range(40):
        site.recrawl(0.0, 2.0 + 0.5 * k, 1.0 + 0.5 * k)
    assert site.update() is None
    for k in range(10):
        site.recrawl(0.0, 40.0 + 0.1 * k, 30.0)
    found = site.update()
    assert found is not None and found[0] == pytest.approx(30.0)


def test_observe_recrawl_takes_the_previous_fetch_from_the_hook_and_ignores_modified_now() -> None:
    hook = WhittleRecrawl(period=1.0)
    for k in range(5):
        hook(RecrawlArm(f"http://h/p{k}", 0.5, 10.0, 10.0, 1, 0), 10.0)  # fetched at 10
    hook.observe_recrawl("http://h/unknown", 60.0, True, 5.0)  # never fetched: nothing to judge
    for k in range(4):
        hook.observe_recrawl(f"http://h/p{k}", 60.0 + k, True, 10.0 + k)  # changed at 50, the same second
    hook.observe_recrawl("http://h/p4", 64.0, True, 0.0)  # "modified now": when is unknown, left out
    found = hook.site.update()
    assert found is not None and found[0] == pytest.approx(50.0)
    assert found[1] == pytest.approx(4.5 / 5.0)  # four copies from before 50 re-crawled after it, all hit
    hook.observe_recrawl("http://h/p4", 65.0, False, None)  # unchanged since 10: exposed, not changed
    found = hook.site.update()
    assert found is not None and found[1] == pytest.approx(4.5 / 6.0)
