"""``oasis ephemeral``, ``oasis whittle-learn`` and ``oasis recrawl-eval`` (JSON interface, bad input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oasis.cli import main


def _json(capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    return json.loads(capsys.readouterr().out)


def test_ephemeral_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.json"
    f.write_text(
        json.dumps(
            {
                "T": 1.0,
                "sources": [
                    {"xi": 1.0, "mu": 0.7, "lam": 250},
                    {"xi": 0.7, "mu": 0.35, "lam": 250},
                    {"xi": 0.2, "mu": 0.7, "lam": 250, "C": 1.0},
                ],
            }
        )
    )
    code = main(
        [
            "ephemeral",
            "--sources",
            str(f),
            "--M",
            "1",
            "--policies",
            "whittle,best-only,optimal",
            "--steps",
            "300",
            "--json",
            "--plots",
            str(tmp_path / "img"),
        ]
    )
    assert code == 0
    out = _json(capsys)
    pol = out["policies"]
    assert set(pol) == {"whittle", "best-only", "optimal"}
    assert pol["best-only"]["mean_reward"] == pytest.approx(179.79, abs=0.01)
    assert pol["whittle"]["std"] == 0.0
    assert pol["optimal"]["mean_reward"] >= pol["whittle"]["mean_reward"] - 1e-6
    assert all(Path(p).is_file() for p in out["plots"])


def test_ephemeral_stochastic_spread(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "ephemeral",
            "--example",
            "paper",
            "--policies",
            "whittle,round-robin",
            "--stochastic",
            "--steps",
            "300",
            "--seeds",
            "3",
            "--json",
        ]
    )
    assert code == 0
    pol = _json(capsys)["policies"]
    assert pol["whittle"]["std"] > 0
    assert pol["whittle"]["mean_reward"] > pol["round-robin"]["mean_reward"]


def test_ephemeral_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"sources": [{"xi": 1}]}')
    assert main(["ephemeral", "--sources", str(bad), "--json"]) == 2
    assert "lacks" in capsys.readouterr().err
    assert main(["ephemeral", "--example", "paper", "--policies", "nope"]) == 2
    assert main(["ephemeral", "--example", "paper", "--M", "4"]) == 2


def test_whittle_learn_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "m.json"
    model.write_text(
        json.dumps(
            {
                "P0": [[0.5, 0.5], [0.3, 0.7]],
                "P1": [[0.5, 0.5], [0.3, 0.7]],
                "R0": [0.0, 0.5],
                "R1": [1.0, 0.0],
            }
        )
    )
    code = main(
        [
            "whittle-learn",
            "--model",
            str(model),
            "--arms",
            "10",
            "--active",
            "3",
            "--steps",
            "2000",
            "--epsilon",
            "0.2",
            "--json",
        ]
    )
    assert code == 0
    out = _json(capsys)
    assert out["exact_indices"] == pytest.approx([1.0, -0.5], abs=1e-5)
    assert out["learned_indices"] == pytest.approx([1.0, -0.5], abs=0.1)
    assert 0.5 < out["reward_ratio"] < 1.5
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"P0": [[0.5, 0.6], [0, 1]], "P1": [[1, 0], [0, 1]], "R0": [0, 0], "R1": [0, 0]})
    )
    assert main(["whittle-learn", "--model", str(bad), "--json"]) == 2
    assert "stochastic" in capsys.readouterr().err


def test_recrawl_eval_collection_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "recrawl-eval",
            "--mode",
            "collection",
            "--docs",
            "200",
            "--budget",
            "4",
            "--steps",
            "300",
            "--mean-rate",
            "0.02",
            "--json",
        ]
    )
    assert code == 0
    pol = _json(capsys)["policies"]
    assert set(pol) == {
        "whittle",
        "whittle-oracle",
        "whittle-ephemeral",
        "uniform",
        "r-age",
        "adaptive",
        "greedy",
    }
    assert all(0.0 <= v["F"] <= 1.0 for v in pol.values())


@pytest.mark.parametrize(
    "argv",
    [
        ["ephemeral", "--example", "paper", "--steps", "10"],
        ["whittle-learn", "--arms", "5", "--active", "2", "--steps", "10"],
        ["recrawl-eval", "--docs", "10", "--budget", "2", "--steps", "5"],
    ],
)
def test_a_plots_folder_that_cannot_be_is_one_line_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """``--plots`` under a file: a ``NotADirectoryError`` traceback after the run, before."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    assert main([*argv, "--plots", str(blocker / "plots")]) == 2
    captured = capsys.readouterr()
    assert (
        f"error: --plots: cannot write to folder {blocker / 'plots'}: {blocker} is a file, not a folder"
        in captured.err
    )
    assert captured.out == ""  # refused before the work
