"""Crawling policies for the ephemeral-content model and the simulator that runs them (papers/002, 003).

A policy sees, at each period t, the states X_i(t) (the deterministic ones, or the observed stochastic ones
as in papers/003: "when we observe the states in the stochastic setting, we can still apply the
deterministic Whittle index") and the periods since each source was last crawled, and returns which
sources to crawl. The simulator collects the reward sum_i X_i(t) v_i(t) (papers/002 Eq. 4) and advances
the dynamics (Eqs. 2-3, or Eq. 19 with Poisson arrivals).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from oasis.freshness.ephemeral import FloatArray, Model
from oasis.robot.scheduling.recrawl import whittle_index

logger = logging.getLogger(__name__)

BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class CrawlObservation:
    """What crawling source i at period t reveals (used by policies that learn the parameters).

    The collected items' ages a_j (time since publication) and current utilities y_j = xi_j e^{-mu a_j} are
    summarised by sufficient statistics for the regression of log y on a, plus the total X and the gap.
    """

    source: int
    t: int
    gap: int  # periods since the previous crawl of this source (t + 1 for the first crawl)
    X: float  # collected utility = sum_j y_j
    n: float  # number of items collected
    sum_a: float
    sum_aa: float
    sum_logy: float
    sum_a_logy: float


class Policy(Protocol):
    name: str

    def select(self, t: int, X: FloatArray, since: NDArray[np.int64], M: float) -> BoolArray: ...

    def observe(self, obs: CrawlObservation) -> None: ...


def _top_m(scores: FloatArray, M: float) -> BoolArray:
    m = int(M)
    v = np.zeros(scores.shape[0], dtype=bool)
    if m <= 0:
        return v
    # stable: ties broken by lower source number
    order = np.argsort(-scores, kind="stable")
    v[order[:m]] = True
    return v


def _budget(scores: FloatArray, cost: FloatArray, M: float) -> BoolArray:
    """Crawl in decreasing score order while the total cost stays within M (papers/002 Theorem 1: "choose a
    number of top sources for the constraint to be reached")."""
    v = np.zeros(scores.shape[0], dtype=bool)
    spent = 0.0
    for i in np.argsort(-scores, kind="stable"):
        if spent + cost[i] <= M + 1e-12:
            v[i] = True
            spent += float(cost[i])
    return v


@dataclass
class WhittlePolicy:
    """Crawl the top M sources by the closed-form index gamma_i(X_i) (papers/002 Theorem 1)."""

    model: Model
    budget: bool = False  # True: fill the cost budget M with C_i instead of taking exactly M sources
    name: str = "whittle"

    def __post_init__(self) -> None:
        self._u = self.model.u()
        self._a = self.model.alpha()
        self._c = self.model.C()

    def scores(self, X: FloatArray) -> FloatArray:
        return np.array(
            [
                whittle_index(float(x), float(self._a[i]), float(self._u[i]), float(self._c[i]))
                for i, x in enumerate(X)
            ]
        )

    def select(self, t: int, X: FloatArray, since: NDArray[np.int64], M: float) -> BoolArray:
        s = self.scores(X)
        return _budget(s, self._c, M) if self.budget else _top_m(s, M)

    def observe(self, obs: CrawlObservation) -> None:
        return None


@dataclass
class GreedyPolicy:
    """papers/003: crawl argmax_i Lambda_i xi_i / mu_i (1 - exp(-mu_i TLastCrawl_i)), the expected content
    accumulated since the last crawl (it does not look at the observed state)."""

    model: Model
    name: str = "greedy"

    def select(self, t: int, X: FloatArray, since: NDArray[np.int64], M: float) -> BoolArray:
        T = self.model.T
        s = np.array(
            [
                src.lam * src.xi / src.mu * -math.expm1(-src.mu * T * float(since[i]))
                for i, src in enumerate(self.model.sources)
            ]
        )
        return _top_m(s, M)

    def observe(self, obs: CrawlObservation) -> None:
        return None


@dataclass
class RoundRobinPolicy:
    """Crawl sources 1, 2, ..., N, 1, 2, ... M at a time."""

    N: int
    name: str = "round-robin"
    _next: int = 0

    def select(self, t: int, X: FloatArray, since: NDArray[np.int64], M: float) -> BoolArray:
        v = np.zeros(self.N, dtype=bool)
        for _ in range(min(int(M), self.N)):
            v[self._next] = True
            self._next = (self._next + 1) % self.N
        return v

    def observe(self, obs: CrawlObservation) -> None:
        return None


@dataclass
class BestOnlyPolicy:
    """Always crawl the M sources with the largest u_i (papers/002 Section 8: "greedily crawls only
    source 1", average reward u_1 = 179.79 for Table 1)."""

    model: Model
    name: str = "best-only"

    def select(self, t: int, X: FloatArray, since: NDArray[np.int64], M: float) -> BoolArray:
        return _top_m(self.model.u(), M)

    def observe(self, obs: CrawlObservation) -> None:
        return None


@dataclass
class CyclicPolicy:
    """Follow a fixed periodic schedule (a list of crawl sets), e.g. the optimum found by search."""

    schedule: list[tuple[int, ...]]
    N: int
    name: str = "optimal"

    def select(self, t: int, X: FloatArray, since: NDArray[np.int64], M: float) -> BoolArray:
        v = np.zeros(self.N, dtype=bool)
        v[list(self.schedule[t % len(self.schedule)])] = True
        return v

    def observe(self, obs: CrawlObservation) -> None:
        return None


@dataclass
class SimResult:
    rewards: FloatArray  # reward per period
    X: FloatArray  # states, steps x N (before the period's crawl)
    crawled: BoolArray  # steps x N

    def mean_reward(self, burn_in: int = 0) -> float:
        return float(self.rewards[burn_in:].mean())


@dataclass
class Simulator:
    """Runs a policy on the model; deterministic (Eqs. 2-3) or stochastic (Eq. 19).

    Stochastic arrivals: per period a Poisson(Lambda_i T) number of items, publication times uniform in the
    period, base utilities xi ~ Exponential(mean xi-bar_i) (the paper fixes only the mean; ``xi_dist="const"``
    uses xi = xi-bar). The initial state is X(0) = u (every source just crawled).
    """

    model: Model
    stochastic: bool = False
    xi_dist: str = "exponential"
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def __post_init__(self) -> None:
        if self.xi_dist not in ("exponential", "const"):
            raise ValueError("xi_dist must be 'exponential' or 'const'")

    def run(self, policy: Policy, *, steps: int, M: float, need_obs: bool = False) -> SimResult:
        if steps < 1:
            raise ValueError("steps must be >= 1")
        m = self.model
        N, T = m.N, m.T
        u, alpha = m.u(), m.alpha()
        mu = np.array([s.mu for s in m.sources])
        lam = np.array([s.lam for s in m.sources])
        xi_bar = np.array([s.xi for s in m.sources])
        X = u.copy()
        since = np.ones(N, dtype=np.int64)
        # sufficient statistics of uncollected items: n, sum tau, sum tau^2, sum log xi, sum tau log xi
        stats = np.zeros((N, 5))
        if need_obs:
            stats = self._arrivals(0, lam, mu, xi_bar, N, T, True)[1]
        rewards = np.zeros(steps)
        Xs = np.zeros((steps, N))
        crawled = np.zeros((steps, N), dtype=bool)
        for t in range(steps):
            v = policy.select(t, X, since, M)
            Xs[t] = X
            crawled[t] = v
            rewards[t] = float(X[v].sum())
            if need_obs:
                tc = t * T
                for i in np.flatnonzero(v):
                    n, st, stt, sl, stl = stats[i]
                    sa = n * tc - st
                    saa = n * tc * tc - 2 * tc * st + stt
                    sal = tc * sl - stl  # sum a log xi
                    policy.observe(
                        CrawlObservation(
                            source=int(i),
                            t=t,
                            gap=int(since[i]),
                            X=float(X[i]),
                            n=float(n),
                            sum_a=float(sa),
                            sum_aa=float(saa),
                            sum_logy=float(sl - mu[i] * sa),
                            sum_a_logy=float(sal - mu[i] * saa),
                        )
                    )
                stats[v] = 0.0
            # dynamics for the next period: Eq. 2 / Eq. 3 (deterministic) or Eq. 19 (stochastic)
            # deterministic runs that need observations still draw items to observe; the state is the mean
            U = u
            if self.stochastic or need_obs:
                U_drawn, new_stats = self._arrivals(t + 1, lam, mu, xi_bar, N, T, need_obs)
                stats += new_stats
                if self.stochastic:
                    U = U_drawn
            X = np.where(v, U, alpha * X + U)
            since = np.where(v, 1, since + 1)
        return SimResult(rewards=rewards, X=Xs, crawled=crawled)

    def _arrivals(
        self, k: int, lam: FloatArray, mu: FloatArray, xi_bar: FloatArray, N: int, T: float, need_obs: bool
    ) -> tuple[FloatArray, FloatArray]:
        # papers/002 Eq. 19: U_i(k) = sum over arrivals tau in [(k-1)T, kT) of xi e^{-mu (kT - tau)}
        counts = self.rng.poisson(lam * T)
        idx = np.repeat(np.arange(N), counts)
        s = self.rng.random(idx.shape[0]) * T  # time from publication to the end of the period
        xi = self._xi(xi_bar, idx)
        U = np.bincount(idx, weights=xi * np.exp(-mu[idx] * s), minlength=N).astype(np.float64)
        stats = np.zeros((N, 5))
        if need_obs:
            tau = k * T - s
            lx = np.log(np.maximum(xi, 1e-300))
            stats[:, 0] = counts
            stats[:, 1] = np.bincount(idx, weights=tau, minlength=N)
            stats[:, 2] = np.bincount(idx, weights=tau * tau, minlength=N)
            stats[:, 3] = np.bincount(idx, weights=lx, minlength=N)
            stats[:, 4] = np.bincount(idx, weights=tau * lx, minlength=N)
        return U, stats

    def _xi(self, xi_bar: FloatArray, idx: NDArray[np.int64]) -> FloatArray:
        if self.xi_dist == "const":
            return xi_bar[idx].astype(np.float64)
        return self.rng.exponential(1.0, idx.shape[0]) * xi_bar[idx]
