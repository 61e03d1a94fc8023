"""PNG plots of a replay experiment (matplotlib, Agg backend): Figure 3 (P/P_upper against traversal),
Figures 4-5 (relevance of each fetched document in order) and R/F/M over time."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import matplotlib

from oasis.replay.figures import write_figure

matplotlib.use("Agg")
import matplotlib.pyplot as plt

logger = logging.getLogger(__name__)

_BASELINE_STYLE = {
    "upper": ("black", "-"),
    "random": ("grey", ":"),
    "bfs": ("tab:brown", "-."),
    "greedy-oracle": ("tab:red", "--"),
    "greedy-parent": ("tab:orange", "--"),
    "greedy-anchor": ("tab:green", "--"),
    "greedy-lookahead": ("tab:purple", ":"),
}


def _title(results: dict[str, Any]) -> str:
    meta = results.get("meta", {})
    topic = meta.get("topic")
    return (
        f"{meta.get('corpus', '?')}" + (f" — topic {topic!r}" if topic else "") + f" (m={results.get('m')})"
    )


def plot_traversals(results: dict[str, Any], path: Path) -> None:
    """Figure 3: P / P_upper of each learning policy per traversal, baselines as horizontal lines."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    pols = results["policies"]
    n = max((len(v["P_ratio"]) for v in pols.values()), default=1)
    xs = list(range(1, n + 1))
    for name, entry in pols.items():
        ratios = entry["P_ratio"]
        if len(ratios) > 1 or name.startswith("whittle"):
            ax.plot(range(1, len(ratios) + 1), ratios, marker="o", ms=3, label=name)
        else:
            color, style = _BASELINE_STYLE.get(name, ("tab:blue", "--"))
            ax.plot(
                [1, max(n, 2)],
                [ratios[0]] * 2,
                color=color,
                linestyle=style,
                label=f"{name} ({ratios[0]:.3f})",
            )
            if name == "random" and "P_ratio_std" in entry:
                sd = entry["P_ratio_std"]
                ax.fill_between([1, max(n, 2)], ratios[0] - sd, ratios[0] + sd, color=color, alpha=0.15)
    ax.axhline(0.96, color="green", lw=0.6, alpha=0.6)
    ax.set_xlabel("traversal")
    ax.set_ylabel("P / P_upper")
    ax.set_xlim(1, max(xs[-1], 2))
    ax.set_title(_title(results), fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    write_figure(fig, path, dpi=90)


def plot_order(results: dict[str, Any], policy: str, path: Path, *, key: str = "order") -> None:
    """Figures 4-5: relevance of each document fetched, in fetch order, for ``policy`` and the upper bound."""
    pols = results["policies"]
    if policy not in pols or "upper" not in pols:
        return
    fig, ax = plt.subplots(figsize=(7, 3.6))
    upper = pols["upper"]["order"]
    ours = pols[policy].get(key, pols[policy]["order"])
    ax.scatter(range(len(upper)), upper, s=3, color="black", label="upper bound")
    ax.scatter(range(len(ours)), ours, s=3, color="tab:blue", alpha=0.6, label=policy)
    ax.set_xlabel("fetch number")
    ax.set_ylabel("relevance r(i)")
    ax.set_title(_title(results), fontsize=9)
    ax.legend(fontsize=7, markerscale=3)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    write_figure(fig, path, dpi=90)


def plot_rfm(results: dict[str, Any], path: Path) -> None:
    """R, F and M over (normalised) time for every policy."""
    pols = results["policies"]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4), sharey=True)
    for name, entry in pols.items():
        for ax, key in zip(axes, ("R", "F", "M"), strict=True):
            ys = entry.get(key, [])
            if ys:
                xs = [k / max(len(ys) - 1, 1) for k in range(len(ys))]
                ax.plot(xs, ys, lw=1, label=name)
    for ax, key in zip(axes, ("recall R", "freshness F", "quality M = min(R, F)"), strict=True):
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("t / T")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(_title(results), fontsize=9)
    fig.tight_layout()
    write_figure(fig, path, dpi=90)


def write_plots(results: dict[str, Any], out: Path, prefix: str = "") -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    p = out / f"{prefix}traversals.png"
    plot_traversals(results, p)
    paths.append(p)
    learners = [k for k in results["policies"] if k.startswith("whittle")]
    for name in learners:
        p = out / f"{prefix}order-{name.replace(':', '-')}.png"
        plot_order(results, name, p)
        paths.append(p)
    if "greedy-oracle" in results["policies"]:
        p = out / f"{prefix}order-greedy-oracle.png"
        plot_order(results, "greedy-oracle", p)
        paths.append(p)
    p = out / f"{prefix}rfm.png"
    plot_rfm(results, p)
    paths.append(p)
    return [q for q in paths if q.exists()]


def _run_label(row: dict[str, Any]) -> str:
    """``run corpus topic`` of a training run, short: a synthetic web by its seed, a Debian corpus by name."""
    corpus = str(row["corpus"])
    synthetic = corpus.startswith("synthetic")
    name = "synthetic seed " + corpus.rsplit("=", 1)[-1] if synthetic else corpus.split(":")[-1]
    return f"{row['run']} {name[:22]} {str(row['topic'])[:24]}"


