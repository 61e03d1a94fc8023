"""The LSPE(0) + threshold policy-gradient learning scheme of papers/000 (Allerton 2019).

Each source i is crawled with probability f_i = sigmoid(kappa_i (x_i - T_i(x_-i) - 0.5)) (papers/000
Section III), the threshold being parametrised as T_i(x_-i) = q0^i + q1^i s + q2^i s^2 with s = sum_{k != i}
x_k and projected onto [u_i, u_i / (1 - alpha_i)] (their stabilisation step). The average-reward value
function is approximated by V(x) ~ r . phi(x), phi = the linear and quadratic monomials of x, and learned
by LSPE(0) (Section IV, after Yu & Bertsekas 2009) with the Tikhonov-regularised inverse (B^T B + delta
I)^{-1} B^T the paper substitutes for B^{-1}. The thresholds follow the likelihood-ratio gradient Eq. 9,
q += a(n) grad_q log p(X(n+1) | X(n)) V(X(n+1)).

Departures, all documented in docs/freshness.md: features and the threshold basis use the states scaled by
each source's ceiling u_i* (the raw squares reach 10^5 and make B singular); the reward is the collected
utility sum_i X_i v_i (the objective of Section II; the LSPE recursion in the paper prints sum_i X_i, which
does not depend on the policy); the score of Eq. 8 is derived directly from the logistic f_i (the printed
expression is garbled).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from oasis.freshness.ephemeral import Model

logger = logging.getLogger(__name__)

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class LspeConfig:
    steps: int = 10_000
    kappa: float = 2.0  # papers/000 Section V
    gamma: float = 0.05  # LSPE step (papers/000 Section V)
    c: float = 0.5  # a(n) = c / ceil(n / 500), b(n) = c / ceil(n / 1000)^(2/3)
    delta: float = 1e-3  # Tikhonov regularisation
    b_init: float = 1e-2  # B(-1) = b_init I

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError("steps must be >= 1")
        if not (self.kappa > 0 and self.gamma > 0 and 0 < self.c < 1 and self.delta > 0 and self.b_init > 0):
            raise ValueError("kappa, gamma, delta, b_init must be > 0 and c in (0, 1)")


@dataclass
class LspeResult:
    rewards: FloatArray  # collected utility per period
    crawls: FloatArray  # number of sources crawled per period
    q: FloatArray  # final threshold parameters, N x 3

    def mean_reward(self, tail: float = 1.0) -> float:
        k = max(1, round(self.rewards.shape[0] * tail))
        return float(self.rewards[-k:].mean())

    def mean_crawls(self, tail: float = 1.0) -> float:
        k = max(1, round(self.crawls.shape[0] * tail))
        return float(self.crawls[-k:].mean())


def features(z: FloatArray) -> FloatArray:
    """phi(x) = [z_1 .. z_N, z_1^2, z_1 z_2, ..., z_N^2] (papers/000 Section V), z = x / u*."""
    iu = np.triu_indices(z.shape[0])
    return np.concatenate([z, np.outer(z, z)[iu]])


def logistic(v: FloatArray) -> FloatArray:
    return 0.5 * (1.0 + np.tanh(0.5 * v))


def run_lspe(model: Model, cfg: LspeConfig, rng: np.random.Generator) -> LspeResult:
    N = model.N
    u, alpha = model.u(), model.alpha()
    u_star = u / (1 - alpha)
    scale = float(u_star.sum())
    # thresholds start in the middle of [u_i, u_i*]: q0 = midpoint, q1 = q2 = 0
    q = np.zeros((N, 3))
    q[:, 0] = 0.5 * (u + u_star)
    x = u.copy()
    L = features(x / u_star).shape[0]
    r = np.zeros(L)
    B = cfg.b_init * np.eye(L)
    A = np.zeros((L, L))
    bvec = np.zeros(L)
    eta = 0.0
    rewards = np.zeros(cfg.steps)
    crawls = np.zeros(cfg.steps)
    for n in range(cfg.steps):
        s = (x.sum() - x) / scale  # sum of the other sources' states, scaled
        psi = np.stack([np.ones(N), s, s * s], axis=1)  # N x 3, the threshold basis
        T = np.clip((q * psi).sum(axis=1), u, u_star)  # projection onto [u_i, u_i*] (Section V)
        f = logistic(cfg.kappa * (x - T - 0.5))  # probability of crawling (Section III)
        v = rng.random(N) < f
        reward = float(x[v].sum())
        rewards[n] = reward
        crawls[n] = float(v.sum())
        x_next = np.where(v, u, alpha * x + u)  # Eqs. 2-3
        phi, phi_next = features(x / u_star), features(x_next / u_star)
        # LSPE(0) for average reward (papers/000 Section IV), step sizes b(n)
        b_n = cfg.c / math.ceil((n + 1) / 1000) ** (2 / 3)
        eta += b_n * (reward - eta)
        B += b_n * (np.outer(phi, phi) - B)
        A += b_n * (np.outer(phi, phi_next - phi) - A)
        bvec += b_n * (phi * (reward - eta) - bvec)
        Binv = np.linalg.solve(B.T @ B + cfg.delta * np.eye(L), B.T)
        r = r + cfg.gamma * Binv @ (A @ r + bvec)
        # Eq. 9 with the score of the logistic crawl probabilities: d/dq log f = -kappa (1 - f) psi for a
        # crawled source, d/dq log(1 - f) = kappa f psi for a skipped one (T increases with q)
        score = np.where(v, -cfg.kappa * (1 - f), cfg.kappa * f)[:, None] * psi
        a_n = cfg.c / math.ceil((n + 1) / 500)
        V_next = float(r @ phi_next)
        q = q + a_n * score * V_next
        x = x_next
    logger.debug("lspe: final q %s, value weights %s", q, r)
    return LspeResult(rewards=rewards, crawls=crawls, q=q)
