"""Re-crawling retrieved documents in the live robot: change-rate estimation and the ephemeral Whittle index.

Pure code (no grpc, no clock): callers pass times, intervals and observations in. The research harnesses in
:mod:`oasis.freshness` (the full ephemeral model, baseline schedules, the vectorised index) build on this
module; the robot uses :class:`WhittleRecrawl` as the request controller's ``recrawl_index`` hook.

How a retrieved document becomes an arm of papers/002
------------------------------------------------------
A document with relevance ``r`` changes as a Poisson process of rate ``lam`` (changes per time unit). If it
was last crawled ``a`` time units ago, the relevance-weighted value that a re-crawl recovers is its expected
staleness

    x(a) = r * P(changed since the last crawl) = r * (1 - exp(-lam * a)).

With the scheduler's tick ``period`` (the T of papers/002) this is exactly the ephemeral-content state of
papers/002 Eqs. 2-3 with alpha = exp(-lam * period) and u = r * (1 - alpha): left passive, x(a + T) =
alpha x(a) + u; crawled, the next state is u (one period of possible change); and the ceiling u* = u / (1 -
alpha) is r itself. So the Whittle index of Theorem 1 (:func:`whittle_index`) applies unchanged with value =
relevance and state = expected staleness, and :func:`recrawl_index` returns it.

Unit: Theorem 1's index is the passivity subsidy (reward per period) at which crawling and waiting are
equally good, measured in the unit of the state, here relevance. It lies in [0, r / C]: near 0 just after a
crawl, tending to r / C when the copy is almost surely stale. A fringe document's expected relevance gain
per fetch is likewise relevance per fetch, so both can sit in one priority queue (highest first). Why this
is what one fetch adds to the collection's quality (papers/004 Eqs. 1-2): with no deletions S_C <= S_V, so
R = S_CV / S_V <= F = S_CV / S_C and recall binds in M = min(R, F); a new page of relevance r and a
refreshed stale page of relevance r each add r / S_V to M (when deletions make F bind, a new page adds only
r (1 - F) / S_C against r / S_C for a refresh: :func:`new_page_weight`, applied by the controller).

(Not to be confused with :func:`oasis.robot.scheduling.equations.whittle_index`, the learned index
v(x) = Q(x,1) - Q(x,0) of papers/004 Eq. 9 for fringe documents.)
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

# Tolerance used when a logarithm lands (up to rounding) on an integer: on the discrete orbit
# X(k) = u (1 - alpha^k) / (1 - alpha) the exact value of log_alpha(...) is the integer k.
_CEIL_TOL = 1e-9

# ---------------------------------------------------------------------------------------------------------
# (a) The closed-form Whittle index of ephemeral content (papers/002 Theorem 1)
# ---------------------------------------------------------------------------------------------------------


def eta(x: float, alpha: float, u: float) -> int:
    """Periods of passivity from the reset state until the orbit reaches ``x`` (papers/002 Theorem 1).

    eta(x) = ceil(log+_alpha((u - (1 - alpha) x) / u)), log+ being 0 for non-positive arguments.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if u <= 0:
        raise ValueError(f"u must be > 0, got {u}")
    arg = (u - (1.0 - alpha) * x) / u
    if arg <= 0.0 or arg >= 1.0:
        return 0
    v = math.log(arg) / math.log(alpha)
    return max(0, math.ceil(v - _CEIL_TOL))


def whittle_index(x: float, alpha: float, u: float, C: float = 1.0) -> float:
    """The closed-form Whittle index gamma_i(x) of papers/002 Theorem 1.

    gamma(x) = (1/C) [eta(x) ((1 - alpha) x - u) + (1 - alpha^eta(x)) / (1 - alpha) u].

    The paper's state space is [0, u*] with u* = u / (1 - alpha); at x -> u* the formula tends to u*/C (eta
    grows without bound while eta ((1 - alpha) x - u) -> 0). For x >= u* (a transient initial state, or a
    stochastic state above its mean ceiling) the crawler is indifferent when the subsidy equals the
    reward of crawling now, x / C (passivity only decays the state towards u*), which is continuous at u*.
    """
    if C <= 0:
        raise ValueError(f"C must be > 0, got {C}")
    if x <= 0.0:
        return 0.0
    u_star = u / (1.0 - alpha)
    if x >= u_star * (1.0 - 1e-12):
        return x / C
    n = eta(x, alpha, u)
    # papers/002 Theorem 1
    return (n * ((1.0 - alpha) * x - u) + (1.0 - alpha**n) / (1.0 - alpha) * u) / C


# ---------------------------------------------------------------------------------------------------------
# (b) Change-rate estimation from what crawls observe
# ---------------------------------------------------------------------------------------------------------


def cho_garcia_molina_rate(n: int, changes: int, interval: float) -> float:
    """Bias-reduced estimate of a Poisson change rate from ``n`` regular accesses ``interval`` apart.

    Cho & Garcia-Molina, "Estimating Frequency of Change", ACM TOIT 3(3), 2003, Section 4 (estimator r-hat
    of Eq. 4): lam = -log((n - X + 0.5) / (n + 0.5)) / I, X = accesses that detected a change. Unlike the
    naive MLE -log((n - X) / n) / I it stays finite when every access saw a change.
    """
    if n < 0 or changes < 0 or changes > n:
        raise ValueError(f"need 0 <= changes <= n, got n={n}, changes={changes}")
    if not interval > 0:
        raise ValueError(f"interval must be > 0, got {interval}")
    # Cho & Garcia-Molina 2003, bias-reduced estimator for regular access
    return -math.log((n - changes + 0.5) / (n + 0.5)) / interval


