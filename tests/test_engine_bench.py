"""Smoke test of the engine benchmarks (tiny sizes): they run end to end, print a table and write JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run(tmp_path: Path, *args: str) -> dict[str, object]:
    out = tmp_path / "result.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "oasis.cli",
            "bench",
            *args,
            "--docs",
            "40",
            "--chunk-chars",
            "300",
            "--batch-size",
            "16",
            "--json-out",
            str(out),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "raw Whoosh in-process" in done.stdout and "engine over gRPC" in done.stdout
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def test_engine_index_bench(tmp_path: Path) -> None:
    result = run(tmp_path, "engine-index", "--repeat", "1")
    rows = result["rows"]
    assert isinstance(rows, list) and len(rows) == 2
    assert rows[0]["ratio_vs_raw"] == 1.0
    assert rows[1]["docs_per_s"] > 0 and rows[1]["ratio_vs_raw"] > 0


def test_engine_query_bench(tmp_path: Path) -> None:
    result = run(tmp_path, "engine-query", "--queries", "15")
    rows = result["rows"]
    assert isinstance(rows, list) and [r["queries"] for r in rows] == [15, 15]
    assert all(r["p99_ms"] >= r["p50_ms"] > 0 for r in rows)
