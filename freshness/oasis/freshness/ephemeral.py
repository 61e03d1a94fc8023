"""The ephemeral-content crawling model and its closed-form Whittle index (papers/002).

N sources publish content as Poisson processes (rate ``lam``); an item's utility starts at a random value of
mean ``xi`` and decays as ``exp(-mu * t)``. Every period ``T`` the crawler crawls some sources; crawling a
source collects the total current utility of its uncollected content, the source's state ``X``.

Pure functions named with the paper's symbols; nothing here touches the network or global state.
The closed-form index of Theorem 1 itself (``eta``, ``whittle_index``) is in
:mod:`oasis.robot.scheduling.recrawl`, where the live robot uses it for re-crawling; this module builds the
multi-source model around it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oasis.robot.scheduling.recrawl import whittle_index
from oasis.runtime.files import read_json

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class Source:
    """One source of ephemeral content (papers/002, Section 2 and Table 1)."""

    xi: float  # mean initial utility of an item, xi-bar_i
    mu: float  # decay rate of an item's utility
    lam: float  # Poisson arrival rate of new items, Lambda_i
    C: float = 1.0  # crawl cost C_i (Eq. 5)

    def __post_init__(self) -> None:
        if not (self.xi >= 0 and math.isfinite(self.xi)):
            raise ValueError(f"xi must be finite and >= 0, got {self.xi}")
        if not (self.mu > 0 and math.isfinite(self.mu)):
            raise ValueError(f"mu must be finite and > 0, got {self.mu}")
        if not (self.lam >= 0 and math.isfinite(self.lam)):
            raise ValueError(f"lam must be finite and >= 0, got {self.lam}")
        if not (self.C > 0 and math.isfinite(self.C)):
            raise ValueError(f"C must be finite and > 0, got {self.C}")


@dataclass(frozen=True, kw_only=True)
class Model:
    """N sources crawled at multiples of the period ``T``."""

    sources: tuple[Source, ...]
    T: float = 1.0

    def __post_init__(self) -> None:
        if not self.sources:
            raise ValueError("a model needs at least one source")
        if not (self.T > 0 and math.isfinite(self.T)):
            raise ValueError(f"T must be finite and > 0, got {self.T}")

    @property
    def N(self) -> int:
        return len(self.sources)

    def u(self) -> FloatArray:
        return np.array([u_i(s.xi, s.mu, s.lam, self.T) for s in self.sources])

    def alpha(self) -> FloatArray:
        return np.array([alpha_i(s.mu, self.T) for s in self.sources])

    def C(self) -> FloatArray:
        return np.array([s.C for s in self.sources])

    def u_star(self) -> FloatArray:
        return self.u() / (1.0 - self.alpha())

    def to_json(self) -> dict[str, Any]:
        return {
            "T": self.T,
            "sources": [{"xi": s.xi, "mu": s.mu, "lam": s.lam, "C": s.C} for s in self.sources],
        }


def model_from_json(data: Mapping[str, Any]) -> Model:
    """Build a model from ``{"T": 1.0, "sources": [{"xi": .., "mu": .., "lam": .., "C": ..}, ...]}``."""
    if not isinstance(data, Mapping) or "sources" not in data:
        raise ValueError('a sources file must be a JSON object with a "sources" list')
    raw = data["sources"]
    if not isinstance(raw, list) or not raw:
        raise ValueError('"sources" must be a non-empty list')
    sources = []
    for k, s in enumerate(raw):
        if not isinstance(s, Mapping):
            raise ValueError(f"source {k} must be an object")
        missing = {"xi", "mu", "lam"} - set(s)
        if missing:
            raise ValueError(f"source {k} lacks {sorted(missing)}")
        unknown = set(s) - {"xi", "mu", "lam", "C"}
        if unknown:
            raise ValueError(f"source {k} has unknown keys {sorted(unknown)}")
        try:
            sources.append(
                Source(xi=float(s["xi"]), mu=float(s["mu"]), lam=float(s["lam"]), C=float(s.get("C", 1.0)))
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"source {k}: {exc}") from exc
    return Model(sources=tuple(sources), T=float(data.get("T", 1.0)))


def load_model(path: str | Path) -> Model:
    return model_from_json(read_json(path, "sources"))


def paper_model() -> Model:
    """The 4-source example of papers/002 Table 1 (T = 1, C_i = 1)."""
    xi = (1.0, 0.7, 0.2, 0.08)
    mu = (0.7, 0.35, 0.7, 0.21)
    return Model(sources=tuple(Source(xi=x, mu=m, lam=250.0) for x, m in zip(xi, mu, strict=True)), T=1.0)


def u_i(xi: float, mu: float, lam: float, T: float) -> float:
    # papers/002 Eq. 1: u_i = Lambda_i xi_i / mu_i (1 - exp(-mu_i T)), utility added per period
    return lam * xi / mu * (1.0 - math.exp(-mu * T))


def alpha_i(mu: float, T: float) -> float:
    # papers/002, below Eq. 1: alpha_i = exp(-mu_i T), per-period decay of the state
    return math.exp(-mu * T)


def passive_step(x: float, alpha: float, u: float) -> float:
    # papers/002 Eq. 2: X(t+1) = alpha X(t) + u when not crawled
    return alpha * x + u


def active_step(u: float) -> float:
    # papers/002 Eq. 3: X(t+1) = u when crawled (the reward collected is X(t))
    return u


def orbit(k: int, alpha: float, u: float) -> float:
    """State k periods after a crawl-reset to 0: X(k) = u (1 - alpha^k) / (1 - alpha) (X(1) = u)."""
    if k < 0:
        raise ValueError("k must be >= 0")
    return u * (1.0 - alpha**k) / (1.0 - alpha)


def whittle_index_discrete(k: int, alpha: float, u: float, C: float = 1.0) -> float:
    """Theorem 1's remark: on the orbit x = X(k), gamma = (1/C)(eta ((1 - alpha) x - u) + x), eta = k."""
    x = orbit(k, alpha, u)
    # papers/002 Theorem 1, Remark (simplified form on the discrete set of reachable states)
    return (k * ((1.0 - alpha) * x - u) + x) / C


def whittle_indices(x: Sequence[float] | FloatArray, model: Model) -> FloatArray:
    """gamma_i(x_i) for every source of ``model``."""
    u = model.u()
    a = model.alpha()
    c = model.C()
    return np.array(
        [whittle_index(float(xi), float(a[i]), float(u[i]), float(c[i])) for i, xi in enumerate(x)]
    )
