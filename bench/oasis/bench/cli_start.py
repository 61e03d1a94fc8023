"""``oasis bench cli-start``: wall time of the ``oasis`` command as a user feels it, against the start of a
Python that imports grpc, all measured alternately in one run (absolute times drift on a shared machine).

Rows:

* ``import-grpc``: ``python -c "import grpc"`` (the baseline: any gRPC client pays this);
* ``help``: ``oasis --help``;
* ``search``: ``oasis search QUERY`` against a running cluster (engines and broker, started once);
* ``up``: ``oasis up --detach`` of the default cluster (every service SERVING) and ``down``: ``oasis down``
  of it (every service drained and exited), alternated ``--cluster-repeats`` times.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from oasis.bench._stats import percentile
from oasis.runtime.files import write_json_atomic


def _oasis(*args: str) -> list[str]:
    return [sys.executable, "-m", "oasis.cli", *args]


def _timed(argv: list[str], timeout: float = 300.0) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, timeout=timeout)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.decode()[-2000:]}")
    return seconds


def run(args: argparse.Namespace) -> int:
    times: dict[str, list[float]] = {"import-grpc": [], "help": [], "search": [], "up": [], "down": []}
    with tempfile.TemporaryDirectory(prefix="oasis-bench-cli-") as tmp:
        serving = str(Path(tmp) / "serving")
        _timed(_oasis("up", "--detach", "--no-robots", "--state-dir", serving))
        try:
            commands = {
                "import-grpc": [sys.executable, "-c", "import grpc"],
                "help": _oasis("--help"),
                "search": _oasis("search", "--state-dir", serving, args.query),
            }
            for argv in commands.values():  # warm the page cache
                _timed(argv)
            for _ in tqdm(range(args.repeats), desc="cli start", unit="round", leave=False):
                for name, argv in commands.items():
                    times[name].append(_timed(argv))
        finally:
            _timed(_oasis("down", "--state-dir", serving))
        for r in tqdm(range(args.cluster_repeats), desc="up/down", unit="round", leave=False):
            state = str(Path(tmp) / f"cluster{r}")
            times["up"].append(_timed(_oasis("up", "--detach", "--state-dir", state)))
            time.sleep(args.crawl_seconds)  # robots crawling, engines indexing: down has work to drain
            times["down"].append(_timed(_oasis("down", "--state-dir", state)))
    base = statistics.median(times["import-grpc"])
    rows: list[dict[str, Any]] = []
    for mode, xs in times.items():
        p50 = statistics.median(xs)
        rows.append(
            {
                "mode": mode,
                "runs": len(xs),
                "p50_s": round(p50, 4),
                "p90_s": round(percentile(xs, 90), 4),
                "ratio_to_import_grpc": round(p50 / base, 3),
            }
        )
    print(f"{'mode':<12} {'runs':>5} {'p50 s':>8} {'p90 s':>8} {'/ import grpc':>14}")
    for row in rows:
        print(
            f"{row['mode']:<12} {row['runs']:>5} {row['p50_s']:>8.3f} {row['p90_s']:>8.3f} "
            f"{row['ratio_to_import_grpc']:>13.2f}x"
        )
    if args.json_out:
        write_json_atomic(args.json_out, {"benchmark": "cli-start", "rows": rows}, indent=2)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("cli-start", help="oasis search/--help/up/down wall time vs python -c 'import grpc'")
    p.add_argument("--repeats", type=int, default=15, help="alternated runs of each short command")
    p.add_argument("--cluster-repeats", type=int, default=3, help="alternated oasis up / oasis down")
    p.add_argument("--crawl-seconds", type=float, default=3.0, help="cluster running time before down")
    p.add_argument("--query", default="sql query index")
    p.add_argument("--json-out", default=None)
    p.set_defaults(func=run)
