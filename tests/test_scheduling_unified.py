"""One queue in one unit (issue 10 item 3): fringe and re-crawl arms compared in relevance gained per fetch.

Hand-worked cases of docs/replay.md "One queue in one unit": the Whittle controller's fringe value is the
relevance fringe fetches have been finding (the running mean of first-retrieval rewards), not Q(x, 1) with
its child bonus; a re-crawl arm is fetched only when its index (the freshness Whittle index x lam_pool, or
papers/002 Theorem 1) is larger than the fringe value times a new page's weight in M = min(R, F) (1 while
recall binds, 1 - F once deletions make freshness bind).
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from oasis.robot.scheduling import ControllerConfig, Discovered, FetchOutcome, RecrawlArm, make_controller
from oasis.robot.scheduling.controller import WhittleController
from oasis.robot.scheduling.recrawl import WhittleRecrawl, freshness_index, new_page_weight, recrawl_index


def fixed_index(value: float):  # type: ignore[no-untyped-def]
    return lambda arm, now: value if now > arm.last_fetch else 0.0


@pytest.mark.parametrize("gamma", [0.5, 0.8])
def test_unseen_state_is_worth_its_parent_relevance(gamma: float) -> None:
    """Seed s (r 0.4) -> x. Prior: Q(x,1) = 0.4, Q(x,0) = gamma 0.4, v = (1 - gamma) 0.4; the fringe value
    in the re-crawl unit is v / (1 - gamma) = 0.4 (the running-mean floor after one first fetch of g = 0.4
    is 0.4 too)."""
    for value, first in ((0.39, "http://h/x"), (0.41, "http://h/s")):
        ctl = make_controller(
            "whittle",
            rng=random.Random(0),
            config=ControllerConfig(gamma=gamma),
            recrawl_index=fixed_index(value),
        )
        assert isinstance(ctl, WhittleController)
        ctl.add_seeds(["http://h/s"])
        assert ctl.next_batch(1, 0.0) == ["http://h/s"]
        ctl.report(FetchOutcome("http://h/s", "new", 0.4, [Discovered("http://h/x")]), 0.0)
        assert ctl._fringe_value() == pytest.approx(0.4)
        # a re-crawl arm worth 0.39 per fetch waits; one worth 0.41 goes first
        assert ctl.next_batch(1, 1.0) == [first]


def test_learned_state_value_counts_its_children() -> None:
    """After learning, Q(x,1) = g + gamma sum max Q(children) (Eq. 10 with alpha = 1): the fringe value of
    a state whose pages lead to relevant children is above its immediate relevance."""
    cfg = ControllerConfig(gamma=0.5, alpha=1.0, state="parent")
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg)
    assert isinstance(ctl, WhittleController)
    ctl.add_seeds(["http://h/s"])
    ctl.next_batch(1, 0.0)
    # s (r .2) -> a, b (state p:s, prior Q(.,1) = .2)
    ctl.report(
        FetchOutcome("http://h/s", "new", 0.2, [Discovered("http://h/a"), Discovered("http://h/b")]), 0
    )
    assert ctl.next_batch(1, 1.0) == ["http://h/a"]
    # a (r .1) discovers c (new state p:a, prior Q(p:a,1) = .1): Q(p:s,1) = .1 + .5 (.1) = .15 (alpha 1)
    ctl.report(FetchOutcome("http://h/a", "new", 0.1, [Discovered("http://h/c")]), 1.0)
    q1 = ctl.q.get("p:http://h/s", 1)
    assert q1 == pytest.approx(0.15)
    # best group: p:s (b) with v = (1 - .5) .15 = .075 vs p:a (c) with v = .05; the fringe value in the
    # re-crawl unit is the relevance first fetches found, the running mean (.2 + .1) / 2 = .15, not Q(x,1)
    assert ctl._fringe_value() == pytest.approx(0.15)
    ctl.report(FetchOutcome("http://h/b", "new", 0.0, []), 2.0)
    assert ctl._fringe_value() == pytest.approx(0.1)  # (.2 + .1 + 0) / 3


def test_recrawl_index_is_at_most_relevance_times_change_probability() -> None:
    """Theorem 1's index is in the fringe's unit: 0 just after a fetch, <= r (1 - e^{-lam a}), -> r."""
    r, lam = 0.8, 0.05
    assert recrawl_index(r, lam, 0.0) == 0.0
    for age in (1.0, 5.0, 20.0, 100.0):
        assert 0.0 <= recrawl_index(r, lam, age) <= r * -math.expm1(-lam * age) + 1e-12
    assert recrawl_index(r, lam, 1e5) == pytest.approx(r, rel=1e-6)


def test_freshness_index_hand_worked() -> None:
    # r = 1, lam = 0.1, a = 10: x = 1, W = (1 - e^-1 - e^-1) / 0.1 = (1 - 2/e) / 0.1
    assert freshness_index(1.0, 0.1, 10.0) == pytest.approx((1 - 2 / math.e) / 0.1)
    assert freshness_index(0.5, 0.01, 1e5) == pytest.approx(50.0)  # surely stale: r / lam
    assert freshness_index(0.5, 0.0, 10.0) == 0.0 and freshness_index(0.5, 0.1, 0.0) == 0.0
    # small lam a: r lam a^2 / 2, continuous across the series switch at x = 1e-4
    lo, hi = freshness_index(1.0, 1e-5, 9.999), freshness_index(1.0, 1e-5, 10.001)
    assert lo == pytest.approx(1e-5 * 9.999**2 / 2, rel=1e-3) and hi == pytest.approx(
        1e-5 * 10.001**2 / 2, rel=1e-3
    )
    # increasing in age
    ws = [freshness_index(0.7, 0.05, a) for a in range(0, 200, 5)]
    assert all(b > a for a, b in itertools.pairwise(ws))


@pytest.mark.parametrize(("lam", "tau"), [(0.05, 10.0), (0.2, 3.0), (0.01, 40.0)])
def test_freshness_index_is_the_indifference_subsidy(lam: float, tau: float) -> None:
    """With subsidy W = W(tau), the average reward g(t) = (r (1 - e^{-lam t}) / lam + W (t - 1)) / t of
    "re-crawl at age t" is largest at t = tau (checked on a fine grid)."""
    r = 0.8
    w = freshness_index(r, lam, tau)

    def g(t: float) -> float:
        return (r * -math.expm1(-lam * t) / lam + w * (t - 1.0)) / t

    grid = [tau * k / 400 for k in range(40, 1600)]
    best = max(grid, key=g)
    assert best == pytest.approx(tau, rel=0.01)


def test_whittle_hook_is_in_relevance_per_fetch() -> None:
    """The hook returns W(a) x lam_pool: a page with the pooled rate gives r [(1 - e^{-x}) - x e^{-x}] <= r
    P(stale); before any observation lam_pool = c / elapsed (scale-free, c = 1/2: x = 1/2 for a page as old
    as the crawl, whatever the time unit), or lam0 given a ``prior_rate``."""
    hook = WhittleRecrawl()
    arm = RecrawlArm(url="http://h/a", relevance=0.6, last_fetch=0.0, first_fetch=0.0, fetches=1, changes=0)
    x = 0.5
    assert hook(arm, 7.0) == pytest.approx(0.6 * (-math.expm1(-x) - x * math.exp(-x)))
    assert hook(arm, 7.0) <= 0.6 * -math.expm1(-x)
    assert WhittleRecrawl()(arm, 7000.0) == pytest.approx(hook(arm, 7.0))  # no time unit
    x = 0.1 * 7.0
    lam0 = WhittleRecrawl(prior_rate=0.1)
    assert lam0(arm, 7.0) == pytest.approx(0.6 * (-math.expm1(-x) - x * math.exp(-x)))
    eph = WhittleRecrawl(index="ephemeral", prior_rate=0.1)
    assert eph(arm, 7.0) == pytest.approx(recrawl_index(0.6, 0.1, 7.0))
    with pytest.raises(ValueError):
        WhittleRecrawl(index="nope")


def _m(fresh: float, collection: float, web: float) -> float:
    return min(fresh / web, fresh / collection)  # papers/004 Eqs. 1-2


@pytest.mark.parametrize(
    ("collection", "fresh", "web", "weight"),
    [
        (10.0, 6.0, 12.0, 1.0),  # S_C <= S_V: R = .5 <= F = .6, recall binds
        (10.0, 6.0, 8.0, 0.4),  # deletions: S_C > S_V, F = .6 < R = .75, a new page is worth 1 - F
        (10.0, 9.0, 9.5, 0.1),  # F = .9 < R = .947
    ],
)
def test_new_page_weight_is_the_ratio_of_what_each_fetch_adds_to_min_r_f(
    collection: float, fresh: float, web: float, weight: float
) -> None:
    """dM of a new page of relevance r (S_CV += r, S_C += r) over dM of a refresh (S_CV += r), exact: 1 while
    recall binds; r (1 - F) / (S_C + r) over r / S_C = (1 - F) / (1 + r / S_C) while F binds."""
    assert new_page_weight(collection, fresh, web) == pytest.approx(weight)
    r = 0.01
    m0 = _m(fresh, collection, web)
    d_new = _m(fresh + r, collection + r, web) - m0
    d_refresh = _m(fresh + r, collection, web) - m0
    expected = weight if collection <= web else weight / (1.0 + r / collection)
    assert d_new / d_refresh == pytest.approx(expected, rel=1e-9)
    if collection <= web:  # recall counts current copies only: a refresh raises R as a new page does
        assert d_refresh == pytest.approx(r / web, rel=1e-9) and d_new == pytest.approx(r / web, rel=1e-9)
    assert new_page_weight(0.0, 0.0, 0.0) == 1.0
    with pytest.raises(ValueError):
        new_page_weight(-1.0, 0.0, 1.0)


def test_a_refresh_while_recall_binds_is_worth_a_new_page() -> None:
    """docs/replay.md: S_V = 10, S_C = 6, S_CV = 4, r = 1. R = .4 < F = .667: M = .4; a new page (S_C 7,
    S_CV 5) gives min(.5, .714) = .5, a refresh of a stale copy (S_CV 5) gives min(.5, .833) = .5: both add
    r / S_V = .1 (Eq. 1's recall counts C ∩ V, the current copies), so there is no discount on either side
    while R binds."""
    assert _m(4.0, 6.0, 10.0) == pytest.approx(0.4)
    assert _m(5.0, 7.0, 10.0) == pytest.approx(0.5)
    assert _m(5.0, 6.0, 10.0) == pytest.approx(0.5)
    assert new_page_weight(6.0, 4.0, 10.0) == 1.0


def test_hook_estimates_the_collection_and_the_controller_applies_the_weight() -> None:
    """Seed s (r .5) links a, b (r 1) and x. While no deletion has been seen the weight is 1; b found deleted
    48 steps after its fetch gives delta = 1 / 48 (no unchanged re-crawl time yet); at t = 60 the hook's sums
    are S_C = .5 + 1 (s, a), deleted = sum r (1 - e^{-delta age}), fresh = sum r e^{-(delta + lam) age}, and
    the controller's weight is new_page_weight(S_C, fresh, S_C - deleted + x's estimate .5)."""
    hook = WhittleRecrawl()
    ctl = make_controller("whittle", rng=random.Random(0), recrawl_index=hook)
    ctl.add_seeds(["http://h/s"])
    ctl.next_batch(1, 0.0)
    links = [Discovered("http://h/a"), Discovered("http://h/b"), Discovered("http://h/x")]
    ctl.report(FetchOutcome("http://h/s", "new", 0.5, links), 0.0)
    for t, url in ((1.0, "http://h/a"), (2.0, "http://h/b")):
        ctl.report(FetchOutcome(url, "new", 1.0, []), t)
    assert ctl._new_page_weight() == 1.0
    ctl.report(FetchOutcome("http://h/b", "deleted", 0.0, []), 50.0)
    assert ctl.status("http://h/b") == "gone"
    assert hook.deletions == 1 and hook.deletion_rate() == pytest.approx(1.0 / 48.0)
    ctl.next_batch(0, 60.0)  # re-keys every retrieved arm (s, a) at t = 60
    delta = 1.0 / 48.0
    arms = [("http://h/s", 0.5, 0.0), ("http://h/a", 1.0, 1.0)]
    lam = {url: hook.rate(RecrawlArm(url, r, t0, t0, 1, 0)) for url, r, t0 in arms}
    deleted = sum(r * -math.expm1(-delta * (60 - t0)) for _, r, t0 in arms)
    fresh = sum(r * math.exp(-(delta + lam[url]) * (60 - t0)) for url, r, t0 in arms)
    assert hook.collection == pytest.approx(1.5) and hook.deleted == pytest.approx(deleted)
    assert hook.fresh == pytest.approx(fresh)
    assert 1.5 - deleted + 0.5 < 1.5  # F binds here
    assert ctl._new_page_weight() == pytest.approx(new_page_weight(1.5, fresh, 1.5 - deleted + 0.5))
    assert ctl._new_page_weight() == pytest.approx(1.0 - fresh / 1.5)
