"""Issue 16: on a web that never changes, re-crawling must not eat discovery.

The collapse (greedy-parent at P = 0.027 on a documentation web): a hub page of relevance 0 puts its
children in the fringe with key 0 (the parent's relevance), so the fringe value the re-crawl index was
compared with was 0; any retrieved page of positive relevance then had a positive re-crawl index (the rate
estimate never reaches 0: it was capped by a constant prior of 0.1 and fell only as 0.5 / the page's own
observed time) and won every decision: the crawler re-fetched one page for ever, its collection never grew.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.robot.scheduling import Discovered, FetchOutcome, make_controller
from oasis.robot.scheduling.interface import RecrawlArm
from oasis.robot.scheduling.recrawl import (
    PRIOR_CHANGES,
    ChangeRateEstimator,
    PooledChangeRate,
    WhittleRecrawl,
)

Graph = dict[str, tuple[float, list[str]]]


def hub_graph(n_leaves: int = 10) -> Graph:
    """hub (relevance 0) -> a (relevance 1) and leaves b0.. (relevance 0.5); a -> nothing."""
    leaves = [f"http://h/b{i}" for i in range(n_leaves)]
    g: Graph = {"http://h/": (0.0, ["http://h/a", *leaves]), "http://h/a": (1.0, [])}
    for u in leaves:
        g[u] = (0.5, [])
    return g


def crawl_static(
    policy: str, graph: Graph, budget: int, *, recrawl: bool, seed: str = "http://h/"
) -> list[str]:
    """Fetch one document per step on a static web; return the fetch order (re-crawls included)."""
    rel = {u: r for u, (r, _) in graph.items()}
    c = make_controller(
        policy,
        rng=random.Random(1),
        oracle=lambda u: rel[u],
        recrawl_index=WhittleRecrawl() if recrawl else None,
    )
    c.add_seeds([seed])
    seen: set[str] = set()
    order: list[str] = []
    for t in range(1, budget + 1):
        batch = c.next_batch(1, float(t))
        if not batch:
            break
        for url in batch:
            order.append(url)
            r, out = graph[url]
            kind = "unchanged" if url in seen else "new"
            seen.add(url)
            c.report(FetchOutcome(url, kind, r, [Discovered(v) for v in out]), float(t))
    return order


def test_hub_of_zero_relevance_does_not_make_recrawl_eat_the_budget() -> None:
    g = hub_graph(10)
    for policy in ("greedy-parent", "greedy-oracle", "whittle", "bfs"):
        plain = crawl_static(policy, g, 30, recrawl=False)
        with_rc = crawl_static(policy, g, 30, recrawl=True)
        assert set(plain) == set(g)
        # every page is discovered with re-crawl on, and (nothing ever changes) at most a few re-crawls
        # happen before the last new page
        assert set(with_rc) == set(g), (policy, with_rc)
        last_new = max(with_rc.index(u) for u in g)
        assert last_new <= len(g) + 3, (policy, with_rc[: last_new + 1])


@settings(max_examples=60, deadline=None)
@given(
    rels=st.lists(st.floats(0.01, 1.0), min_size=1, max_size=20),
    fringe_value=st.floats(1e-3, 1.0),
    horizon=st.integers(50, 3000),
    interval=st.integers(1, 20),
)
def test_no_change_observed_the_recrawl_index_falls_below_any_positive_fringe_value(
    rels: list[float], fringe_value: float, horizon: int, interval: int
) -> None:
    """Property (issue 16): n pages fetched first at t = 0..n-1; then every ``interval`` steps up to the
    horizon, the best re-crawl arm is re-fetched (finding no change) whenever its index beats a fringe page
    of value ``fringe_value`` = f > 0. The decisions at which some page's index is above f -- each one a
    fetch -- are bounded, logarithmically in the horizon: the hook's value is
    lam_pool W <= r (lam_pool a)^2 / 2 (every page's rate is at most lam_pool), so beating f needs
    lam_pool a > s = sqrt(2 f / r_max). With no change seen the scale-free pooled rate mu solves
    c = Phi(mu) = mu X + sum_j mu t_j / (1 + mu t_j) (X the elapsed time); Phi(mu) / mu falls with mu. A
    re-fetch at age a > s / mu adds mu a / (1 + mu a) > s / (1 + s) to Phi at the old mu, so the new root
    mu' has c / mu' >= (c + s / (1 + s)) / mu: mu falls by a factor 1 + s / (c (1 + s)) per such fetch
    (and never rises while nothing changes). It starts at c / X <= c / n; a fetch needs mu > s / horizon."""
    hook = WhittleRecrawl()
    n = len(rels)
    fetches = [1] * n
    last = [float(i) for i in range(n)]

    def arm(i: int) -> RecrawlArm:
        return RecrawlArm(f"u{i}", rels[i], last[i], float(i), fetches[i], 0)

    above = 0
    for t in range(n, horizon, interval):
        now = float(t)
        values = [hook(arm(i), now) for i in range(n)]
        best = max(range(n), key=values.__getitem__)
        if values[best] > fringe_value:
            above += 1
            fetches[best] += 1
            last[best] = now
    c = PRIOR_CHANGES
    s = math.sqrt(2.0 * fringe_value / max(rels))
    bound = 1 + math.log(horizon * c / (n * s)) / math.log1p(s / (c * (1 + s))) if horizon * c > n * s else 0
    assert above <= bound
    assert hook.pool is not None and hook.pool.changes == 0
    # the rate every page is estimated at is at most the pooled rate, which fell with the unchanged exposure
    lam = hook.pool.rate()
    assert all(hook.rate(arm(i)) <= lam for i in range(n))


def test_pooled_prior_hand_worked_and_learns_from_every_page() -> None:
    pool = PooledChangeRate(initial_rate=0.1, prior_changes=0.5)
    assert pool.rate() == pytest.approx(0.1)  # before any observation: the initial rate
    a = ChangeRateEstimator(pool=pool)
    b = ChangeRateEstimator(pool=pool)
    assert b.rate() == pytest.approx(0.1)
    # pooled (Lomax marginal likelihood, exposure X = c / lam0 = 5): 0.5 = 95 mu / (1 + 95 mu) + 5 mu, i.e.
    # 475 mu^2 + 52.5 mu - 0.5 = 0, mu = (sqrt(52.5^2 + 950) - 52.5) / 950 = 0.008820 (the Poisson rate
    # 0.5 / (95 + 5) = 0.005 is its lower end)
    a.observe(95.0, False)
    mu1 = (math.sqrt(52.5**2 + 4 * 475 * 0.5) - 52.5) / (2 * 475)
    assert mu1 == pytest.approx(0.0088200, abs=1e-7)
    assert pool.rate() == pytest.approx(mu1, rel=1e-9)
    # b has seen nothing itself, but its prior fell with a's unchanged observation
    assert b.rate() == pytest.approx(mu1, rel=1e-9)
    # a's posterior mean with no change: 1 / (T + 1 / lam_pool)
    assert a.rate() == pytest.approx(1.0 / (95.0 + 1.0 / mu1), rel=1e-9)
    # a change anywhere raises every page's prior: 1.5 = 95 mu / (1 + 95 mu) + 5 mu / (1 + 5 mu) + 5 mu
    b.observe(5.0, True)
    mu2 = pool.rate()
    assert 95 * mu2 / (1 + 95 * mu2) + 5 * mu2 / (1 + 5 * mu2) + 5 * mu2 == pytest.approx(1.5, rel=1e-9)
    assert mu2 == pytest.approx(0.072308, abs=1e-6)  # (K + c) / (E + X) = 1.5 / 105 is its lower end
    assert a.rate() == pytest.approx(1.0 / (95.0 + 1.0 / mu2), rel=1e-9)
    # b: posterior mode = MLE with 1 / lam_pool added to the unchanged time: 5 / (e^{5 lam} - 1) = 1 / mu2
    lam_b = b.rate()
    assert 5.0 / math.expm1(5.0 * lam_b) == pytest.approx(1.0 / mu2, rel=1e-6)
    # without a pool the estimator keeps its fixed prior (the research harness's behaviour)
    assert ChangeRateEstimator(prior_rate=0.2).rate() == 0.2


def test_scale_free_pooled_prior_uses_the_elapsed_time() -> None:
    pool = PooledChangeRate(initial_rate=None, prior_changes=0.1)
    pool.clock(2.0, 12.0)  # a page fetched at t = 2 looked at t = 12: 10 time units elapsed
    assert pool.rate() == pytest.approx(0.1 / 10.0)
    pool.observe(30.0, False)
    pool.clock(2.0, 42.0)
    # 0.1 = 30 mu / (1 + 30 mu) + 40 mu: 1200 mu^2 + 67 mu - 0.1 = 0
    assert pool.rate() == pytest.approx((math.sqrt(67.0**2 + 480.0) - 67.0) / 2400.0, rel=1e-9)
    assert pool.rate() > 0.1 / (30.0 + 40.0)  # the Poisson rate (K + c) / (E + X) is the lower end
    hook = WhittleRecrawl(prior_rate=None)
    assert hook(RecrawlArm("u", 1.0, 0.0, 0.0, 1, 0), 100.0) > 0.0
    with pytest.raises(ValueError):
        WhittleRecrawl(prior_rate=None, pooled=False)


def test_pooled_rate_recovers_the_mean_rate_from_long_intervals() -> None:
    """Pages with rates mean x Exp(1) (the replay's heterogeneous changes), each observed once over an
    interval of the order of 1 / mean (a documentation web's re-crawl phase): the marginal-likelihood pooled
    rate recovers the mean; the Poisson rate (K + c) / (E + X) of the intervals is less than half of it."""
    rng = random.Random(5)
    mean, t = 0.002, 700.0
    pool = PooledChangeRate(initial_rate=None)
    pool.clock(0.0, 1400.0)
    for _ in range(4000):
        pool.observe(t, rng.random() < -math.expm1(-mean * rng.expovariate(1.0) * t))
    assert pool.rate() == pytest.approx(mean, rel=0.1)
    assert (pool.changes + PRIOR_CHANGES) / (pool.exposure + 1400.0) < 0.5 * mean
    # the root solves K + c = sum mu t / (1 + mu t) + mu X
    mu = pool.rate()
    assert pool.changes + PRIOR_CHANGES == pytest.approx(4000 * mu * t / (1 + mu * t) + mu * 1400.0, rel=1e-6)