def poisson_rate_mle(
    changed: Iterable[float], unchanged: Iterable[float], *, tol: float = 1e-10, max_iter: int = 200
) -> float:
    """Maximum-likelihood Poisson change rate from irregular access intervals.

    Each access reports whether the document changed during the interval ``t`` since the previous access:
    P(changed) = 1 - exp(-lam t). The log-likelihood sum_c log(1 - e^{-lam t_c}) - lam sum_u t_u is concave
    and its stationary point solves (Cho & Garcia-Molina 2003, Section 5, irregular access)

        sum_{changed} t_c / (exp(lam t_c) - 1) = sum_{unchanged} t_u.

    Returns 0 if nothing changed and ``math.inf`` if everything did (the plain MLE's two degenerate ends;
    :class:`ChangeRateEstimator` adds the bias correction).
    """
    tc = [float(t) for t in changed]
    tu_sum = float(sum(unchanged))
    if any(t <= 0 for t in tc) or tu_sum < 0:
        raise ValueError("intervals must be > 0")
    if not tc:
        return 0.0
    if tu_sum == 0.0:
        return math.inf
    return _solve_mle(tc, tu_sum, tol=tol, max_iter=max_iter)


def _solve_mle(tc: list[float], tu_sum: float, *, tol: float, max_iter: int) -> float:
    t = np.asarray(tc, dtype=np.float64)

    def g(lam: float) -> float:
        # decreasing in lam: from +inf at lam -> 0 to -tu_sum at lam -> inf
        return float((t / np.expm1(np.minimum(lam * t, 700.0))).sum()) - tu_sum

    # bracket: g(lo) > 0 >= g(hi); then bisection in log space (the root can span many decades)
    lo = hi = 1.0 / float(t.mean())
    while g(lo) <= 0:
        lo /= 4.0
        if lo < 1e-300:
            return 0.0
    while g(hi) > 0:
        hi *= 4.0
        if hi > 1e300:
            return math.inf
    for _ in range(max_iter):
        mid = math.sqrt(lo * hi)
        if g(mid) > 0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= tol * hi:
            break
    return math.sqrt(lo * hi)


@dataclass
class ChangeRateEstimator:
    """Online estimate of one document's Poisson change rate from its crawl history.

    Call :meth:`observe` after every re-crawl with the time since the previous crawl and whether the content
    differed. The estimate is the irregular-interval MLE (:func:`poisson_rate_mle`) with Cho &
    Garcia-Molina's bias correction: half an extra *unchanged* observation at the mean interval. For regular
    intervals this equals their bias-reduced estimator exactly (checked in the tests), and it stays finite
    when every crawl saw a change. With no observation it returns ``prior_rate``; while no change has been
    seen it returns half a change over the observed time, 0.5 / sum(intervals), capped by ``prior_rate`` (the
    corrected MLE would be 0 and starve the document forever). It never falls below ``min_rate``. Only the
    last ``window`` observations are kept, so the estimate follows a drifting rate.

    With a ``pool`` (:class:`PooledChangeRate`, shared by all documents) the prior is learned instead:
    ``prior_rate`` is ignored, every observation also feeds the pool, and the estimate is the posterior under
    the pooled exponential prior of mean lam_pool: with no observation lam_pool; with no change seen the
    posterior mean 1 / (T + 1/lam_pool); otherwise the posterior mode, the MLE above with the prior's
    1/lam_pool added to the unchanged time (it replaces the half-observation bias correction).
    """

    prior_rate: float = 0.1
    min_rate: float = 1e-6
    window: int = 256
    pool: PooledChangeRate | None = None
    _changed: deque[float] = field(default_factory=deque, repr=False)
    _unchanged: deque[float] = field(default_factory=deque, repr=False)
    _order: deque[tuple[bool, float]] = field(default_factory=deque, repr=False)
    _cached: float | None = field(default=None, repr=False)
    _cached_pool: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        if not self.prior_rate > 0:
            raise ValueError(f"prior_rate must be > 0, got {self.prior_rate}")
        if not 0 <= self.min_rate <= self.prior_rate:
            raise ValueError("need 0 <= min_rate <= prior_rate")
        if self.window < 1:
            raise ValueError("window must be >= 1")

    def observe(self, interval: float, changed: bool) -> None:
        if not (interval > 0 and math.isfinite(interval)):
            raise ValueError(f"interval must be finite and > 0, got {interval}")
        self._cached = None
        self._order.append((changed, interval))
        (self._changed if changed else self._unchanged).append(interval)
        if self.pool is not None:
            self.pool.observe(interval, changed)
        if len(self._order) > self.window:
            old_changed, old_t = self._order.popleft()
            (self._changed if old_changed else self._unchanged).remove(old_t)
            if self.pool is not None:
                self.pool.forget(old_t, old_changed)

    @property
    def n(self) -> int:
        return len(self._order)

    @property
    def changes(self) -> int:
        return len(self._changed)

    def rate(self) -> float:
        if self.pool is not None:
            return self._pooled_rate(self.pool.rate())
        if self._cached is None:
            self._cached = self._rate()
        return self._cached

    def _pooled_rate(self, lam_pool: float) -> float:
        if not self._order:
            return max(self.min_rate, lam_pool)
        unchanged = sum(self._unchanged)
        if not self._changed:
            return max(self.min_rate, 1.0 / (unchanged + 1.0 / lam_pool))
        # the MLE solve is the costly part: re-use it while the pooled prior moved by less than 1%
        if (
            self._cached is not None
            and self._cached_pool > 0
            and abs(lam_pool / self._cached_pool - 1) < 0.01
        ):
            return self._cached
        lam = _solve_mle(list(self._changed), unchanged + 1.0 / lam_pool, tol=1e-10, max_iter=200)
        self._cached, self._cached_pool = max(self.min_rate, lam), lam_pool
        return self._cached

    def _rate(self) -> float:
        if not self._order:
            return self.prior_rate
        if not self._changed:
            # No change seen yet: bias-reduced bound, Cho & Garcia-Molina's 0.5 rule applied to the total
            # observed time (half a change in the observed time), never above the prior.
            total = sum(self._unchanged)
            return max(self.min_rate, min(self.prior_rate, 0.5 / total))
        mean_t = (sum(self._changed) + sum(self._unchanged)) / self.n
        # bias correction: +0.5 unchanged observation at the mean interval
        lam = _solve_mle(list(self._changed), sum(self._unchanged) + 0.5 * mean_t, tol=1e-10, max_iter=200)
        return max(self.min_rate, lam)


