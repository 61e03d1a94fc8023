"""Exact Whittle indices of a single finite-state arm: relative value iteration + bisection on the subsidy.

The single-arm problem with passivity subsidy ``lam`` (papers/001 Eq. 5; papers/002 Eq. 7) maximises the
average of R_u(X) + lam (1 - u). Its dynamic programming equation (papers/001 Eqs. 6-7)

    V(k) + beta = max(R_1(k) + sum_j P_1(k, j) V(j), R_0(k) + lam + sum_j P_0(k, j) V(j))

is solved by relative value iteration (Puterman 1994, Section 8.5.5) after the aperiodicity transform
P -> tau P + (1 - tau) I, R -> tau R (Puterman, Section 8.5.4), which keeps the optimal policy and scales the
gain by tau. The Whittle index of state k is the subsidy at which both actions are equally good in k
(papers/001 Eq. 10); if the arm is indexable the preference for the active action falls monotonically in
lam, so bisection finds it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oasis.runtime.files import read_json

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class ArmModel:
    """A finite restless arm: passive / active transition matrices and rewards (papers/001 Section II)."""

    P0: FloatArray
    P1: FloatArray
    R0: FloatArray
    R1: FloatArray

    def __post_init__(self) -> None:
        d = self.R0.shape[0]
        for name in ("P0", "P1"):
            p = getattr(self, name)
            if p.shape != (d, d):
                raise ValueError(f"{name} must be {d}x{d}, got {p.shape}")
            if np.any(p < -1e-12) or not np.allclose(p.sum(axis=1), 1.0, atol=1e-9):
                raise ValueError(f"{name} must be a stochastic matrix (non-negative rows summing to 1)")
        if self.R1.shape != (d,):
            raise ValueError(f"R1 must have {d} entries, got {self.R1.shape}")
        if d < 1:
            raise ValueError("an arm needs at least one state")
        for name in ("P0", "P1", "R0", "R1"):
            if not np.all(np.isfinite(getattr(self, name))):
                raise ValueError(f"{name} must be finite")

    @property
    def d(self) -> int:
        return int(self.R0.shape[0])

    def to_json(self) -> dict[str, Any]:
        return {
            "P0": self.P0.tolist(),
            "P1": self.P1.tolist(),
            "R0": self.R0.tolist(),
            "R1": self.R1.tolist(),
        }


def arm_from_json(data: Mapping[str, Any]) -> ArmModel:
    """``{"P0": [[...]], "P1": [[...]], "R0": [...], "R1": [...]}`` -> ArmModel (validated)."""
    if not isinstance(data, Mapping):
        raise ValueError("a model file must be a JSON object")
    missing = {"P0", "P1", "R0", "R1"} - set(data)
    if missing:
        raise ValueError(f"model lacks {sorted(missing)}")
    try:
        arrs = {k: np.asarray(data[k], dtype=np.float64) for k in ("P0", "P1", "R0", "R1")}
    except (TypeError, ValueError) as exc:
        raise ValueError(f"model entries must be numbers: {exc}") from exc
    if arrs["R0"].ndim != 1:
        raise ValueError("R0 must be a list of numbers")
    return ArmModel(**arrs)


def load_arm(path: str | Path) -> ArmModel:
    return arm_from_json(read_json(path, "model"))


def circulant_arm() -> ArmModel:
    """papers/001 Section IV.A: circulant dynamics, P1 = P0^T, R = (-1, 0, 0, 1) for both actions."""
    P0 = np.array(
        [[0.5, 0, 0, 0.5], [0.5, 0.5, 0, 0], [0, 0.5, 0.5, 0], [0, 0, 0.5, 0.5]],
        dtype=np.float64,
    )
    R = np.array([-1.0, 0.0, 0.0, 1.0])
    return ArmModel(P0=P0, P1=P0.T.copy(), R0=R, R1=R.copy())


def restart_arm(a: float = 0.9) -> ArmModel:
    """papers/001 Section IV.B: 5 states, passive drifts up (0.9) or restarts (0.1), active restarts;
    passive reward a^k, active reward 0."""
    d = 5
    P0 = np.zeros((d, d))
    P0[:, 0] = 0.1
    for k in range(d):
        P0[k, min(k + 1, d - 1)] += 0.9
    P1 = np.zeros((d, d))
    P1[:, 0] = 1.0
    R0 = np.array([a ** (k + 1) for k in range(d)])
    return ArmModel(P0=P0, P1=P1, R0=R0, R1=np.zeros(d))


@dataclass(frozen=True)
class RviResult:
    V: FloatArray  # relative values, V[ref] = 0
    beta: float  # optimal average reward (gain) of the untransformed problem
    Q: FloatArray  # d x 2: Q(k, 0) includes the subsidy; Q(k, 1) - Q(k, 0) is the active advantage
    iterations: int


def relative_value_iteration(
    arm: ArmModel, lam: float, *, tau: float = 0.5, tol: float = 1e-10, max_iter: int = 200_000, ref: int = 0
) -> RviResult:
    """Solve the single-arm average-reward DP equation with subsidy ``lam`` (papers/001 Eqs. 6-7)."""
    if not 0 < tau <= 1:
        raise ValueError("tau must be in (0, 1]")
    d = arm.d
    eye = np.eye(d)
    P0 = tau * arm.P0 + (1 - tau) * eye
    P1 = tau * arm.P1 + (1 - tau) * eye
    r0 = tau * (arm.R0 + lam)
    r1 = tau * arm.R1
    h = np.zeros(d)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - iteration count is reported
        q0 = r0 + P0 @ h
        q1 = r1 + P1 @ h
        t = np.maximum(q0, q1)
        diff = t - h
        h_new = t - t[ref]
        if float(diff.max() - diff.min()) < tol:
            h = h_new
            break
        h = h_new
    q0 = r0 + P0 @ h
    q1 = r1 + P1 @ h
    gain = float(np.maximum(q0, q1)[ref] - h[ref])
    # back to the untransformed problem: h + g / tau = max(R + P h), so V = h, beta = g / tau and
    # Q(k, u) = R_u(k) (+ lam if passive) + sum_j P_u(k, j) V(j) = (q_u - (1 - tau) h) / tau
    Q = (np.stack([q0, q1], axis=1) - (1 - tau) * h[:, None]) / tau
    return RviResult(V=h, beta=gain / tau, Q=Q, iterations=it)


def active_advantage(arm: ArmModel, lam: float, state: int, **kw: Any) -> float:
    """Q(k, 1) - Q(k, 0) at subsidy lam: > 0 means active is preferred in ``state``."""
    res = relative_value_iteration(arm, lam, **kw)
    return float(res.Q[state, 1] - res.Q[state, 0])


def whittle_index_bisection(
    arm: ArmModel,
    state: int,
    *,
    lo: float | None = None,
    hi: float | None = None,
    tol: float = 1e-7,
    **kw: Any,
) -> float:
    """The subsidy at which active and passive are equally good in ``state`` (papers/001 Eq. 10)."""
    if not 0 <= state < arm.d:
        raise ValueError(f"state must be in [0, {arm.d}), got {state}")
    span = float(max(np.abs(arm.R0).max(), np.abs(arm.R1).max(), 1.0))
    lo = -4.0 * span - 1.0 if lo is None else lo
    hi = 4.0 * span + 1.0 if hi is None else hi
    for _ in range(60):
        if active_advantage(arm, lo, state, **kw) > 0:
            break
        lo = lo * 2.0 - 1.0
    for _ in range(60):
        if active_advantage(arm, hi, state, **kw) <= 0:
            break
        hi = hi * 2.0 + 1.0
    while hi - lo > tol * max(1.0, abs(lo), abs(hi)):
        mid = 0.5 * (lo + hi)
        if active_advantage(arm, mid, state, **kw) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def whittle_indices_bisection(arm: ArmModel, **kw: Any) -> FloatArray:
    return np.array([whittle_index_bisection(arm, k, **kw) for k in range(arm.d)])


def ephemeral_arm(
    alpha: float, u: float, C: float = 1.0, *, K: int | None = None, x0: float | None = None
) -> tuple[ArmModel, int]:
    """A finite single-source arm of papers/002 (deterministic Eqs. 2-3) for the bisection solver.

    States 0..K-1 are the orbit after a crawl, X(k + 1) = u (1 - alpha^(k+1)) / (1 - alpha); the last is
    absorbing under passivity (it is within alpha^K of the ceiling u*). If ``x0`` is given, a second chain
    x0, alpha x0 + u, ... of K states is appended; crawling from it rejoins the orbit at u. Rewards: active
    gets X / C (the paper's Eq. 8 divides the subsidy term by C; dividing the reward instead gives the same
    index), passive 0. Returns the arm and the state index of x0 (or -1).
    """
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1)")
    if K is None:
        K = max(50, math.ceil(math.log(1e-9) / math.log(alpha)) + 1)
    xs = [u * (1 - alpha ** (k + 1)) / (1 - alpha) for k in range(K)]
    start = -1
    if x0 is not None:
        start = K
        x = x0
        for _ in range(K):
            xs.append(x)
            x = alpha * x + u
    n = len(xs)
    P0 = np.zeros((n, n))
    P1 = np.zeros((n, n))
    for s in range(n):
        P1[s, 0] = 1.0
        if s < K:
            P0[s, min(s + 1, K - 1)] = 1.0
        else:
            P0[s, min(s + 1, n - 1)] = 1.0
    R1 = np.array(xs) / C
    return ArmModel(P0=P0, P1=P1, R0=np.zeros(n), R1=R1), start
