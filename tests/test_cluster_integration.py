"""A whole local cluster, brought up by the project's own launcher (`oasis up`), on ephemeral ports:
index real documentation pages split by topic, search, kill -9 an engine, restart the directory."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from oasis.cluster.launcher import Cluster
from oasis.runtime.clients import BrokerClient
from oasis.v1 import directory_pb2, directory_pb2_grpc

PG = Path("/usr/share/doc/postgresql-doc-15/html")
PY = Path("/usr/share/doc/python3.11-doc/html")
DJ = Path("/usr/share/doc/python-django-doc/html")
PER_TOPIC = 120

CONFIG = """
[cluster]
lease_seconds = 3.0
heartbeat_seconds = 0.5
route_cache_seconds = 30.0
default_deadline_ms = 1000

[[topic]]
name = "databases"
description = "PostgreSQL relational database SQL commands"
keywords = ["sql", "table", "index", "database", "query", "postgresql"]

[[topic]]
name = "python"
description = "Python standard library modules"
keywords = ["python", "module", "function", "library"]

[[topic]]
name = "web"
description = "Django web framework"
keywords = ["django", "view", "template", "model", "form"]
"""


def oasis(
    state: Path, *args: str, check: bool = True, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "oasis.cli", *args, "--state-dir", str(state)],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    if check:
        assert proc.returncode == 0, f"oasis {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def list_engines(address: str) -> set[str]:
    with grpc.insecure_channel(address) as channel:
        reply = directory_pb2_grpc.DirectoryStub(channel).ListEngines(
            directory_pb2.ListEnginesRequest(), timeout=2
        )
    return {e.name for e in reply.engines}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    missing = [str(p) for p in (PG, PY, DJ) if not p.is_dir()]
    if missing:
        pytest.skip(f"documentation corpora not installed ({', '.join(missing)}): run ./dev test as root")
    state = tmp_path_factory.mktemp("cluster")
    config = state / "cluster.toml"
    config.write_text(CONFIG)
    oasis(state, "up", "--config", str(config), "--no-robots", "--detach")
    try:
        yield state
    finally:
        oasis(state, "down", check=False)


def _pages(root: Path, pattern: str) -> list[str]:
    return [str(p) for p in sorted(root.glob(pattern))[:PER_TOPIC]]


@pytest.fixture(scope="module")
def indexed(cluster: Path) -> dict[str, Any]:
    loads = {
        "databases": ("http://pg.docs/", _pages(PG, "sql-*.html")),
        "python": ("http://py.docs/library/", _pages(PY, "library/*.html")),
        "web": ("http://dj.docs/ref/", _pages(DJ, "ref/**/*.html")),
    }
    for engine, (base, files) in loads.items():
        assert len(files) >= 50, f"too few pages for {engine}"
        out = oasis(cluster, "index", "--engine", engine, "--base-url", base, *files).stdout
        assert f"{len(files)} acknowledged" in out, out
    status = json.loads(oasis(cluster, "status", "--json").stdout)
    services = {s["name"]: s for s in status["services"]}
    return {"services": services, "loaded": {name: len(files) for name, (_, files) in loads.items()}}


def test_status_lists_every_service_serving_with_document_counts(indexed: dict[str, Any]) -> None:
    services = indexed["services"]
    kinds = sorted(s["kind"] for s in services.values())
    assert kinds == ["broker", "directory", "engine", "engine", "engine", "gateway"]
    assert all(s["health"] == "SERVING" for s in services.values())
    assert sum(indexed["loaded"].values()) >= 300  # a few hundred real pages
    for name in ("databases", "python", "web"):
        assert services[name]["documents"] == indexed["loaded"][name]
        assert services[name]["address"].startswith("127.0.0.1:")


def test_search_returns_topic_pages_from_the_right_engine(cluster: Path, indexed: dict[str, Any]) -> None:
    out = json.loads(oasis(cluster, "search", "CREATE TABLE columns constraint", "-k", "5", "--json").stdout)
    assert out["hits"], out
    assert all(set(h) == {"url", "title", "snippet", "highlights", "score", "engine"} for h in out["hits"])
    top3 = [(h["engine"], h["url"]) for h in out["hits"][:3]]
    assert ("databases", "http://pg.docs/sql-createtable.html") in top3, top3
    assert not any("<b>" in h["snippet"].lower() for h in out["hits"])  # plain text, spans beside it
    assert any(h["highlights"] for h in out["hits"])
    for h in out["hits"]:
        for start, end in h["highlights"]:
            assert h["snippet"][start:end].strip(), h
    assert out["engines"]["databases"] == "ok"
    py = json.loads(oasis(cluster, "search", "asyncio event loop coroutine", "--json").stdout)
    top3 = [(h["engine"], h["url"]) for h in py["hits"][:3]]
    # the words unquoted are the same query (before: "unrecognized arguments: event loop coroutine")
    unquoted = json.loads(oasis(cluster, "search", "asyncio", "event", "loop", "coroutine", "--json").stdout)
    assert [h["url"] for h in unquoted["hits"]] == [h["url"] for h in py["hits"]]
    assert ("python", "http://py.docs/library/asyncio-eventloop.html") in top3, top3
    text = oasis(cluster, "search", "CREATE TABLE").stdout
    assert "databases" in text and "http://pg.docs/sql-createtable.html" in text
    # about how many pages match beside the hits shown (the engines' own counts, -k or not)
    few = json.loads(oasis(cluster, "search", "table", "-k", "2", "--json").stdout)
    many = json.loads(oasis(cluster, "search", "table", "-k", "50", "--json").stdout)
    assert len(few["hits"]) == 2 and few["matches"] == many["matches"] >= len(many["hits"]) > 2
    shown = oasis(cluster, "search", "table", "-k", "2").stdout
    assert f'"table": 2 of about {few["matches"]} hits in' in shown
    # a misspelt query: no hit, and the corrected query offered
    typo = json.loads(oasis(cluster, "search", "coroutnie", "--json").stdout)
    assert typo["hits"] == [] and typo["suggestion"] == "coroutine"
    assert 'did you mean "coroutine"?' in oasis(cluster, "search", "coroutnie").stdout
    # a word no engine holds beside words that match: the hits, and the correction beside them; a word
    # one engine holds is not corrected by the engines that lack it
    near = json.loads(oasis(cluster, "search", "asyncio evnet loop", "--json").stdout)
    assert near["hits"] and near["suggestion"] == "asyncio event loop"
    assert json.loads(oasis(cluster, "search", "coroutine table", "--json").stdout)["suggestion"] == ""


def test_watch_into_a_pipe_prints_a_snapshot_per_refresh(cluster: Path, indexed: dict[str, Any]) -> None:
    """``oasis watch`` (and ``status --follow``) into a pipe or a log file printed nothing until it was
    stopped (a live table needs a terminal); now each refresh is a snapshot, flushed at once, and a reader
    that closes the pipe (``| head``) ends it quietly (rich's exit 1 on a broken pipe, no traceback)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "oasis.cli", "watch", "--interval", "0.2", "--state-dir", str(cluster)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        deadline = time.monotonic() + 30
        while sum("updated " in line for line in seen) < 2 and time.monotonic() < deadline:
            # select first: with nothing printed (the code before) a bare readline would block for ever
            if select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
                seen.append(proc.stdout.readline())
        assert sum("updated " in line for line in seen) >= 2, seen  # two refreshes read while it runs
        assert any("databases" in line for line in seen)
        assert proc.poll() is None
        proc.stdout.close()  # the reader goes away
        assert proc.wait(timeout=30) == 1
        assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_bad_query_gets_a_clear_error(cluster: Path, indexed: dict[str, Any]) -> None:
    proc = oasis(cluster, "search", "   ", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["oasis search: empty query"], proc.stderr
    # an engine's refusal passed on by the broker: the engine's own words, as the search page shows them
    # (before: "broker ADDR Search: INVALID_ARGUMENT: the engines refused the query: engine ADDR Search: ...")
    proc = oasis(cluster, "search", "url:http*", check=False)
    assert proc.returncode == 2
    said = "oasis search: 'url:http*': fields cannot be searched; search for the words alone"
    assert proc.stderr.strip().splitlines() == [said], proc.stderr


def test_killed_engine_gives_partial_results_within_deadline_then_recovers(
    cluster: Path, indexed: dict[str, Any]
) -> None:
    state = Cluster.load(cluster)
    victim = state.get("python")
    os.kill(victim.pid, signal.SIGKILL)
    time.sleep(0.2)
    client = BrokerClient(state.get("broker").address)
    try:
        deadline_ms = 500
        started = time.monotonic()
        result = client.search("python module function library", k=10, deadline_ms=deadline_ms)
        elapsed_ms = (time.monotonic() - started) * 1000
        assert elapsed_ms <= deadline_ms + 50, f"took {elapsed_ms:.0f} ms"
        assert result.engines["python"] in {"error", "timeout", "suspended"}
        assert result.partial
        assert all(h.engine != "python" for h in result.hits)
    finally:
        client.close()
    oasis(cluster, "restart", "python")
    status = {s["name"]: s for s in json.loads(oasis(cluster, "status", "--json").stdout)["services"]}
    assert status["python"]["health"] == "SERVING"
    assert (
        status["python"]["documents"] == indexed["loaded"]["python"]
    )  # the whole acknowledged index survived kill -9


def test_directory_restart_is_survived_by_reregistration(cluster: Path, indexed: dict[str, Any]) -> None:
    state = Cluster.load(cluster)
    directory = state.get("directory")
    os.kill(directory.pid, signal.SIGKILL)
    time.sleep(0.3)
    # the broker keeps answering from its cached routes while the directory is down
    out = json.loads(oasis(cluster, "search", "CREATE TABLE", "--json").stdout)
    assert out["hits"] and out["engines"]["databases"] == "ok"
    oasis(cluster, "restart", "directory")
    record = Cluster.load(cluster).get("directory")
    assert record.address == directory.address and record.pid != directory.pid
    deadline = time.monotonic() + 3.0  # a few heartbeats (0.5 s each)
    engines: set[str] = set()
    while time.monotonic() < deadline and len(engines) < 3:
        engines = list_engines(record.address)
        time.sleep(0.1)
    assert engines == {"databases", "python", "web"}