# pseudo-changes of the pooled prior: Jeffreys' prior for a Poisson rate (shape 1/2, Cho & Garcia-Molina's
# half-change correction), with the crawl's elapsed time as its exposure (scale-free; issue 16, chosen on the
# training split from {0.1, 0.5, 1}, see docs/replay.md)
PRIOR_CHANGES = 0.5
# a page's past as its first retrieval tells it (WhittleRecrawl.observe_history): HTTP dates are whole
# seconds, so a Last-Modified within HISTORY_RESOLUTION of the reference time is neither before nor after
# it, and one within it of the response is what dynamic servers send for every page ("modified now")
HISTORY_RESOLUTION = 1.0
HISTORY_PENDING = 4096  # first retrievals whose history waits for the hook's first look at the page


class PooledChangeRate:
    """Empirical-Bayes prior of every document's change rate, pooled from all documents' observations.

    On a web where nothing changes, a per-document estimate learns slowly (half a change over the document's
    own observed time, so a document re-fetched once still looks likely to have changed after as long
    again) and a constant prior never learns at all. Pooling learns from every re-crawl of every document.

    A document's prior is Gamma(shape 1, rate 1/lam_pool) (an exponential prior of mean lam_pool):
    unchanged observation time t multiplies the likelihood by exp(-lam t), so with no change seen the
    posterior mean is 1 / (T_i + 1/lam_pool) <= lam_pool, falling with the document's own time *and* with
    every unchanged re-crawl anywhere.

    lam_pool is that prior's own (type-II, marginal) likelihood estimate: under lam ~ Exp(mean mu) an
    interval of length t sees no change with probability E[e^{-lam t}] = 1 / (1 + mu t) (a Lomax law), so
    the observations' composite log-likelihood is sum_changed log(mu t) - sum_all log(1 + mu t). With c =
    ``prior_changes`` pseudo-changes over an exposure X (Jeffreys' half change, Cho & Garcia-Molina's
    correction) its stationary point solves

        K + c = sum_j mu t_j / (1 + mu t_j) + mu X,

    K the observed intervals that saw a change (docs/replay.md "Rates before any observation"). The right
    side increases in mu, so the root is unique and lies in [(K + c) / (E + X), (K + c) / X], E = sum_j t_j
    the observed time. For short intervals (mu t << 1) it is the Poisson rate (K + c) / (E + X), the
    estimate before issue 10's session 5; for intervals of the order of 1 / mu it is higher: counting
    intervals that saw a change as single changes, and ignoring that a document unchanged over a long
    interval is likelier a slow one, made (K + c) / (E + X) 2-3x too low on the test webs (docs/replay.md).
    The intervals are kept in geometric bins (ratio ``2**(1/8)``; t / (1 + mu t) is evaluated at each bin's
    mean interval, within 0.1 % of the exact sum), so a solve costs O(bins) and is cached.

    The exposure X is c / ``initial_rate`` (lam0: the value before any observation) or, with
    ``initial_rate=None`` (scale-free), the crawl's elapsed time: before any observation, "c changes in the
    time the crawl has been running", which needs no time unit. The caller advances ``elapsed``
    (:meth:`clock`).
    """

    # geometric bins of the observed intervals: round(log2(t) * _BINS_PER_OCTAVE)
    _BINS_PER_OCTAVE = 8

    def __init__(self, initial_rate: float | None = 0.1, prior_changes: float = PRIOR_CHANGES) -> None:
        if initial_rate is not None and not (initial_rate > 0 and math.isfinite(initial_rate)):
            raise ValueError(f"initial_rate must be finite and > 0, got {initial_rate}")
        if not (prior_changes > 0 and math.isfinite(prior_changes)):
            raise ValueError(f"prior_changes must be finite and > 0, got {prior_changes}")
        self.initial_rate = initial_rate
        self.prior_changes = prior_changes
        self.changes = 0  # K: observed intervals that saw a change
        self.exposure = 0.0  # E: total observed time
        self.start = math.inf  # earliest fetch time seen (scale-free prior)
        self.elapsed = 0.0
        self._bins: dict[int, list[float]] = {}  # bin -> [intervals, their sum]
        self._cached: tuple[float, float] | None = None  # (exposure X it was solved at, lam_pool)

    def clock(self, fetched_at: float, now: float) -> None:
        """A document fetched at ``fetched_at`` was looked at ``now``: advance the crawl's elapsed time."""
        self.start = min(self.start, fetched_at)
        self.elapsed = max(self.elapsed, now - self.start)

    def _bin(self, interval: float) -> list[float]:
        key = round(math.log2(interval) * self._BINS_PER_OCTAVE)
        b = self._bins.get(key)
        if b is None:
            b = self._bins[key] = [0.0, 0.0]
        return b

    def observe(self, interval: float, changed: bool) -> None:
        self.exposure += interval
        self.changes += int(changed)
        b = self._bin(interval)
        b[0] += 1.0
        b[1] += interval
        self._cached = None

    def forget(self, interval: float, changed: bool) -> None:
        """An observation left a document's window."""
        self.exposure = max(0.0, self.exposure - interval)
        self.changes = max(0, self.changes - int(changed))
        b = self._bin(interval)
        b[0] = max(0.0, b[0] - 1.0)
        b[1] = max(0.0, b[1] - interval) if b[0] > 0 else 0.0
        self._cached = None

    def rate(self) -> float:
        c = self.prior_changes
        x = c / self.initial_rate if self.initial_rate is not None else max(self.elapsed, 1e-12)
        cached = self._cached
        # the root moves by less than X does: re-use it while X moved by less than 0.1 %
        if cached is not None and abs(x / cached[0] - 1.0) < 1e-3:
            return cached[1]
        k = self.changes + c
        lo = k / (self.exposure + x)
        if self.changes == 0 and self.exposure == 0.0:
            mu = lo
        else:
            mu = _lomax_root(k, x, [(n, s / n) for n, s in self._bins.values() if n > 0], lo, k / x)
        self._cached = (x, mu)
        return mu


