"""Whittle-index Q-learning for restless bandits with average reward (papers/001, Eqs. 11-14).

For every state x of the (shared) arm model a Q-table Q^x(i, u) is learned by RVI Q-learning with the
subsidy set to the current index estimate lambda(x) (Eq. 12, fast time scale), while lambda(x) follows the
sign of Q^x(x, 1) - Q^x(x, 0) (Eq. 13, slow time scale). Actions: with probability 1 - epsilon the M arms with
the largest lambda(X^i) are active, otherwise M arms chosen uniformly at random.

Shared learning across identical arms (the paper's "shared memory architecture"): at each period all N arms'
transitions update the common tables. The samples of one period that hit the same pair (i, u) are averaged
into a single update (a mini-batch), and the local clock nu(i, u, n) counts periods in which the pair was
updated; this keeps numpy vectorisation (100 arms x 10^5 periods in seconds) and is a stochastic
approximation with the same mean field as one-sample updates.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from oasis.freshness.rvi import ArmModel

logger = logging.getLogger(__name__)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True, kw_only=True)
class QLearningConfig:
    arms: int = 100  # N
    active: int = 20  # M
    steps: int = 10_000
    epsilon: float = 0.1
    C: float = 0.2  # alpha(n) = C / ceil(n / 500) (Eq. 14)
    C_prime: float = 0.5  # gamma(n) = C' / (1 + ceil(n log n / 500)) (Eq. 14)
    clock_div: float = 500.0
    constant_alpha: float | None = None  # constant step sizes (papers/001 Fig. 5: 0.02, 0.005)
    constant_gamma: float | None = None
    record_every: int = 10
    # Projection of lambda(x) onto [-B, B] (projected stochastic approximation, Kushner & Yin 2003, Ch. 5).
    # Without it a rarely visited state's index can run away: its passive Q-value is starved of samples
    # while the active one keeps growing with lambda. None: B = 2 d span(R) + max |R1 - R0|, far above any
    # index of the arm (the index is R1 - R0 plus a difference of relative values).
    index_bound: float | None = None
    # sequential=True: papers/001 literally, one update per arm sample (Gauss-Seidel within a period), the
    # local clock nu(i, u) counting samples, and lambda updated once per N samples (the I{n mod N = 0} of
    # Eq. 14) with gamma evaluated on the sample clock n. About 10x slower than the batched default.
    sequential: bool = False

    def __post_init__(self) -> None:
        if self.arms < 1 or not 0 < self.active <= self.arms:
            raise ValueError(f"need 0 < active <= arms, got active={self.active}, arms={self.arms}")
        if self.steps < 1:
            raise ValueError("steps must be >= 1")
        if not 0 <= self.epsilon < 1:
            raise ValueError("epsilon must be in [0, 1)")
        if self.C <= 0 or self.C_prime <= 0 or self.clock_div <= 0:
            raise ValueError("C, C_prime and clock_div must be > 0")
        for name in ("constant_alpha", "constant_gamma"):
            v = getattr(self, name)
            if v is not None and not 0 < v <= 1:
                raise ValueError(f"{name} must be in (0, 1]")
        if (self.constant_alpha is None) != (self.constant_gamma is None):
            raise ValueError("give both constant_alpha and constant_gamma, or neither")
        if self.record_every < 1:
            raise ValueError("record_every must be >= 1")
        if self.index_bound is not None and not self.index_bound > 0:
            raise ValueError("index_bound must be > 0")


def step_alpha(nu: NDArray[np.float64] | float, C: float, div: float = 500.0) -> NDArray[np.float64] | float:
    # papers/001 Eq. 14: alpha(n) = C / ceil(n / 500), n the local clock (>= 1)
    return C / np.ceil(np.maximum(nu, 1) / div)


def step_gamma(n: int, C_prime: float, div: float = 500.0) -> float:
    # papers/001 Eq. 14: gamma(n) = C' / (1 + ceil(n log n / 500)); o(alpha(n)) as the theory needs
    return C_prime / (1.0 + math.ceil(n * math.log(max(n, 1)) / div))


def f_offset(Q: FloatArray) -> FloatArray:
    # papers/001, below Eq. 11: f(Q) = (1 / 2|S|) sum_i (Q(i, 0) + Q(i, 1)), per table
    return Q.reshape(Q.shape[0], -1).mean(axis=1)


@dataclass
class QLearningResult:
    learned_indices: FloatArray  # final lambda(x)
    index_history: FloatArray  # recorded lambda(x) over time, (steps // record_every) x d
    history_steps: IntArray
    rewards: FloatArray  # reward per period of the learning run (sum over arms)
    exact_rewards: FloatArray | None  # reward per period under the exact-index policy (same sizes)
    # samples seen per pair (i, u) over the run, d x 2 (all arms); the rare pairs bound the index accuracy
    pair_samples: IntArray | None = None
    # periods in which each pair (i, u) got an update (the local clock nu of the batched Eq. 12), d x 2
    pair_updates: IntArray | None = None

    def reward_ratio(self, tail: float = 0.2) -> float:
        """Learned-policy reward over exact-index-policy reward, averaged over the last ``tail`` of steps."""
        if self.exact_rewards is None:
            raise ValueError("no exact-index run to compare with")
        n = self.rewards.shape[0]
        k = max(1, round(n * tail))
        return float(self.rewards[-k:].mean() / self.exact_rewards[-k:].mean())


class _ArmSampler:
    def __init__(self, arm: ArmModel) -> None:
        self.cum = np.stack([np.cumsum(arm.P0, axis=1), np.cumsum(arm.P1, axis=1)])  # 2 x d x d
        self.cum[:, :, -1] = 1.0
        self.R = np.stack([arm.R0, arm.R1])  # 2 x d

    def step(self, X: IntArray, Z: IntArray, rng: np.random.Generator) -> IntArray:
        r = np.asarray(rng.random(X.shape[0]), dtype=np.float64)
        rows = self.cum[Z, X]  # arms x d
        return (rows < r[:, None]).sum(axis=1).astype(np.int64)


def _choose(scores: FloatArray, M: int, epsilon: float, rng: np.random.Generator) -> IntArray:
    n = scores.shape[0]
    Z = np.zeros(n, dtype=np.int64)
    if epsilon > 0 and rng.random() < epsilon:
        Z[rng.choice(n, size=M, replace=False)] = 1
    else:
        # top M by score, ties broken uniformly at random
        jitter = np.asarray(rng.random(n), dtype=np.float64)
        order = np.lexsort((jitter, -scores))
        Z[order[:M]] = 1
    return Z


def index_policy_rewards(
    arm: ArmModel, indices: FloatArray, *, arms: int, active: int, steps: int, rng: np.random.Generator
) -> FloatArray:
    """Reward per period of the index policy with fixed ``indices`` (top ``active`` of ``arms``)."""
    sampler = _ArmSampler(arm)
    X = rng.integers(0, arm.d, size=arms)
    out = np.zeros(steps)
    for t in range(steps):
        Z = _choose(indices[X], active, 0.0, rng)
        out[t] = sampler.R[Z, X].sum()
        X = sampler.step(X, Z, rng)
    return out


def _sequential_period(
    Q: FloatArray,
    lam: FloatArray,
    nu: FloatArray,
    samples: IntArray,
    X: IntArray,
    Z: IntArray,
    Xn: IntArray,
    R: FloatArray,
    cfg: QLearningConfig,
    n: int,
    bound: float,
) -> FloatArray:
    """One period of papers/001 Eqs. 12-14 sample by sample; updates Q, nu, samples in place."""
    d = Q.shape[0]
    Qf = Q.reshape(d, 2 * d)
    fsum = Qf.sum(axis=1)  # 2|S| f(Q^x), kept up to date as entries change
    for i, u, j in zip(X.tolist(), Z.tolist(), Xn.tolist(), strict=True):
        p = 2 * i + u
        nu[p] += 1
        samples[p] += 1
        a = cfg.constant_alpha if cfg.constant_alpha is not None else _alpha_at(nu[p], cfg)
        # Eq. 12: (1-u)(R0(i) + lam(x)) + u R1(i) + max_v Q^x(j, v) - f(Q^x) - Q^x(i, u), every x at once
        td = R[u, i] + (1 - u) * lam + Q[:, j, :].max(axis=1) - fsum / (2 * d) - Qf[:, p]
        Qf[:, p] += a * td
        fsum += a * td
    n_samples = (n + 1) * X.shape[0]  # lambda moves once every N samples: I{n mod N = 0} of Eq. 14
    g = (
        cfg.constant_gamma
        if cfg.constant_gamma is not None
        else step_gamma(n_samples, cfg.C_prime, cfg.clock_div)
    )
    xs = np.arange(d)
    return np.asarray(np.clip(lam + g * (Q[xs, xs, 1] - Q[xs, xs, 0]), -bound, bound), dtype=np.float64)


def _alpha_at(nu: float, cfg: QLearningConfig) -> float:
    # papers/001 Eq. 14 on the local clock nu(i, u, n): alpha = C / ceil(nu / 500)
    return cfg.C / math.ceil(max(nu, 1.0) / cfg.clock_div)


def whittle_q_learning(
    arm: ArmModel,
    cfg: QLearningConfig,
    rng: np.random.Generator,
    *,
    exact_indices: FloatArray | None = None,
    progress: bool = False,
) -> QLearningResult:
    """Run papers/001's scheme on ``cfg.arms`` identical copies of ``arm``; optionally also run the
    exact-index policy (same sizes, its own random stream) for the reward comparison."""
    d = arm.d
    N, M = cfg.arms, cfg.active
    sampler = _ArmSampler(arm)
    R = sampler.R
    # initialisation of papers/001 Section IV: lambda_0(x) = 0, Q^x(i, u) = R_u(i)
    lam = np.zeros(d)
    bound = cfg.index_bound
    if bound is None:
        span = float(R.max() - R.min())
        bound = 2.0 * d * span + float(np.abs(arm.R1 - arm.R0).max()) + 1.0
    Q = np.tile(R.T[None, :, :], (d, 1, 1)).astype(np.float64)  # x, i, u
    nu = np.zeros(2 * d)
    samples = np.zeros(2 * d, dtype=np.int64)
    X = rng.integers(0, d, size=N)
    rewards = np.zeros(cfg.steps)
    rec = list(range(0, cfg.steps, cfg.record_every))
    hist = np.zeros((len(rec), d))
    xs = np.arange(d)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=cfg.steps, desc="whittle-learn", unit="step", leave=False)
    for n in range(cfg.steps):
        if n % cfg.record_every == 0:
            hist[n // cfg.record_every] = lam
        Z = _choose(lam[X], M, cfg.epsilon, rng)
        r = R[Z, X]
        rewards[n] = r.sum()
        Xn = sampler.step(X, Z, rng)
        if cfg.sequential:
            lam = _sequential_period(Q, lam, nu, samples, X, Z, Xn, R, cfg, n, bound)
            X = Xn
            if bar is not None:
                bar.update(1)
            continue
        # Eq. 12 for every x at once: TD = (1-u)(R0 + lam(x)) + u R1 + max_v Q^x(X', v) - f(Q^x) - Q^x(X, u)
        target = r[None, :] + (1 - Z)[None, :] * lam[:, None] + Q[:, Xn, :].max(axis=2) - f_offset(Q)[:, None]
        td = target - Q[:, X, Z]  # x, arm
        pair = X * 2 + Z
        counts = np.bincount(pair, minlength=2 * d).astype(np.float64)
        sums = np.stack([np.bincount(pair, weights=td[x], minlength=2 * d) for x in range(d)])
        hit = counts > 0
        samples += counts.astype(np.int64)
        nu[hit] += 1
        if cfg.constant_alpha is not None:
            a = np.where(hit, cfg.constant_alpha, 0.0)
        else:
            a = np.where(hit, step_alpha(nu, cfg.C, cfg.clock_div), 0.0)
        Q.reshape(d, 2 * d)[:] += a[None, :] * sums / np.maximum(counts, 1.0)[None, :]
        # Eq. 13: lambda(x) += gamma(n) (Q^x(x, 1) - Q^x(x, 0))
        g = (
            cfg.constant_gamma
            if cfg.constant_gamma is not None
            else step_gamma(n + 1, cfg.C_prime, cfg.clock_div)
        )
        lam = np.clip(lam + g * (Q[xs, xs, 1] - Q[xs, xs, 0]), -bound, bound)
        X = Xn
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    exact_rewards = None
    if exact_indices is not None:
        exact_rewards = index_policy_rewards(
            arm, np.asarray(exact_indices, dtype=np.float64), arms=N, active=M, steps=cfg.steps, rng=rng
        )
    return QLearningResult(
        learned_indices=lam.copy(),
        index_history=hist,
        history_steps=np.array(rec, dtype=np.int64),
        rewards=rewards,
        exact_rewards=exact_rewards,
        pair_samples=samples.reshape(d, 2),
        pair_updates=nu.astype(np.int64).reshape(d, 2),
    )
