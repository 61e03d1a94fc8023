"""The record of issue 10's clean splits (oasis.replay.record): its sign test by hand, its rows against the
splits the replay knows and against the README's split table, and a damaged record's error."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from oasis.replay import record
from oasis.replay.record import CleanSplit, load_record, record_row, record_table, sign_test, totals
from oasis.replay.shipped import SPLITS, TRAINING, main

README = Path(__file__).resolve().parents[1] / "README.md"


def test_sign_test_by_hand() -> None:
    assert sign_test(0, 0) == 1.0
    assert sign_test(3, 0) == 0.25  # 2 x (1/2)^3
    assert sign_test(9, 1) == pytest.approx(2 * 11 / 1024)  # 2 x (C(10,0) + C(10,1)) / 2^10
    assert sign_test(1, 9) == sign_test(9, 1)
    assert sign_test(5, 5) == 1.0  # 2 x P(X <= 5) > 1: capped
    assert sign_test(47, 19) < 0.001 < sign_test(10, 5)


def test_the_record_holds_every_split_run_and_only_those() -> None:
    rows = load_record()
    names = [r.split for r in rows]
    assert len(names) == len(set(names))
    seen = {name for name, runs in SPLITS.items() if all(run in TRAINING for run in runs)}
    unseen = set(SPLITS) - seen
    assert len(unseen) == 1, "exactly one split is fixed and not yet run"
    assert set(names) == seen
    for row in rows:  # its runs are the split's, and in TRAINING in the order the splits were run
        assert row.runs == len(SPLITS[row.split])
    order = [TRAINING.index(SPLITS[name][0]) for name in names]
    assert order == sorted(order)


def _numbers(cell: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", cell.replace(",", ""))]


def test_the_readme_split_table_says_what_the_record_says() -> None:
    rows = {r.split: r for r in load_record()}
    found: dict[str, list[str]] = {}
    total: list[str] | None = None
    for line in README.read_text(encoding="utf-8").splitlines():
        cells = [c.strip().replace("**", "") for c in line.strip().strip("|").split("|")]
        if len(cells) != 6:
            continue
        m = re.match(r"(holdout-\d+): ", cells[0])
        if m and re.match(r"\d+, \d+$", cells[1]):
            found[m.group(1)] = cells
        elif cells[0].endswith(" splits") and cells[2].endswith(f"of {sum(r.runs for r in rows.values())}"):
            total = cells
    assert set(found) == set(rows)
    for name, cells in found.items():
        r = rows[name]
        assert _numbers(cells[1]) == [r.session, r.robot], name
        assert cells[2].startswith(f"{r.served_ahead} of {r.runs}"), name
        assert (cells[3] == "—") == (r.paired is None), name
        if r.paired is not None:
            assert _numbers(cells[3]) == list(r.paired), name
        if r.later is not None:
            later = _numbers(cells[4])
            assert later[:3] == list(r.later), name
            assert later[3:] == (list(r.features) if r.features is not None else []), name
        assert cells[5].startswith(f"{r.hybrid} of {r.runs}"), name
    assert total is not None, "the README's totals row"
    t = totals(list(rows.values()))
    assert _numbers(total[2]) == [t["served_ahead"], t["runs"]]
    assert _numbers(total[3]) == [*t["paired"]["counts"], t["paired"]["runs"]]
    later = [*t["later"]["counts"], t["later"]["runs"], *t["features"]["counts"], t["features"]["runs"]]
    assert _numbers(total[4]) == later
    assert _numbers(total[5]) == [t["hybrid"], t["runs"]]


def test_totals_and_the_clean_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        CleanSplit("holdout-a", "A, B", 1, 1, 4, 2, None, None, None, 4),
        CleanSplit("holdout-b", "C, D", 2, 1, 4, 3, (3, 1, 0), (2, 1, 1), None, 3),
        CleanSplit("holdout-c", "E, F", 3, 2, 4, 1, (1, 1, 2), (4, 0, 0), (1, 3, 0), 4),
    ]
    t = totals(rows)
    assert (t["splits"], t["runs"], t["served_ahead"], t["hybrid"]) == (3, 12, 6, 11)
    assert t["paired"] == {"counts": (4, 2, 2), "runs": 8, "sign_p": sign_test(4, 2)}
    assert t["later"]["counts"] == (6, 1, 1) and t["features"] == {
        "counts": (1, 3, 0),
        "runs": 4,
        "sign_p": 1.0,
    }
    table = record_table(rows)
    assert (
        "| **3 splits** | | **6 of 12** | **4 / 2 / 2** of 8 | **6 / 1 / 1** of 8 (1 / 3 / 0 of 4) |" in table
    )
    assert main(["clean", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    whole = totals(load_record())
    assert f"ahead {whole['paired']['counts'][0]}, behind {whole['paired']['counts'][2]}" in out
    written = json.loads((tmp_path / "out" / "clean.json").read_text(encoding="utf-8"))
    assert written["totals"]["served_ahead"] == whole["served_ahead"]
    assert [s["split"] for s in written["splits"]] == [r.split for r in load_record()]
    assert (tmp_path / "out" / "clean.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    damaged = tmp_path / "damaged.json"
    damaged.write_text("[1]", encoding="utf-8")
    monkeypatch.setattr(record, "RECORD", damaged)
    with pytest.raises(SystemExit) as stop:
        main(["clean"])
    assert stop.value.code == 1
    assert f"{damaged}: split ?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"\xff\xfe", "cannot read the clean-split record"),
        (b'{"split": 1}', "expected a list of splits"),
        (b'[{"split": "holdout-x"}]', "split holdout-x"),
        (
            b'[{"split": "holdout-y", "webs": "", "session": 1, "robot": 1, "runs": 4, "served_ahead": 1,'
            b' "paired": [1, 1, 1], "later": null, "features": null, "hybrid": 4}]',
            "holdout-y paired: \\[1, 1, 1\\] does not add up to 4 runs",
        ),
    ],
)
def test_a_damaged_record_is_one_error_naming_it(tmp_path: Path, text: bytes, message: str) -> None:
    path = tmp_path / "clean_splits.json"
    path.write_bytes(text)
    with pytest.raises(ValueError, match=message):
        load_record(path)


def test_an_evaluated_splits_row_counts_what_evaluate_measured() -> None:
    def run(
        corpus: str, t1: float, paired: str, later: str, features: str, hybrid: float
    ) -> dict[str, object]:
        return {
            "corpus": corpus,
            "t1_vs_greedy_anchor": t1,
            "orders_verdict": paired,
            "orders_last_verdict": later,
            "features_last_verdict": features,
            "hybrid_vs_oracle": hybrid,
        }

    rows = [
        run("debian:python-slixmpp-doc", +0.4, "ahead", "improves", "flat", 0.0),
        run("debian:python-slixmpp-doc", -1.1, "level", "improves", "improves", -0.001),
        run("debian:python-pwntools-doc", 0.0, "behind", "falls", "flat", +0.2),
        run("debian:python-pwntools-doc", +2.0, "ahead", "flat", "falls", +0.1),
    ]
    row = record_row("holdout-x", rows)
    assert row == {
        "split": "holdout-x",
        "webs": "slixmpp, pwntools",
        "session": None,
        "robot": None,
        "runs": 4,
        "served_ahead": 2,  # 0.0 is a tie, not ahead
        "paired": [2, 1, 1],
        "later": [2, 1, 1],
        "features": [1, 2, 1],
        "hybrid": 3,  # at or above
    }
    unpaired = [{k: v for k, v in r.items() if not k.endswith("verdict")} for r in rows]  # --orders 0
    assert record_row("holdout-x", unpaired)["paired"] is None
