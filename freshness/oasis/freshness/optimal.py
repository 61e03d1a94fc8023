"""Exact optimum of the deterministic ephemeral-content problem for small instances, and the Whittle
relaxation's upper bound.

Once every source has been crawled, source i's state is X_i = u_i (1 - alpha_i^k_i) / (1 - alpha_i) with
k_i the periods since its last crawl (papers/002 Theorem 1, Remark). The joint problem with exactly M crawls
per period (papers/002 Eq. 5 with C_i = 1) is then a deterministic finite MDP on (k_1, ..., k_N) once k_i is
capped at K_i (the cap changes X by at most u_i* alpha_i^K_i). Its optimal average reward is the maximum
mean cycle; we find it by relative value iteration with the aperiodicity transform, extract the greedy
cycle, and evaluate that cycle exactly on the uncapped model, so the reported optimum is achieved by a
concrete periodic schedule ("best periodic schedule by search").
"""

from __future__ import annotations

import itertools
import logging
import math
from dataclasses import dataclass

import numpy as np

from oasis.freshness.ephemeral import Model

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class OptimalSchedule:
    schedule: list[tuple[int, ...]]  # one crawl set per period, repeated
    mean_reward: float  # exact average reward of the cycle on the uncapped model
    upper_bound: float  # DP gain of the capped model + cap error: no policy does better
    states: int


def _caps(model: Model, eps: float, max_states: int) -> list[int]:
    caps = [max(2, math.ceil(math.log(eps) / math.log(a))) for a in model.alpha()]
    while math.prod(caps) > max_states:
        i = int(np.argmax(caps))
        caps[i] -= 1
        if caps[i] < 2:
            raise ValueError("instance too large for the exact search")
    return caps


def optimal_schedule(
    model: Model, M: int, *, eps: float = 1e-4, max_states: int = 2_000_000, tol: float = 1e-7
) -> OptimalSchedule:
    """Best periodic schedule with exactly M of N sources crawled per period (C_i = 1)."""
    N = model.N
    if not 1 <= M < N:
        raise ValueError(f"need 1 <= M < N, got M={M}, N={N}")
    u, alpha = model.u(), model.alpha()
    caps = _caps(model, eps, max_states)
    shape = tuple(caps)
    S = math.prod(caps)
    # k_i in 1..K_i stored as index k_i - 1
    grids = np.indices(shape).reshape(N, S)  # N x S
    Xk = [u[i] * (1 - alpha[i] ** (np.arange(caps[i]) + 1)) / (1 - alpha[i]) for i in range(N)]
    actions = list(itertools.combinations(range(N), M))
    nxt = np.empty((len(actions), S), dtype=np.int64)
    rew = np.empty((len(actions), S))
    for a, crawl in enumerate(actions):
        g = np.minimum(grids + 1, np.array(caps)[:, None] - 1)
        r = np.zeros(S)
        for i in crawl:
            g[i] = 0
            r += Xk[i][grids[i]]
        nxt[a] = np.ravel_multi_index(tuple(g), shape)
        rew[a] = r
    tau = 0.5
    h = np.zeros(S)
    gain_lo, gain_hi = -math.inf, math.inf
    for it in range(100_000):  # noqa: B007 - reported after the loop
        q = tau * rew + tau * h[nxt] + (1 - tau) * h[None, :]
        t = q.max(axis=0)
        diff = t - h
        gain_lo, gain_hi = float(diff.min()) / tau, float(diff.max()) / tau
        h = t - t[0]
        if gain_hi - gain_lo < tol * max(1.0, abs(gain_hi)):
            break
    else:  # pragma: no cover - convergence guard
        logger.warning("optimal_schedule: RVI did not converge (span %g)", gain_hi - gain_lo)
    logger.debug("optimal_schedule: %d states, %d iterations, gain in [%g, %g]", S, it, gain_lo, gain_hi)
    policy = (rew + h[nxt]).argmax(axis=0)
    # follow the greedy policy from "all just crawled" until a state repeats; the loop is the cycle
    s = 0
    seen: dict[int, int] = {}
    path: list[int] = []
    while s not in seen:
        seen[s] = len(path)
        path.append(s)
        s = int(nxt[policy[s], s])
    cycle_states = path[seen[s] :]
    schedule = [actions[int(policy[c])] for c in cycle_states]
    exact = cycle_mean_reward(model, schedule)
    cap_error = float(sum(u[i] / (1 - alpha[i]) * alpha[i] ** caps[i] for i in range(N))) * M
    return OptimalSchedule(schedule=schedule, mean_reward=exact, upper_bound=gain_hi + cap_error, states=S)


def cycle_mean_reward(model: Model, schedule: list[tuple[int, ...]]) -> float:
    """Exact average reward of repeating ``schedule`` forever (each source's reward depends only on the
    gaps between its crawls; a source never crawled contributes nothing)."""
    L = len(schedule)
    if L == 0:
        raise ValueError("empty schedule")
    u, alpha = model.u(), model.alpha()
    total = 0.0
    for i in range(model.N):
        times = [t for t, crawl in enumerate(schedule) if i in crawl]
        for j, t in enumerate(times):
            prev = times[j - 1] - (L if j == 0 else 0)
            gap = t - prev
            total += u[i] * (1 - alpha[i] ** gap) / (1 - alpha[i])
    return total / L


def relaxation_bound(model: Model, M: float, *, k_max: int = 10_000) -> tuple[float, float]:
    """Whittle's Lagrangian relaxation (papers/002 Section 3): min over the subsidy lam of
    sum_i beta_i(lam) - lam (N - M), beta_i(lam) = the best single-source average reward with subsidy lam
    (crawl every k periods: (X_i(k) + C_i lam (k - 1)) / k, or never: C_i lam). An upper bound on any
    policy meeting the average-cost constraint; returns (bound, minimising lam)."""
    u, alpha, C = model.u(), model.alpha(), model.C()
    ks = np.arange(1, k_max + 1, dtype=np.float64)

    def dual(lam: float) -> float:
        tot = 0.0
        for i in range(model.N):
            Xk = u[i] * (1 - alpha[i] ** ks) / (1 - alpha[i])
            best = max(float(((Xk + C[i] * lam * (ks - 1)) / ks).max()), C[i] * lam)
            tot += best
        return tot - lam * (float(C.sum()) - M)

    # the dual is convex in lam: golden-section search on [0, max u*]
    lo, hi = 0.0, float((u / (1 - alpha)).max() / C.min())
    phi = (math.sqrt(5) - 1) / 2
    a, b = hi - phi * (hi - lo), lo + phi * (hi - lo)
    fa, fb = dual(a), dual(b)
    for _ in range(200):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - phi * (hi - lo)
            fa = dual(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + phi * (hi - lo)
            fb = dual(b)
    lam = 0.5 * (lo + hi)
    return dual(lam), lam
