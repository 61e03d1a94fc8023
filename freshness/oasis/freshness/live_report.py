"""``oasis report --out DIR``: PNG plots of a running (or stopped) cluster's live R(t), F(t), M(t) per topic,
the live analogue of the replay's curves, from the evaluator's series ``STATE_DIR/quality.jsonl``
(format: docs/living.md).

Writes ``DIR/quality.png`` (one panel per topic: R, F, M over time, with the web's change counts) and
``DIR/estimates.png`` (each robot's own recall and freshness estimates against the ground truth).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from oasis.freshness.series import read_series
from oasis.replay.figures import write_figure
from oasis.runtime.files import FileWriteError, writable_folder

DEFAULT_STATE_DIR = ".oasis"  # as `oasis up` (oasis.cluster.launcher.DEFAULT_STATE_DIR)
SERIES = "quality.jsonl"


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("report", help="PNG plots of live R/F/M per topic over time")
    p.add_argument("--out", type=Path, required=True, help="folder for the PNG files")
    p.add_argument(
        "--state-dir", default=None, help="cluster state directory (default $OASIS_STATE_DIR or ./.oasis)"
    )
    p.set_defaults(func=cmd_report)


def plot_quality(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    topics = sorted({t for r in rows for t in r["topics"]})
    t0 = rows[0]["time"]
    written = []
    fig, axes = plt.subplots(len(topics), 1, figsize=(8, 2.6 * len(topics) + 0.6), sharex=True, squeeze=False)
    for ax, topic in zip(axes[:, 0], topics, strict=True):
        pts = [(r["time"] - t0, r["topics"][topic]) for r in rows if topic in r["topics"]]
        x = [p[0] for p in pts]
        for key, style in (("recall", "-"), ("freshness", "--"), ("M", "-")):
            lw = 2.2 if key == "M" else 1.2
            ax.plot(x, [p[1][key] for p in pts], style, lw=lw, label=key if key == "M" else key[0].upper())
        last = pts[-1][1]
        title = f"{topic}: P/t = {last.get('P_mean', 0):.3f}, {last['documents']} documents"
        ax.set_title(title, fontsize=10)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("quality")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8, ncol=3)
    web = rows[-1].get("web", {})
    axes[-1, 0].set_xlabel(
        f"seconds (web: {web.get('modified', 0)} modified, {web.get('deleted', 0)} deleted, "
        f"{web.get('created', 0)} created)"
    )
    fig.suptitle("Live recall R(t), freshness F(t), M(t) = min(R, F) against the web's ground truth")
    fig.tight_layout()
    path = out / "quality.png"
    write_figure(fig, path, dpi=110)
    written.append(path)

    fig, axes = plt.subplots(len(topics), 1, figsize=(8, 2.4 * len(topics) + 0.6), sharex=True, squeeze=False)
    for ax, topic in zip(axes[:, 0], topics, strict=True):
        pts = [(r["time"] - t0, r["topics"][topic]) for r in rows if "robot" in r["topics"].get(topic, {})]
        pts = [p for p in pts if "freshness_estimate" in p[1]["robot"]]
        x = [p[0] for p in pts]
        ax.plot(x, [p[1]["freshness"] for p in pts], "-", label="F (truth)")
        ax.plot(x, [p[1]["robot"]["freshness_estimate"] for p in pts], "--", label="F (robot's estimate)")
        ax.plot(x, [p[1]["recall"] for p in pts], "-", label="R (truth)")
        ax.plot(x, [p[1]["robot"]["recall_estimate"] for p in pts], "--", label="R (robot's estimate)")
        ax.set_title(topic, fontsize=10)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=7, ncol=2)
    axes[-1, 0].set_xlabel("seconds")
    fig.suptitle("Robots' own estimates (no ground truth) against the truth")
    fig.tight_layout()
    path = out / "estimates.png"
    write_figure(fig, path, dpi=110)
    written.append(path)
    return written


def cmd_report(args: argparse.Namespace) -> int:
    state_dir = Path(args.state_dir or os.environ.get("OASIS_STATE_DIR") or DEFAULT_STATE_DIR)
    series = state_dir / SERIES
    if not series.is_file():
        print(f"oasis report: no series {series} (a living web's evaluator writes it)", file=sys.stderr)
        return 1
    rows = read_series(series)
    if not rows:
        print(f"oasis report: {series} has no samples yet", file=sys.stderr)
        return 1
    try:  # the folder is checked before the plots are drawn; a disk failing while they are written: one line
        writable_folder(args.out)
        written = plot_quality(rows, args.out)
    except FileWriteError as exc:
        print(f"oasis report: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    last = rows[-1]
    for topic, q in sorted(last["topics"].items()):
        r, f, m, p = q["recall"], q["freshness"], q["M"], q.get("P_mean", 0.0)
        print(f"{topic:<14} R {r:.3f}  F {f:.3f}  M {m:.3f}  P/t {p:.3f}")
    return 0