def _lomax_root(k: float, x: float, bins: list[tuple[float, float]], lo: float, hi: float) -> float:
    """The mu in [lo, hi] with k = sum_b n_b mu t_b / (1 + mu t_b) + mu x (:class:`PooledChangeRate`).

    f(mu) = k - mu x - sum_b n_b mu t_b / (1 + mu t_b) is decreasing and convex (each mu t / (1 + mu t) is
    concave), and f(lo) >= 0: Newton's iterates from lo rise monotonically to the root (each tangent lies
    below f), quadratically; capped by hi."""
    mu = lo
    for _ in range(50):
        f = k - mu * x
        df = -x
        for n, t in bins:
            d = 1.0 / (1.0 + mu * t)
            f -= n * mu * t * d
            df -= n * t * d * d
        if f <= 0.0 or df >= 0.0:
            break
        step = -f / df
        mu = min(hi, mu + step)
        if step <= 1e-12 * mu or mu >= hi:
            break
    return mu


# ---------------------------------------------------------------------------------------------------------
# (c) The ephemeral Whittle index for one retrieved document
# ---------------------------------------------------------------------------------------------------------


def expected_staleness(relevance: float, change_rate: float, age: float) -> float:
    """x(a) = r (1 - exp(-lam a)): relevance times the probability of a change since the last crawl."""
    if relevance < 0 or change_rate < 0 or age < 0:
        raise ValueError("relevance, change_rate and age must be >= 0")
    return relevance * -math.expm1(-change_rate * age)


def recrawl_index(
    relevance: float, change_rate: float, age: float, *, period: float = 1.0, cost: float = 1.0
) -> float:
    """Whittle index for re-crawling one retrieved document (papers/002 Theorem 1 with value = relevance).

    Args:
        relevance: r(i) >= 0, the document's topic relevance (the value of a fresh copy).
        change_rate: lam >= 0, estimated Poisson change rate, changes per time unit (e.g. from
            :class:`ChangeRateEstimator`).
        age: time since the document was last fetched, same time unit.
        period: the scheduler's tick T (time between scheduling decisions), same time unit.
        cost: crawl cost C (e.g. relative fetch cost or politeness weight), > 0.

    Returns:
        gamma(x) with alpha = exp(-lam T), u = r (1 - alpha), x = r (1 - exp(-lam age)) -- a value in
        [0, r / C], increasing in ``age``, ``relevance`` and (for fixed age) ``change_rate``. Unit: relevance
        per fetch per period, the unit of a fringe document's expected relevance gain per fetch, so both kinds
        of arm can be ranked in one queue.
    """
    if not (relevance >= 0 and math.isfinite(relevance)):
        raise ValueError(f"relevance must be finite and >= 0, got {relevance}")
    if not (change_rate >= 0 and math.isfinite(change_rate)):
        raise ValueError(f"change_rate must be finite and >= 0, got {change_rate}")
    if not age >= 0:
        raise ValueError(f"age must be >= 0, got {age}")
    if not (period > 0 and math.isfinite(period)):
        raise ValueError(f"period must be finite and > 0, got {period}")
    if not (cost > 0 and math.isfinite(cost)):
        raise ValueError(f"cost must be finite and > 0, got {cost}")
    if relevance == 0.0 or change_rate == 0.0 or age == 0.0:
        return 0.0
    alpha = math.exp(-change_rate * period)
    if alpha <= 0.0 or alpha >= 1.0:
        # change_rate * period outside double range: the copy is stale after one tick (alpha = 0) or never
        # (alpha = 1); the index degenerates to the state itself.
        return expected_staleness(relevance, change_rate, age) / cost if alpha <= 0.0 else 0.0
    u = relevance * (1.0 - alpha)
    x = expected_staleness(relevance, change_rate, age)
    return whittle_index(x, alpha, u, cost)


def freshness_index(relevance: float, change_rate: float, age: float) -> float:
    """Whittle index of a re-crawl arm for time-averaged freshness (the objective P = integral of min(R, F)
    of papers/004, where a copy counts while it is fresh), derived in docs/replay.md "One queue in one unit".

    A document of relevance r changes as a Poisson process of rate lam; it earns r per unit time while its
    copy is fresh (P(fresh at age a) = e^{-lam a}) and a passive arm earns a subsidy W per unit time (a
    crawl forgoes one unit). The threshold policy "re-crawl at age tau" earns on average
    g(tau) = (r (1 - e^{-lam tau}) / lam + W (tau - 1)) / tau; g'(tau) = 0 gives the subsidy at which
    re-crawling at age tau is optimal, W(tau) = r [(1 - e^{-lam tau}) / lam - tau e^{-lam tau}]: the fresh
    time a re-crawl now buys, (1 - e^{-lam a}) / lam, minus what waiting still earns. It increases in the
    age from 0 (just fetched) to r / lam (a copy surely stale is worth its expected fresh time after a
    refresh): a document that changes faster than it can be kept fresh is worth less, unlike papers/002's
    ephemeral index (which tends to r whatever the rate). Unit: relevance x time (fresh time gained per
    fetch); for lam a -> 0 it is r lam a^2 / 2.
    """
    if not (relevance >= 0 and math.isfinite(relevance)):
        raise ValueError(f"relevance must be finite and >= 0, got {relevance}")
    if not (change_rate >= 0 and math.isfinite(change_rate)):
        raise ValueError(f"change_rate must be finite and >= 0, got {change_rate}")
    if not age >= 0:
        raise ValueError(f"age must be >= 0, got {age}")
    x = change_rate * age
    if relevance == 0.0 or x == 0.0:
        return 0.0
    if x < 1e-4:  # series of (1 - e^-x) - x e^-x = x^2/2 - x^3/3 + ... (no cancellation)
        return relevance * age * (x / 2.0 - x * x / 3.0)
    return relevance * (-math.expm1(-x) - x * math.exp(-x)) / change_rate


