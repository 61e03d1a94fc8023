"""PNG plots of the freshness experiments (matplotlib, Agg backend)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from oasis.freshness.ephemeral import Model
from oasis.replay.figures import write_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _plt():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _finish(
    fig: Figure, ax: Axes, path: Path, *, xlabel: str, ylabel: str, title: str, legend_fontsize: int | None
) -> Path:
    """Label the axes, add the legend, write the PNG at 80 dpi and close the figure."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if legend_fontsize is None:
        ax.legend()
    else:
        ax.legend(fontsize=legend_fontsize)
    fig.tight_layout()
    write_figure(fig, path, dpi=80)
    return path


def content_value(model: Model, path: Path, *, horizon: float = 10.0) -> Path:
    """papers/002 Figure 1: an item's expected utility xi-bar_i exp(-mu_i t)."""
    plt = _plt()
    t = np.linspace(0, horizon, 200)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for i, s in enumerate(model.sources):
        ax.plot(t, s.xi * np.exp(-s.mu * t), label=f"source {i + 1}")
    return _finish(
        fig,
        ax,
        path,
        xlabel="time since publication",
        ylabel="expected utility",
        title="Content value over time (papers/002 Fig. 1)",
        legend_fontsize=None,
    )


def state_trajectories(
    X: NDArray[np.float64], crawled: NDArray[np.bool_], path: Path, *, title: str, steps: int = 40
) -> Path:
    """papers/002 Figures 2-4: X_i(t) per source, crawls marked."""
    plt = _plt()
    n = min(steps, X.shape[0])
    t = np.arange(n)
    fig, ax = plt.subplots(figsize=(7, 4))
    for i in range(X.shape[1]):
        (line,) = ax.plot(t, X[:n, i], marker=".", label=f"source {i + 1}")
        c = np.flatnonzero(crawled[:n, i])
        ax.plot(c, X[c, i], "o", mfc="none", ms=9, color=line.get_color())
    return _finish(
        fig,
        ax,
        path,
        xlabel="period t",
        ylabel="state X_i(t) (circles: crawled)",
        title=title,
        legend_fontsize=8,
    )


def index_convergence(
    steps: NDArray[np.int64],
    history: NDArray[np.float64],
    exact: NDArray[np.float64],
    path: Path,
    *,
    title: str,
) -> Path:
    """papers/001 Figures 1, 4, 5: learned (solid) and exact (dashed) Whittle indices."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for k in range(history.shape[1]):
        (line,) = ax.plot(steps, history[:, k], label=f"state {k + 1}")
        ax.axhline(exact[k], ls="--", color=line.get_color(), lw=1)
    lo, hi = float(exact.min()), float(exact.max())
    pad = max(0.5, 0.5 * (hi - lo))
    ax.set_ylim(lo - pad, hi + pad)
    return _finish(fig, ax, path, xlabel="time step", ylabel="Whittle index", title=title, legend_fontsize=8)


def running_rewards(
    curves: Mapping[str, NDArray[np.float64]], path: Path, *, title: str, ylabel: str
) -> Path:
    """papers/001 Figures 2-3: running time-averaged reward of each run."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, r in curves.items():
        avg = np.cumsum(r) / np.arange(1, r.shape[0] + 1)
        ax.plot(np.arange(1, r.shape[0] + 1), avg, label=name)
    ax.set_xscale("log")
    return _finish(fig, ax, path, xlabel="time step", ylabel=ylabel, title=title, legend_fontsize=8)


def curves_over_time(
    curves: Mapping[str, Sequence[float] | NDArray[np.float64]], path: Path, *, title: str, ylabel: str
) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, c in curves.items():
        ax.plot(np.arange(1, len(c) + 1), np.asarray(c), label=name)
    return _finish(fig, ax, path, xlabel="time step", ylabel=ylabel, title=title, legend_fontsize=8)
