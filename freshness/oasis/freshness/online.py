"""Whittle crawling with unknown source parameters: estimate them online from crawls, plug into Theorem 1.

A crawl of source i returns the items published since its previous crawl, each with its age a_j and current
utility y_j = xi_j exp(-mu_i a_j) (e.g. clicks; papers/002 Section 2). From these:

* mu_i: least-squares slope of log y_j on a_j, pooled over all crawls of the source (E[log xi] does not
  depend on the age, so the slope is -mu_i whatever the law of xi);
* c_i = Lambda_i xi-bar_i: the collected total after a gap of g periods has mean
  c_i / mu_i (1 - e^{-mu_i g T}) (the content accumulated over g periods, papers/002 Eqs. 1-2), so
  c_i = sum X / sum (1 - e^{-mu g T}) / mu.

Then u_i = c_i / mu_i (1 - e^{-mu_i T}) (Eq. 1) and alpha_i = e^{-mu_i T}, and the policy ranks sources by the
closed-form index gamma_i(X_i). A source never crawled yet gets index +inf (crawl each source once first).

Certainty equivalence alone can lock in a bad early estimate (a source whose first crawls suggest a tiny
index is never crawled again, so the estimate is never corrected). The policy therefore forces exploration
(Kumar & Varaiya 1986, Ch. 12): a source crawled fewer than ``explore * sqrt(t)`` times is crawled next (the
least-crawled such source, one per period), which costs O(1 / sqrt(t)) of the periods.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from oasis.freshness.ephemeral import FloatArray, Model
from oasis.freshness.policies import BoolArray, CrawlObservation, _budget, _top_m
from oasis.robot.scheduling.recrawl import whittle_index


@dataclass
class SourceEstimate:
    """Running sufficient statistics for one source."""

    n: float = 0.0
    sum_a: float = 0.0
    sum_aa: float = 0.0
    sum_logy: float = 0.0
    sum_a_logy: float = 0.0
    gaps: dict[int, int] = field(default_factory=dict)
    sum_X: float = 0.0
    crawls: int = 0

    def add(self, obs: CrawlObservation) -> None:
        self.n += obs.n
        self.sum_a += obs.sum_a
        self.sum_aa += obs.sum_aa
        self.sum_logy += obs.sum_logy
        self.sum_a_logy += obs.sum_a_logy
        self.gaps[obs.gap] = self.gaps.get(obs.gap, 0) + 1
        self.sum_X += obs.X
        self.crawls += 1

    def mu(self) -> float | None:
        """-slope of the regression of log y on a; None until the ages vary."""
        var = self.n * self.sum_aa - self.sum_a**2
        if self.n < 2 or var <= 1e-12 * max(1.0, self.n * self.sum_aa):
            return None
        slope = (self.n * self.sum_a_logy - self.sum_a * self.sum_logy) / var
        return max(-slope, 1e-3)

    def c(self, mu: float, T: float) -> float:
        """Lambda xi-bar from the collected totals and the gaps they accumulated over."""
        denom = sum(k * -math.expm1(-mu * g * T) / mu for g, k in self.gaps.items())
        return self.sum_X / denom if denom > 0 else 0.0


@dataclass
class LearnedWhittlePolicy:
    """Whittle policy with the sources' (mu, Lambda xi-bar) estimated online (papers/002 Section 9's
    "adaptive version when some parameters need to be estimated online")."""

    N: int
    T: float = 1.0
    cost: FloatArray | None = None
    budget: bool = False
    explore: float = 0.5
    name: str = "learned"
    est: list[SourceEstimate] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.est:
            self.est = [SourceEstimate() for _ in range(self.N)]
        if self.cost is None:
            self.cost = np.ones(self.N)
        if self.explore < 0:
            raise ValueError("explore must be >= 0")

    def params(self, i: int) -> tuple[float, float] | None:
        """(alpha_i, u_i) estimates, or None while unknown."""
        e = self.est[i]
        mu = e.mu()
        if mu is None:
            return None
        c = e.c(mu, self.T)
        u = c / mu * -math.expm1(-mu * self.T)  # papers/002 Eq. 1 with c = Lambda xi-bar
        alpha = math.exp(-mu * self.T)
        if u <= 0 or not 0 < alpha < 1:
            return None
        return alpha, u

    def scores(self, X: FloatArray) -> FloatArray:
        assert self.cost is not None
        out = np.empty(self.N)
        for i in range(self.N):
            p = self.params(i)
            out[i] = math.inf if p is None else whittle_index(float(X[i]), p[0], p[1], float(self.cost[i]))
        return out

    def select(self, t: int, X: FloatArray, since: NDArray[np.int64], M: float) -> BoolArray:
        assert self.cost is not None
        s = self.scores(X)
        crawls = np.array([e.crawls for e in self.est])
        starved = np.flatnonzero(crawls < self.explore * math.sqrt(t))
        if starved.size:
            s[starved[np.argmin(crawls[starved])]] = math.inf
        return _budget(s, self.cost, M) if self.budget else _top_m(s, M)

    def observe(self, obs: CrawlObservation) -> None:
        self.est[obs.source].add(obs)


def learned_policy_for(model: Model, *, budget: bool = False) -> LearnedWhittlePolicy:
    """A learner that knows only N, T and the crawl costs of ``model``, not its parameters."""
    return LearnedWhittlePolicy(N=model.N, T=model.T, cost=model.C(), budget=budget)
