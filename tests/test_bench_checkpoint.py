"""``oasis bench checkpoint`` end to end at a tiny size, and the restore it measures: a checkpoint whose
fringe list misses some queued pages still restores every one of them (the step that was quadratic)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from oasis.bench.checkpoint import crawled
from oasis.robot.scheduling import SHIPPED, make_controller
from oasis.robot.scheduling.documents import FLIGHT


def test_checkpoint_bench_prints_a_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "checkpoint.json"
    argv = ["bench", "checkpoint", "--sizes", "300,600", "--links", "8", "--json-out", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "oasis.cli", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "restore/parse" in done.stdout
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert [(r["policy"], r["size"]) for r in rows] == [
        ("whittle", 300),
        ("whittle", 600),
        ("bfs", 300),
        ("bfs", 600),
    ]
    for r in rows:
        assert r["same_decisions"] is True and r["frontier"] > 0.5 * r["size"]
        assert r["restore_vs_parse"] == pytest.approx(r["restore_s"] / r["parse_s"])


@pytest.mark.parametrize("policy", ["whittle", "bfs"])
def test_a_fringe_list_missing_pages_still_restores_every_queued_page(policy: str) -> None:
    ctl = crawled(policy, 400, 8)
    state = json.loads(json.dumps(ctl.state_dict()))
    queued = {d for d in ctl._fringe_order() if ctl.docs.status[d] != FLIGHT}
    assert len(state["fringe"]) > 100
    state["fringe"] = state["fringe"][::2]  # every other page left out of the list (an older or cut file)
    restored = make_controller(policy, rng=random.Random(1), config=SHIPPED)
    restored.load_state(state)
    assert restored.frontier_size() == ctl.frontier_size()
    assert set(restored._fringe_order()) >= queued