def _per_run_axes(rows: list[dict[str, Any]]) -> tuple[Any, Any, list[int]]:
    """A figure with one row per run (the first at the top) and its y positions."""
    n = len(rows)
    fig, ax = plt.subplots(figsize=(8, max(3.0, 0.26 * n + 1.2)))
    return fig, ax, list(range(n))[::-1]


def _save(fig: Any, ax: Any, xlabel: str, ylabel: str | None, title: str, path: Path) -> None:
    """The axis labels and the title (small: these titles say a lot), then the figure written to ``path``."""
    ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=8)
    fig.tight_layout()
    write_figure(fig, path, dpi=110)
    logger.info("wrote %s", path)


def _save_per_run(
    fig: Any, ax: Any, ys: list[int], rows: list[dict[str, Any]], xlabel: str, title: str, path: Path
) -> None:
    """The per-run figure's zero line, run labels, symlog % axis and title, written to ``path``."""
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_yticks(ys)
    ax.set_yticklabels([_run_label(r) for r in rows], fontsize=7)
    ax.set_xscale("symlog", linthresh=1.0)
    _save(fig, ax, xlabel, None, title, path)


def plot_tie_noise(rows: list[dict[str, Any]], path: Path) -> None:
    """Per training run (``oasis.replay.shipped.tie_noise``): the shipped robot's first-traversal margin over
    greedy-anchor (dot) against greedy-anchor-shuffled's spread (bar: mean +- 2 sd; line: min to max), %."""
    fig, ax, ys = _per_run_axes(rows)
    for y, r in zip(ys, rows, strict=True):
        ax.plot([r["shuffled_min"], r["shuffled_max"]], [y, y], color="grey", lw=0.8)
        lo, hi = r["shuffled_mean"] - 2 * r["shuffled_sd"], r["shuffled_mean"] + 2 * r["shuffled_sd"]
        ax.barh(y, hi - lo, left=lo, height=0.5, color="tab:green", alpha=0.3)
        ax.plot(r["robot"], y, "o", ms=4, color="tab:blue" if r["robot"] > 0 else "tab:red")
    title = (
        "first traversal: the robot as shipped (dot: blue ahead, red behind) vs greedy-anchor\n"
        "with its exact ties shuffled (bar: mean +- 2 sd, line: min to max)"
    )
    _save_per_run(fig, ax, ys, rows, "first traversal's raw P vs greedy-anchor's (%)", title, path)


def plot_inlink(rows: list[dict[str, Any]], path: Path) -> None:
    """Per run (``oasis.replay.shipped.inlink_evidence``): the robot's first-traversal margin over
    greedy-anchor (y) against greedy-anchor-mean's (x), %: on the diagonal the robot is the in-link mean
    without learning; in the lower-left quadrant the mean costs and the robot loses with it."""
    fig, ax = plt.subplots(figsize=(6.0, 5.0))
    xs = [float(r["mean"]) for r in rows]
    ys = [float(r["robot"]) for r in rows]
    colours = ["tab:blue" if y > 0 else "tab:red" for y in ys]
    ax.scatter(xs, ys, s=14, c=colours, alpha=0.8)
    lim = max([1.0, *(abs(v) for v in xs + ys)])
    ax.plot([-lim, lim], [-lim, lim], color="grey", lw=0.8, ls="--")
    ax.axhline(0.0, color="black", lw=0.8)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_yscale("symlog", linthresh=1.0)
    title = (
        f"first traversal, raw P, {len(rows)} runs: the robot (blue ahead of greedy-anchor, red not)\n"
        "against the in-link mean alone (dashed: the robot = the mean)"
    )
    xlabel = "the in-link mean, no learning (greedy-anchor-mean) vs greedy-anchor (%)"
    _save(fig, ax, xlabel, "the robot as shipped vs greedy-anchor (%)", title, path)


def _plot_paired(
    rows: list[dict[str, Any]], path: Path, keys: tuple[str, str, str, str], colour: dict[str, str], text: str
) -> None:
    """One row per run: a paired mean (cross) +- 2 standard errors (bar, coloured by its verdict) and a dot;
    ``keys`` names the row's mean, standard error, verdict and dot; ``text`` is the x label, then the
    title."""
    mean, se, verdict, dot = keys
    fig, ax, ys = _per_run_axes(rows)
    for y, r in zip(ys, rows, strict=True):
        lo, hi = r[mean] - 2 * r[se], r[mean] + 2 * r[se]
        ax.barh(y, hi - lo, left=lo, height=0.5, color=colour[r[verdict]], alpha=0.35)
        ax.plot(r[mean], y, "x", ms=5, color=colour[r[verdict]])
        ax.plot(r[dot], y, "o", ms=3, color="black")
    xlabel, title = text.split("\n", 1)
    _save_per_run(fig, ax, ys, rows, xlabel, title, path)


