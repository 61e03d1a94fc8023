"""``oasis bench crawl`` end to end on a small synthetic web: the replayed web is served from its own
process, every row is there with a rate, and the robot's row counts the engine's and the web's CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_bench_crawl_serves_the_web_from_its_own_process(tmp_path: Path) -> None:
    out = tmp_path / "crawl.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "oasis.cli", "bench", "crawl",
            "--corpus", "synthetic:pages=150,hosts=1,topics=3,seed=1",
            "--pages", "40", "--no-scrapy", "--json-out", str(out),
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "web served from its own process" in done.stdout
    result = json.loads(out.read_text())
    rows = {row["mode"]: row for row in result["rows"]}
    assert set(rows) == {"requests", "robot-null", "robot", "whoosh"}
    assert all(row["pages_per_s"] > 0 for row in rows.values())
    assert result["web"] == "process" and result["web_pid"] != result["bench_pid"]
    assert not os.path.exists(f"/proc/{result['web_pid']}/stat")  # stopped with the benchmark
    robot = rows["robot"]["runs"][0]
    assert robot["pages"] == 40 and robot["indexed"] > 0
    # the work of the robot's window happened in three processes, each measured on its own
    assert robot["cpu_engine"] > 0 and robot["cpu_web"] > 0 and robot["cpu_robot"] > 0
    assert rows["whoosh"]["runs"][0]["cpu_whoosh"] > 0
