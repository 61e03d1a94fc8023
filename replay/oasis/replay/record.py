"""The record of issue 10's clean evaluation splits (``clean_splits.json``, package data beside this module).

Each split was fixed and committed before it was run once (``python -m oasis.replay.shipped evaluate --split
holdout-N``); its row keeps that run's counts as the README's split table shows them: the first traversals
ahead of greedy-anchor as served, and since holdout-9 the paired verdicts over 10 link orders (first traversal
vs greedy-anchor: ahead / level / behind; traversal 10 vs the robot's own first: improves / flat / falls, and
the same without the web's memory since holdout-10), and the runs where the memorising hybrid reached
greedy-oracle. A session that runs a split appends its row; ``python -m oasis.replay.shipped clean`` prints
the table, its totals and a sign test of each paired count (``tests/test_replay_record.py`` checks that the
README's table says the same).

The sign test asks whether the robot is ahead (or improves) more often than behind (or falls) on the runs
where the paired verdict is not level: under the null hypothesis that each such run goes either way with
probability 1/2, the two-sided exact binomial p-value of the smaller count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oasis.runtime.files import read_json

RECORD = Path(__file__).with_name("clean_splits.json")

Counts = tuple[int, int, int]  # ahead / level / behind, or improves / flat / falls


@dataclass(frozen=True)
class CleanSplit:
    """One clean split's single run, as recorded."""

    split: str
    webs: str
    session: int  # the session that ran it
    robot: int  # the session whose robot it ran
    runs: int
    served_ahead: int  # first traversals ahead of greedy-anchor on the served link order
    paired: Counts | None  # first traversal vs greedy-anchor over 10 link orders (None: not measured then)
    later: Counts | None  # traversal 10 vs the robot's own first over 10 link orders
    features: Counts | None  # the same without the URL-keyed directory term and the replayed weight
    hybrid: int  # runs where the memorising hybrid is at or above greedy-oracle


def _counts(value: Any, runs: int, name: str) -> Counts | None:
    if value is None:
        return None
    if not (
        isinstance(value, list) and len(value) == 3 and all(isinstance(x, int) and x >= 0 for x in value)
    ):
        raise ValueError(f"{name}: expected three counts, got {value!r}")
    if sum(value) != runs:
        raise ValueError(f"{name}: {value} does not add up to {runs} runs")
    return (value[0], value[1], value[2])