def plot_link_orders(rows: list[dict[str, Any]], path: Path) -> None:
    """Per run (``oasis.replay.shipped.link_orders``): the shipped robot's first-traversal margin over
    greedy-anchor on the web as served (dot) and, paired over random link orders, its mean (cross) +- 2
    standard errors (bar), %: a bar clear of 0 is a margin the order of sibling links does not explain."""
    text = (
        "first traversal's raw P vs greedy-anchor's on the same link order (%)\n"
        "the robot as shipped vs greedy-anchor, paired over random link orders:\n"
        "mean (x) +- 2 SE (bar: blue ahead, red behind, grey level within 2 SE);\n"
        "dot: the web as served (the order every other table reports)"
    )
    colour = {"ahead": "tab:blue", "behind": "tab:red", "level": "grey"}
    _plot_paired(rows, path, ("mean", "se", "verdict", "as_served"), colour, text)


def plot_margin_by_size(rows: list[dict[str, Any]], path: Path) -> None:
    """Per run (``oasis.replay.shipped.link_orders``): the robot's first-traversal margin over greedy-anchor,
    paired over link orders (mean +- 2 standard errors, coloured by verdict), against the web's reachable
    pages (log scale): where the first traversal's margin comes from."""
    colour = {"ahead": "tab:blue", "behind": "tab:red", "level": "grey"}
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for r in rows:
        c = colour[r["verdict"]]
        ax.errorbar(r["pages"], r["mean"], yerr=2 * r["se"], fmt="x", ms=5, color=c, ecolor=c, alpha=0.8)
    ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1.0)
    title = (
        "the robot vs greedy-anchor, paired over random link orders, by web size:\n"
        "mean +- 2 SE (blue ahead, red behind, grey level within 2 SE)"
    )
    ylabel = "first traversal's raw P vs greedy-anchor's (%)"
    _save(fig, ax, "reachable pages of the web (log)", ylabel, title, path)


def plot_later_traversals(rows: list[dict[str, Any]], path: Path) -> None:
    """Per run (``oasis.replay.shipped.link_orders`` with traversals > 1): the robot's last traversal over
    its own first on the same link order, mean (cross) +- 2 standard errors (bar) over the orders, and the
    mean of the worst later traversal (dot), %: does learning on the web keep paying, beyond the order?"""
    n = rows[0]["traversals"] if rows else 0
    text = (
        f"traversal {n}'s raw P vs traversal 1's (%)\n"
        f"the robot as shipped, traversal {n} vs its own first on the same link order:\n"
        "mean (x) +- 2 SE over the orders (bar: blue improves, red falls, grey flat within 2 SE);\n"
        "dot: the mean of the worst later traversal"
    )
    colour = {"improves": "tab:blue", "falls": "tab:red", "flat": "grey"}
    _plot_paired(rows, path, ("last_mean", "last_se", "last_verdict", "worst_mean"), colour, text)


def plot_clean_splits(rows: list[dict[str, Any]], path: Path) -> None:
    """Every clean split's single run (``oasis.replay.record``), one column per split in the order run: the
    first traversal's paired verdicts against greedy-anchor (stacked: ahead, level, behind) with the runs
    ahead as served (dot), and below, traversal 10's paired verdicts against the robot's own first."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9.0, 6.0), sharex=True)
    xs = list(range(len(rows)))
    colours = ("tab:blue", "lightgrey", "tab:red")
    for ax, key, words in (
        (top, "paired", ("ahead", "level", "behind")),
        (bottom, "later", ("improves", "flat", "falls")),
    ):
        base = [0.0] * len(rows)
        for k, (word, colour) in enumerate(zip(words, colours, strict=True)):
            heights = [float(r[key][k]) if r[key] is not None else 0.0 for r in rows]
            ax.bar(xs, heights, bottom=base, color=colour, width=0.75, label=word)
            base = [b + h for b, h in zip(base, heights, strict=True)]
        ax.set_ylim(0, max(float(r["runs"]) for r in rows) + 1.2)
    top.plot(xs, [r["served_ahead"] for r in rows], "o", color="black", ms=4, label="ahead as served")
    for ax in (top, bottom):
        ax.legend(fontsize=7, loc="upper center", ncols=4, frameon=False)
    top.set_ylabel("first traversal vs\ngreedy-anchor (runs)", fontsize=8)
    bottom.set_ylabel("traversal 10 vs\nthe robot's first (runs)", fontsize=8)
    bottom.set_xticks(xs)
    bottom.set_xticklabels([str(r["split"]).removeprefix("holdout-") for r in rows], fontsize=7)
    served = sum(int(r["served_ahead"]) for r in rows)
    runs = sum(int(r["runs"]) for r in rows)
    title = (
        f"{len(rows)} clean splits, each run once: first traversal ahead of greedy-anchor as served on "
        f"{served} of {runs} (dots);\nbars: paired over 10 link orders (not measured before holdout-9)"
    )
    top.set_title(title, fontsize=8)
    _save(fig, bottom, "clean split (holdout-N, in the order run)", None, "", path)
