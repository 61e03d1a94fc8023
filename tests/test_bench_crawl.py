"""``oasis bench crawl`` end to end on a small synthetic web: the replayed web is served from its own
process, every row is there with a rate, and the robot's row counts the engine's and the web's CPU."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
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


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, exited but not yet reaped, counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_bench_crawl_stops_its_web_process_on_sigterm(tmp_path: Path) -> None:
    """SIGTERM to ``oasis bench crawl`` mid-run stops the replayed web's process it started (Python's
    default SIGTERM action left it running, orphaned)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    bench = subprocess.Popen(
        [
            sys.executable, "-m", "oasis.cli", "bench", "crawl",
            "--corpus", "synthetic:pages=400,hosts=1,topics=3,seed=1",
            "--pages", "300", "--repeats", "50", "--no-scrapy",
        ],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    web_pid = None
    try:
        assert bench.stderr is not None
        for line in bench.stderr:  # the web serves before round 1 starts
            if line.startswith("round 1/"):
                break
        (address_file,) = tmp_path.glob("oasis-bench-crawl-*/web.json")
        web_pid = json.loads(address_file.read_text())["pid"]
        assert _alive(web_pid)
        time.sleep(1.0)  # mid-crawl
        bench.send_signal(signal.SIGTERM)
        assert bench.wait(timeout=60) != 0
        deadline = time.monotonic() + 20
        while _alive(web_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(web_pid), "the web's process outlived the benchmark"
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
        if bench.stderr is not None:
            bench.stderr.close()
        if web_pid is not None and _alive(web_pid):
            os.kill(web_pid, signal.SIGKILL)