def load_record(path: Path | None = None) -> list[CleanSplit]:
    """The clean splits in the order they were run (``path``: the package's record); a malformed row is a
    ValueError naming it."""
    path = RECORD if path is None else path
    raw = read_json(path, "the clean-split record")  # JSONFileError (a ValueError) naming it
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a list of splits")
    rows: list[CleanSplit] = []
    for item in raw:
        name = item.get("split", "?") if isinstance(item, dict) else "?"
        try:
            runs = int(item["runs"])
            row = CleanSplit(
                split=str(item["split"]),
                webs=str(item["webs"]),
                session=int(item["session"]),
                robot=int(item["robot"]),
                runs=runs,
                served_ahead=int(item["served_ahead"]),
                paired=_counts(item["paired"], runs, f"{name} paired"),
                later=_counts(item["later"], runs, f"{name} later"),
                features=_counts(item["features"], runs, f"{name} features"),
                hybrid=int(item["hybrid"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: split {name}: {exc}") from exc
        if not (0 <= row.served_ahead <= runs and 0 <= row.hybrid <= runs):
            raise ValueError(f"{path}: split {name}: a count outside 0..{runs}")
        rows.append(row)
    return rows


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: the probability, were each of the ``wins + losses`` runs a fair coin, of a
    split at least as uneven as this one (ties are left out before it is called). 1.0 with no runs."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = math.fsum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def _add(rows: Sequence[CleanSplit], field: str) -> tuple[Counts, int]:
    """The summed counts of ``field`` over the rows that measured it, and how many runs those rows hold."""
    total, runs = [0, 0, 0], 0
    for row in rows:
        counts = getattr(row, field)
        if counts is not None:
            total = [t + c for t, c in zip(total, counts, strict=True)]
            runs += row.runs
    return (total[0], total[1], total[2]), runs


def totals(rows: Sequence[CleanSplit]) -> dict[str, Any]:
    """Every total of the record: counts, the runs they cover and the paired counts' sign tests."""
    out: dict[str, Any] = {
        "splits": len(rows),
        "runs": sum(r.runs for r in rows),
        "served_ahead": sum(r.served_ahead for r in rows),
        "hybrid": sum(r.hybrid for r in rows),
    }
    for field in ("paired", "later", "features"):
        counts, runs = _add(rows, field)
        out[field] = {"counts": counts, "runs": runs, "sign_p": sign_test(counts[0], counts[2])}
    return out


def _cell(counts: Counts | None) -> str:
    return "—" if counts is None else " / ".join(str(c) for c in counts)


HEAD = (
    "split: webs",
    "run in session, robot of session",
    "first traversal ahead as served",
    "paired: ahead / level / behind",
    "traversal 10 vs own first, paired (without d(D))",
    "hybrid at or above greedy-oracle",
)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def record_table(rows: Sequence[CleanSplit]) -> str:
    """The record as a Markdown table with its totals and the sign tests below it."""
    t = totals(rows)
    lines = [_row(HEAD), "|---|---|---|---|---|---|"]
    for r in rows:
        later = _cell(r.later) + ("" if r.features is None else f" ({_cell(r.features)})")
        served, hybrid = f"{r.served_ahead} of {r.runs}", f"{r.hybrid} of {r.runs}"
        lines.append(
            _row((f"{r.split}: {r.webs}", f"{r.session}, {r.robot}", served, _cell(r.paired), later, hybrid))
        )
    p, lat, feat = t["paired"], t["later"], t["features"]
    later = f"**{_cell(lat['counts'])}** of {lat['runs']} ({_cell(feat['counts'])} of {feat['runs']})"
    cells: tuple[str, ...] = (f"**{t['splits']} splits**", "", f"**{t['served_ahead']} of {t['runs']}**")
    cells += (f"**{_cell(p['counts'])}** of {p['runs']}", later, f"**{t['hybrid']} of {t['runs']}**")
    lines += [_row(cells).replace("|  |", "| |"), ""]
    ahead, level, behind = p["counts"]
    up, _, down = lat["counts"]
    f_up, _, f_down = feat["counts"]
    lines += [
        f"first traversal vs greedy-anchor, paired: ahead {ahead}, behind {behind}, level {level} (left out):"
        f" sign test p = {p['sign_p']:.2g}",
        f"traversal 10 vs the robot's own first, paired: improves {up}, falls {down}:"
        f" p = {lat['sign_p']:.2g}; without the web's memory: improves {f_up}, falls {f_down}:"
        f" p = {feat['sign_p']:.2g}",
    ]
    return "\n".join(lines)


def record_row(split: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The record's row for a split just evaluated (``oasis.replay.shipped.evaluate``'s rows), for the session
    to append to ``clean_splits.json``: every count from the rows; ``webs`` the corpora by name, ``session``
    and ``robot`` left null (the evaluation does not know them; the README's table gives the pages)."""

    def tally(key: str, words: tuple[str, str, str]) -> list[int] | None:
        if not rows or any(key not in r for r in rows):
            return None
        return [sum(r[key] == w for r in rows) for w in words]

    names: list[str] = []
    for r in rows:
        name = str(r["corpus"]).split(":")[-1].removeprefix("python-").removesuffix("-doc")
        if name not in names:
            names.append(name)
    return {
        "split": split,
        "webs": ", ".join(names),
        "session": None,
        "robot": None,
        "runs": len(rows),
        "served_ahead": sum(r["t1_vs_greedy_anchor"] > 0 for r in rows),
        "paired": tally("orders_verdict", ("ahead", "level", "behind")),
        "later": tally("orders_last_verdict", ("improves", "flat", "falls")),
        "features": tally("features_last_verdict", ("improves", "flat", "falls")),
        "hybrid": sum(r["hybrid_vs_oracle"] >= 0 for r in rows),
    }
