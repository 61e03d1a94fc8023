"""``python -m oasis.replay.estimates``: the robot's recall estimate against the truth on replayed runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oasis.replay.estimates import main


def test_estimates_command_prints_and_writes_each_runs_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "estimates.json"
    assert main(["--runs", "0", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "weighted below raw on 1 of 1 runs" in printed
    data = json.loads(out.read_text())
    (row,) = data["runs"]
    assert row["run"] == 0 and row["corpus"].startswith("synthetic:") and row["fetches"] >= 3000
    # the raw fringe sum reads recall low; the calibrated estimates are nearer the truth
    assert row["raw"]["bias"] < -0.05
    assert row["weighted"]["mae"] < 0.8 * row["raw"]["mae"] and row["cumulative"]["mae"] < row["raw"]["mae"]
    assert data["means"]["weighted"] == row["weighted"]
    with pytest.raises(SystemExit):
        main(["--runs", "x"])
