"""A local cluster with its HTTP gateway, brought up by the project's launcher (`oasis up`) on ephemeral
ports, with real pages indexed into its engines: shared by the gateway service and browser tests (the
``gateway_cluster`` fixture of conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oasis.runtime.clients import BrokerClient, EngineClient, IndexDocument

CONFIG = """
[cluster]
lease_seconds = 3.0
heartbeat_seconds = 0.3
route_cache_seconds = 0.2
default_deadline_ms = 2000

[[topic]]
name = "databases"
description = "relational databases and SQL"
keywords = ["sql", "table", "index", "database", "query"]

[[topic]]
name = "python"
description = "the Python language and its standard library"
keywords = ["python", "module", "function", "library"]
"""

DB_SUBJECTS = (
    "B-tree index", "hash index", "join order", "vacuum", "primary key", "foreign key", "partitioned table",
    "query planner", "transaction isolation", "write-ahead log", "materialized view", "sequence",
    "check constraint", "unique index", "table inheritance", "window function", "common table expression",
    "lateral join", "row-level security", "tablespace", "toast storage", "statistics target",
    "parallel query", "covering index", "expression index",
)  # fmt: skip
PY_SUBJECTS = (
    "itertools module", "functools module", "pathlib module", "asyncio library", "dataclasses module",
    "typing module", "json module", "re module", "collections module", "contextlib module",
)  # fmt: skip
# a page whose title and text try to inject markup into the result page
HOSTILE_URL = "http://evil.example/table-tricks"
HOSTILE_TITLE = "<script>alert('title')</script> table tricks"
HOSTILE_TEXT = (
    "Every table needs an index. <script>alert('text')</script> An <img src=x onerror=alert(1)> table "
    "index & a </b><i>broken</i> <b>fake bold</b> index query on the table."
)


def documents() -> dict[str, list[IndexDocument]]:
    """Real sentences about each subject, one page each; every databases page matches ``table index``."""
    db = [
        IndexDocument(
            url=f"http://db.docs.local/{i:02d}-{s.replace(' ', '-')}.html",
            title=f"Using the {s} on a table",
            text=(
                f"The {s} changes how a query reads a table. A database keeps an index of the table so "
                f"that a SQL query on the table reads fewer pages; the {s} is described with examples, "
                f"and chapter {i} explains when the index helps and when a sequential scan of the table "
                f"is faster."
            ),
            fetch_time=1_700_000_000.0 + i,
        )
        for i, s in enumerate(DB_SUBJECTS)
    ]
    db.append(IndexDocument(url=HOSTILE_URL, title=HOSTILE_TITLE, text=HOSTILE_TEXT, fetch_time=1.0))
    py = [
        IndexDocument(
            url=f"http://py.docs.local/{i:02d}-{s.replace(' ', '-')}.html",
            title=f"The {s}",
            text=(
                f"The Python {s} provides functions for everyday programs. Each function of the {s} is "
                f"documented with examples; import the module and call the function."
            ),
            fetch_time=1_700_000_000.0 + i,
        )
        for i, s in enumerate(PY_SUBJECTS)
    ]
    return {"databases": db, "python": py}


@dataclass
class GatewayCluster:
    state: Path
    services: dict[str, dict[str, Any]]

    @property
    def gateway(self) -> str:
        return f"http://{self.services['gateway']['address']}"

    @property
    def broker(self) -> str:
        return str(self.services["broker"]["address"])

    def reload(self) -> None:
        data = json.loads((self.state / "cluster.json").read_text())
        self.services = {s["name"]: s for s in data["services"]}


def oasis(state: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "oasis.cli", *args, "--state-dir", str(state)],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert proc.returncode == 0, f"oasis {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def start(state: Path) -> GatewayCluster:
    config = state / "cluster.toml"
    config.write_text(CONFIG)
    oasis(state, "up", "--config", str(config), "--no-robots", "--detach")
    cluster = GatewayCluster(state, {})
    cluster.reload()
    for topic, docs in documents().items():
        client = EngineClient(cluster.services[topic]["address"])
        try:
            report = client.index(docs)
        finally:
            client.close()
        assert report.acknowledged == len(docs) and not report.rejected, report
    # wait until the directory routes to both engines with their new summaries (heartbeat + route cache)
    broker = BrokerClient(cluster.broker)
    try:
        deadline = time.monotonic() + 30
        while True:
            hits = broker.search("table index", k=50, deadline_ms=2000).hits
            py = broker.search("python module function", k=5, deadline_ms=2000).hits
            if len(hits) >= len(DB_SUBJECTS) and py:
                break
            assert time.monotonic() < deadline, f"engines not searchable: {len(hits)} hits"
            time.sleep(0.2)
    finally:
        broker.close()
    return cluster


def stop(cluster: GatewayCluster) -> None:
    subprocess.run(
        [sys.executable, "-m", "oasis.cli", "down", "--state-dir", str(cluster.state)],
        capture_output=True, timeout=120,
    )  # fmt: skip