# ---------------------------------------------------------------------------------------------------------
# (d) Re-crawl hooks for the request controller: ``hook(arm, now) -> float`` in the fringe's unit (relevance)
# ---------------------------------------------------------------------------------------------------------


class CrawledDoc(Protocol):
    """What the controller knows about a retrieved document (duck-typed; the robot's ``RecrawlArm``)."""

    @property
    def url(self) -> str: ...
    @property
    def relevance(self) -> float: ...
    @property
    def last_fetch(self) -> float: ...
    @property
    def fetches(self) -> int: ...
    @property
    def changes(self) -> int: ...


SITE_UPDATE_MIN = 4  # changes stamped within one HTTP-date second of each other that make a site-wide update
# ... and that many times more than the other changes found lately put in a window of that width on average:
# a web whose pages change often stamps a few changes in one second now and then without any update
SITE_UPDATE_EXCESS = 4.0
SITE_UPDATE_LOG = 256  # recent re-crawls (and the changes they found) a site-wide update is judged from


class SiteUpdate:
    """A site-wide update (a deploy, a regenerated site) seen in the ``Last-Modified`` of re-crawls.

    A Poisson rate per page cannot foresee a one-off event that changes many pages at once: after one, the
    pages not re-crawled since keep their low rates and the freshness estimate stays high while most copies
    are stale. But such an event stamps every page it changes with the same ``Last-Modified``. When at least
    ``SITE_UPDATE_MIN`` re-crawls found changes stamped within a second of the same time T (whole-second
    dates), and ``SITE_UPDATE_EXCESS`` times more than the other changes found lately (the last
    ``SITE_UPDATE_LOG``, from the oldest stamp to the latest re-crawl) put in so short a window on average,
    T is a site-wide update, and the share of pages it changed is measured directly: among the pages
    re-crawled after T whose previous fetch was before T, the share found changed at T, q = (hits + 1/2) /
    (re-crawls + 1). A held copy fetched before T is then still fresh with probability (1 - q) e^{-lam a}
    instead of e^{-lam a} (:meth:`survival`). Only the latest update counts; a copy fetched after it is
    not touched."""

    def __init__(self) -> None:
        self._changes: deque[float] = deque(maxlen=SITE_UPDATE_LOG)  # change times found by re-crawls
        self._recrawls: deque[tuple[float, float, float | None]] = deque(maxlen=SITE_UPDATE_LOG)
        self._cached: tuple[float, float] | None = None
        self._dirty = False

    def recrawl(self, previous: float, now: float, changed_at: float | None) -> None:
        """A page fetched at ``previous`` was re-crawled at ``now``; ``changed_at``: its ``Last-Modified``
        (our clock) when the re-crawl found it changed, else None."""
        self._recrawls.append((previous, now, changed_at))
        if changed_at is not None:
            self._changes.append(changed_at)
        self._dirty = True

    def update(self) -> tuple[float, float] | None:
        """(T, q) of the latest site-wide update, or None."""
        if self._dirty:
            self._dirty = False
            self._cached = self._judge()
        return self._cached

    def _judge(self) -> tuple[float, float] | None:
        times = sorted(self._changes)
        if len(times) < SITE_UPDATE_MIN:
            return None
        width = 2 * HISTORY_RESOLUTION
        span = max(max(now for _, now, _ in self._recrawls) - times[0], width)
        at = None
        lo = 0
        for hi, t in enumerate(times):  # the latest window of 2 s holding that many change times
            while t - times[lo] > width:
                lo += 1
            inside = hi - lo + 1
            # the other changes found, as many per window of that width as they hold on average
            usual = (len(times) - inside) * width / span
            if inside >= max(SITE_UPDATE_MIN, SITE_UPDATE_EXCESS * usual):
                at = times[(lo + hi) // 2]
        if at is None:
            return None
        exposed = hits = 0
        for previous, now, changed_at in self._recrawls:
            if previous < at - HISTORY_RESOLUTION and now > at + HISTORY_RESOLUTION:
                exposed += 1
                hits += changed_at is not None and abs(changed_at - at) <= HISTORY_RESOLUTION
        return at, (hits + 0.5) / (exposed + 1.0)

    def survival(self, last_fetch: float) -> float:
        """The factor of a copy fetched at ``last_fetch``: 1 - q if before the latest update, else 1."""
        found = self.update()
        if found is None or last_fetch >= found[0] - HISTORY_RESOLUTION:
            return 1.0
        return 1.0 - found[1]


@dataclass
class DocHistory:
    """One document's fetch/change counters as a hook last saw them, its estimator and its interval."""

    fetches: int
    changes: int
    last_fetch: float
    estimator: ChangeRateEstimator
    interval: float = 0.0
    # this document's last terms in :class:`WhittleRecrawl`'s collection sums (relevance; relevance x
    # P(fresh); relevance x P(deleted))
    mass: float = 0.0
    fresh: float = 0.0
    deleted: float = 0.0


def new_page_weight(collection: float, fresh: float, web: float) -> float:
    """What a new page of relevance r adds to M = min(R, F), over what a refresh of a stale copy of
    relevance r adds (papers/004 Eqs. 1-2; docs/replay.md "One queue in one unit").

    ``collection`` = S_C (relevance of every copy held), ``fresh`` = S_CV (of the copies still current),
    ``web`` = S_V (of the pages on the web). A new page adds r to S_CV and S_C, a refresh adds r to S_CV
    only: while S_C <= S_V recall binds (R <= F) and both add r / S_V to M, so the weight is 1; once
    deletions make S_C > S_V, F binds and a new page adds dF = r (1 - F) / (S_C + r) against r / S_C for a
    refresh, so the weight is (1 - F) (first order in r / S_C). An empty collection: 1.
    """
    if collection < 0 or fresh < 0 or web < 0:
        raise ValueError("relevance sums must be >= 0")
    if collection <= web or collection == 0.0:
        return 1.0
    return max(0.0, 1.0 - min(fresh, collection) / collection)


class PerDocumentTracker:
    """Each document's fetch/change counters as of the previous call; ``_fetched`` sees every new fetch.

    The base of every re-crawl hook (:class:`WhittleRecrawl` here, the baseline schedules'
    ``oasis.freshness.recrawl.ScheduleRecrawl``): subclasses say what a first sighting and a new fetch do.
    """

    def __init__(self) -> None:
        self._docs: dict[str, DocHistory] = {}

    def _first_seen(self, arm: CrawledDoc) -> DocHistory:
        raise NotImplementedError

    def _fetched(self, h: DocHistory, interval: float, changed: bool) -> None:
        """The arm was fetched again, ``interval`` after the fetch ``h`` last saw; ``changed`` since then."""
        raise NotImplementedError

    def _history(self, arm: CrawledDoc) -> DocHistory:
        h = self._docs.get(arm.url)
        if h is None:
            h = self._first_seen(arm)
            self._docs[arm.url] = h
        elif arm.fetches > h.fetches:
            self._fetched(h, arm.last_fetch - h.last_fetch, arm.changes > h.changes)
            h.fetches, h.changes, h.last_fetch = arm.fetches, arm.changes, arm.last_fetch
        return h


class WhittleRecrawl(PerDocumentTracker):
    """``recrawl_index`` hook: per-document change-rate estimate + a Whittle index.

    ``index="freshness"`` (default): :func:`freshness_index` (the index of time-averaged freshness, the
    objective P = integral of min(R, F)) times the pooled prior rate, i.e. in relevance gained per fetch: a
    new page of relevance r found now stays fresh 1 / lam_prior on average, so it is worth r x 1 / lam_prior
    in the index's unit, and dividing both by 1 / lam_prior puts re-crawl arms in the fringe's unit.
    ``index="ephemeral"``: papers/002 Theorem 1 (:func:`recrawl_index`), the index before issue 10.

    Each call compares the arm's fetch/change counters with the ones it saw last time; a new fetch adds one
    observation (interval since the previous fetch, changed or not) to that document's
    :class:`ChangeRateEstimator`. The value is :func:`recrawl_index` at age ``now - last_fetch``.

    ``pooled`` (default): the documents' prior is learned from all of them (:class:`PooledChangeRate`, an
    empirical-Bayes prior); ``PRIOR_CHANGES`` pseudo-changes spread over the crawl's elapsed time (the
    default ``prior_rate=None``: scale-free, no rate constant; issue 16) or, given a ``prior_rate``, at that
    rate; on a web where nothing changes the rates fall with every unchanged re-crawl anywhere.
    ``pooled=False``: the fixed ``prior_rate`` of each document's own estimator.

    The hook also keeps the collection as its estimates see it (:meth:`new_page_weight`): with deletions
    found by re-crawls, F may bind in M = min(R, F) and a new page is then worth (1 - F) of a refresh.
    """

    def __init__(
        self,
        *,
        period: float = 1.0,
        prior_rate: float | None = None,
        window: int = 256,
        pooled: bool = True,
        index: str = "freshness",
    ) -> None:
        if not period > 0:
            raise ValueError(f"the re-crawl period must be > 0 seconds, got {period}")
        if index not in ("freshness", "ephemeral"):
            raise ValueError(f"index must be 'freshness' or 'ephemeral', got {index!r}")
        super().__init__()
        self.period = period
        self.index = index
        if prior_rate is None and not pooled:
            raise ValueError("a scale-free prior (prior_rate=None) needs pooled=True")
        self.prior_rate = prior_rate
        self.window = window
        self.pool: PooledChangeRate | None = PooledChangeRate(prior_rate) if pooled else None
        # the collection as the estimates see it (each document's terms as of its last evaluation, so one
        # re-key sweep behind): S_C, expected S_CV, expected relevance of copies whose page was deleted
        self.collection = 0.0
        self.fresh = 0.0
        self.deleted = 0.0
        self.deletions = 0  # re-crawls that found the page deleted, and the time they covered
        self.deletion_exposure = 0.0
        # url -> (interval, changed): a first retrieval's history (observe_history), until _first_seen
        self._pending: dict[str, tuple[float, bool]] = {}
        self.site = SiteUpdate()  # a site-wide update seen in re-crawls' Last-Modified (observe_recrawl)

    def observe_recrawl(self, url: str, now: float, changed: bool, modified_ago: float | None) -> None:
        """A re-crawl of ``url`` at ``now`` found it ``changed`` (then ``modified_ago``: its Last-Modified,
        seconds before the response); called before the controller reports it, so the page's previous
        fetch is still the one this hook holds (:class:`SiteUpdate`). A change without a date that tells
        when is left out (no date, or one in the response's own second: "modified now", what dynamic pages
        say every time), so the share of pages an update changed counts only re-crawls it can judge."""
        h = self._docs.get(url)
        if h is None:
            return
        changed_at = None
        if changed:
            if modified_ago is None or not math.isfinite(modified_ago) or modified_ago < HISTORY_RESOLUTION:
                return
            changed_at = now - modified_ago
        self.site.recrawl(h.last_fetch, now, changed_at)

    def observe_history(self, url: str, interval: float, modified_ago: float) -> bool:
        """What the first retrieval of ``url`` says of the page's past, before any re-crawl: its server's
        ``Last-Modified`` was ``modified_ago`` seconds before the response, and the page was retrieved
        ``interval`` seconds after a reference time fixed independently of the page (the crawl's start).
        Whether the page changed between the reference and the retrieval is one observation of its
        Poisson change process over that interval, exactly as a re-crawl's (P(changed) = 1 - e^{-lam t}:
        the last change is after the reference iff ``modified_ago < interval``); it joins the page's
        estimator, and so the pooled prior, when the hook first sees the page.

        So the pooled rate learns from every first retrieval, not from re-crawls only: before this, a robot
        whose fringe outranked every re-crawl learned nothing about change, and a site-wide update during
        its first pass went unseen until the fringe was empty. A Last-Modified within a second of the
        response (dynamic pages say "modified now") or of the reference (whole-second dates) tells
        nothing and is left out. Returns whether the observation was kept."""
        if not (math.isfinite(interval) and math.isfinite(modified_ago)) or url in self._docs:
            return False
        if modified_ago <= HISTORY_RESOLUTION or interval <= 2 * HISTORY_RESOLUTION:
            return False
        if modified_ago >= interval:
            changed = False
        elif modified_ago + HISTORY_RESOLUTION < interval:
            changed = True
        else:
            return False
        if len(self._pending) >= HISTORY_PENDING:  # never looked at (e.g. below the index's threshold)
            del self._pending[next(iter(self._pending))]
        self._pending[url] = (interval, changed)
        return True

    def _first_seen(self, arm: CrawledDoc) -> DocHistory:
        estimator = ChangeRateEstimator(
            prior_rate=self.prior_rate if self.prior_rate is not None else 1.0,
            window=self.window,
            pool=self.pool,
        )
        history = self._pending.pop(arm.url, None)
        if history is not None:
            estimator.observe(*history)
        return DocHistory(
            fetches=arm.fetches, changes=arm.changes, last_fetch=arm.last_fetch, estimator=estimator
        )

    def _fetched(self, h: DocHistory, interval: float, changed: bool) -> None:
        if interval > 0:
            h.estimator.observe(interval, changed)

    def rate(self, arm: CrawledDoc) -> float:
        return self._history(arm).estimator.rate()

    def deletion_rate(self) -> float:
        """Pooled rate at which retrieved pages are deleted: deletions found over the re-crawl time observed
        (the MLE: 0 until a re-crawl has found a deletion, so a web without deletions keeps weight 1)."""
        exposure = self.deletion_exposure + (self.pool.exposure if self.pool is not None else 0.0)
        return self.deletions / exposure if exposure > 0 else 0.0

    def gone(self, url: str, interval: float, deleted: bool) -> None:
        """A re-crawl found the retrieved page ``url`` gone (``deleted``; else a fetch error) ``interval``
        after its previous fetch: it leaves the collection sums (the controller calls this)."""
        h = self._docs.pop(url, None)
        if h is not None:
            self.collection -= h.mass
            self.fresh -= h.fresh
            self.deleted -= h.deleted
        if deleted and interval > 0:
            self.deletions += 1
            self.deletion_exposure += interval

    def new_page_weight(self, fringe_relevance: float) -> float:
        """:func:`new_page_weight` of the estimated collection: S_C, expected S_CV and S_V = S_C - the
        expected relevance of deleted copies + ``fringe_relevance`` (the estimated relevance of the located
        pages not yet fetched; pages not located yet are unknown and left out)."""
        collection = max(0.0, self.collection)
        web = max(0.0, collection - self.deleted) + max(0.0, fringe_relevance)
        return new_page_weight(collection, max(0.0, self.fresh), web)

    def __call__(self, arm: CrawledDoc, now: float) -> float:
        if self.pool is not None:
            self.pool.clock(arm.last_fetch, now)
        h = self._history(arm)
        rate = h.estimator.rate()
        age = max(0.0, now - arm.last_fetch)
        # this document's terms in the collection sums (P(fresh) = P(no change and no deletion))
        r, delta = arm.relevance, self.deletion_rate()
        alive = math.exp(-delta * age)
        mass, fresh, deleted = r, r * alive * math.exp(-rate * age), r * (1.0 - alive)
        self.collection += mass - h.mass
        self.fresh += fresh - h.fresh
        self.deleted += deleted - h.deleted
        h.mass, h.fresh, h.deleted = mass, fresh, deleted
        if self.index == "ephemeral":
            return recrawl_index(arm.relevance, rate, age, period=self.period)
        # the freshness index (relevance x fresh time gained) over the fresh time a new page buys, 1 /
        # lam_prior (the rate a page not yet observed is expected to have): relevance per fetch, the unit of
        # the fringe value (docs/replay.md "One queue in one unit")
        prior = self.pool.rate() if self.pool is not None else (self.prior_rate or 1.0)
        return freshness_index(arm.relevance, rate, age) * prior


# ---------------------------------------------------------------------------------------------------------
# (e) Baseline re-crawl schedules (uniform, Nutch's AdaptiveFetchSchedule) and their hook
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

    def next_fetch(
        self, fetch_time: float, interval: float, changed: bool, modified_time: float
    ) -> tuple[float, float]:
        """(next interval, time the document is next due)."""
        return self.interval, fetch_time + self.interval

    def priority(self, age: float, interval: float) -> float:
        """Overdue ratio age / interval; a document is due at >= 1."""
        return age / self.interval


@dataclass(frozen=True, kw_only=True)
class AdaptiveFetchSchedule:
    """Apache Nutch's AdaptiveFetchSchedule rule (org.apache.nutch.crawl.AdaptiveFetchSchedule).

    After each re-fetch the document's interval is multiplied by (1 + inc_rate) if the page was not modified
    and by (1 - dec_rate) if it was. With ``sync_delta`` (Nutch's db.fetch.schedule.adaptive.sync_delta,
    default true) the schedule then synchronises with the time of the last change: delta = fetch time -
    modified time; if delta > interval the interval becomes delta; the reference time moves back by
    round(delta * sync_delta_rate) (db.fetch.schedule.adaptive.sync_delta_rate = 0.3). The interval is
    clamped to [min_interval, max_interval] and the page is next due at reference time + interval. Defaults
    are Nutch's nutch-default.xml values (inc_rate = 0.4, dec_rate = 0.2, min_interval = 60 s, max_interval =
    365 days) in seconds; pass values in your own time unit. A change/no-change observation does not carry
    the server's last-modified time, so callers estimate it from observed change times
    (:class:`ScheduleRecrawl`: the middle of the last interval in which a change was seen).
    """

    inc_rate: float = 0.4
    dec_rate: float = 0.2
    min_interval: float = 60.0
    max_interval: float = 365.0 * 24 * 3600
    initial_interval: float = 30.0 * 24 * 3600  # db.fetch.interval.default
    sync_delta: bool = True
    sync_delta_rate: float = 0.3

    def __post_init__(self) -> None:
        if not self.inc_rate >= 0:
            raise ValueError("inc_rate must be >= 0")
        if not 0 <= self.dec_rate < 1:
            raise ValueError("dec_rate must be in [0, 1)")
        if not 0 < self.min_interval <= self.max_interval:
            raise ValueError("need 0 < min_interval <= max_interval")
        if not self.min_interval <= self.initial_interval <= self.max_interval:
            raise ValueError("initial_interval must lie in [min_interval, max_interval]")
        if not 0 <= self.sync_delta_rate <= 1:
            raise ValueError("sync_delta_rate must be in [0, 1]")

    def next_interval(self, interval: float, changed: bool) -> float:
        # Nutch AdaptiveFetchSchedule.setFetchSchedule: MODIFIED -> *(1 - DEC_RATE),
        # NOTMODIFIED -> *(1 + INC_RATE)
        nxt = interval * (1.0 - self.dec_rate) if changed else interval * (1.0 + self.inc_rate)
        return min(self.max_interval, max(self.min_interval, nxt))

    def next_fetch(
        self, fetch_time: float, interval: float, changed: bool, modified_time: float
    ) -> tuple[float, float]:
        """Nutch's setFetchSchedule: (next interval, time the document is next due)."""
        nxt = interval * (1.0 - self.dec_rate) if changed else interval * (1.0 + self.inc_rate)
        ref = fetch_time
        if self.sync_delta:
            delta = fetch_time - (modified_time if modified_time > 0 else fetch_time)
            if delta > nxt:
                nxt = delta
            ref = fetch_time - round(delta * self.sync_delta_rate)
        nxt = min(self.max_interval, max(self.min_interval, nxt))
        return nxt, ref + nxt

    def priority(self, age: float, interval: float) -> float:
        """Overdue ratio age / interval; a document is due at >= 1 (most overdue first at equal budget)."""
        if interval <= 0:
            raise ValueError("interval must be > 0")
        return age / interval


class ScheduleRecrawl(PerDocumentTracker):
    """``recrawl_index`` hook for the baselines: a document is due once ``now`` reaches its due time (every
    ``interval`` for :class:`UniformSchedule`; Nutch's adaptive interval and SYNC_DELTA for
    :class:`AdaptiveFetchSchedule`); a due document is worth its relevance (relevance-aware, as Nutch's
    generator ranks due pages by score, so both baselines compete with the fringe in the same unit as the
    Whittle index), times how overdue it is (age / interval, so the most overdue of equal relevance goes
    first); one not due is worth a vanishing fraction of that (``NOT_DUE_WEIGHT``): it is fetched only when
    nothing else would be, most overdue first. The modified time SYNC_DELTA needs is estimated from what
    re-crawls observe: the middle of the last interval in which a change was seen."""

    def __init__(self, schedule: UniformSchedule | AdaptiveFetchSchedule, *, initial_interval: float) -> None:
        if not initial_interval > 0:
            raise ValueError("initial_interval must be > 0")
        super().__init__()
        self.schedule = schedule
        self.initial_interval = initial_interval
        self._due: dict[str, float] = {}
        self._modified: dict[str, float] = {}

    def _first_seen(self, arm: CrawledDoc) -> DocHistory:
        self._due[arm.url] = arm.last_fetch + self.initial_interval
        return DocHistory(
            fetches=arm.fetches,
            changes=arm.changes,
            last_fetch=arm.last_fetch,
            estimator=ChangeRateEstimator(),
            interval=self.initial_interval,
        )

    def _history(self, arm: CrawledDoc) -> DocHistory:
        h = self._docs.get(arm.url)
        if h is not None and arm.fetches > h.fetches:
            changed = arm.changes > h.changes
            if changed:  # a change somewhere in (previous fetch, this fetch]: its expected time is the middle
                self._modified[arm.url] = 0.5 * (h.last_fetch + arm.last_fetch)
            modified = self._modified.get(arm.url, 0.0)
            h.interval, self._due[arm.url] = self.schedule.next_fetch(
                arm.last_fetch, h.interval, changed, modified
            )
            h.fetches, h.changes, h.last_fetch = arm.fetches, arm.changes, arm.last_fetch
            return h
        return super()._history(arm)

    def _fetched(self, h: DocHistory, interval: float, changed: bool) -> None:  # pragma: no cover - unused
        h.interval = self.schedule.next_interval(h.interval, changed)

    def interval(self, arm: CrawledDoc) -> float:
        return self._history(arm).interval

    def due(self, arm: CrawledDoc) -> float:
        self._history(arm)
        return self._due[arm.url]

    # weight of a document that is not due yet: it ranks below every fringe page of positive value, so it
    # only uses fetches that would otherwise idle (the schedule spends the same budget as the other policies)
    NOT_DUE_WEIGHT = 1e-9

    def __call__(self, arm: CrawledDoc, now: float) -> float:
        h = self._history(arm)
        overdue = (now - arm.last_fetch) / h.interval
        if now < self._due[arm.url]:
            return self.NOT_DUE_WEIGHT * arm.relevance * overdue
        return arm.relevance * max(1.0, overdue)
