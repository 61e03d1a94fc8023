"""A whole local cluster (`oasis up`: directory, two engines, broker, replayed web, two robots) with JSON
logs, on ephemeral loopback ports: scrape every service's /metrics over HTTP after real traffic, check the
Grafana dashboard against what the services expose, export an engine to JSONL and WARC, read the logs as
JSON, and render search results on a pseudo-terminal and through a pipe."""

from __future__ import annotations

import gzip
import json
import os
import pty
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from oasis.cluster.launcher import Cluster
from oasis.v1 import robot_pb2, robot_pb2_grpc

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "docs" / "grafana-oasis.json"
SEARCHES = ("sql query index", "python module function", "database transaction")

CONFIG = """
[cluster]
lease_seconds = 3.0
heartbeat_seconds = 0.5
log_format = "json"

[web]
corpus = "synthetic:pages=200,hosts=2,topics=2,seed=3"

[robot]
min_delay = 0.0
max_in_flight = 4
max_pages = 120
progress_seconds = 0.2

[[topic]]
name = "databases"
description = "Relational databases, SQL queries, indexes, transactions and query planning"
keywords = ["database", "sql", "query", "index", "transaction", "table", "postgresql"]

[[topic]]
name = "python"
description = "The Python programming language, its standard library, modules and interpreter"
keywords = ["python", "module", "function", "class", "interpreter", "library"]
"""


def oasis(state: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "oasis.cli", *args, "--state-dir", str(state)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if check:
        assert proc.returncode == 0, f"oasis {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}


def scrape(address: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """``{sample name: [(labels, value), ...]}`` of a live /metrics page; a declared family, no samples yet
    (a labelled counter nothing has incremented) is listed under its sample names with no values."""
    reply = requests.get(f"http://{address}/metrics", timeout=5)
    assert reply.status_code == 200, reply.text
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(reply.text):
        for suffix in SUFFIXES.get(family.type, ("",)):
            out.setdefault(family.name + suffix, [])
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def robot_status(address: str) -> robot_pb2.RobotStatus:
    with grpc.insecure_channel(address) as channel:
        return robot_pb2_grpc.RobotStub(channel).Status(robot_pb2.StatusRequest(), timeout=5)


def total(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    return sum(v for lab, v in samples.get(name, []) if all(lab.get(k) == x for k, x in labels.items()))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    state = tmp_path_factory.mktemp("metrics-cluster")
    (state / "cluster.toml").write_text(CONFIG)
    oasis(state, "up", "--config", str(state / "cluster.toml"), "--detach")
    try:
        records = Cluster.load(state)
        deadline = time.monotonic() + 90
        robots: dict[str, Any] = {}
        for r in records.of_kind("robot"):
            while (st := robot_status(r.address)).state != "done" and time.monotonic() < deadline:
                time.sleep(0.2)
            assert st.state == "done", f"{r.name} did not finish its 120 pages: {st}"
            robots[r.name] = st
        time.sleep(0.5)  # one more progress period: the line that reports "done"
        for q in SEARCHES:
            oasis(state, "search", q, "--json")
        status = json.loads(oasis(state, "status", "--json").stdout)
        yield {"state": state, "services": {s["name"]: s for s in status["services"]}, "robots": robots}
    finally:
        oasis(state, "down", check=False)


def test_status_json_lists_the_metrics_address_of_every_grpc_service(cluster: dict[str, Any]) -> None:
    services = cluster["services"]
    robots = ["robot-databases", "robot-python"]
    names = ["directory", "databases", "python", "broker", "gateway", "replayed-web", *robots]
    assert sorted(services) == sorted(names)
    for name, s in services.items():
        if s["kind"] == "web":
            assert s["metrics"] is None  # the replayed web is a test fixture, not an Oasis gRPC service
            continue
        if s["kind"] == "gateway":  # HTTP: GET /metrics beside its pages
            assert s["metrics"] == s["address"], s
            assert "oasis_gateway_requests_total" in scrape(s["metrics"]), name
            continue
        assert re.fullmatch(r"127\.0\.0\.1:\d+", s["metrics"]), s
        assert s["metrics"] != s["address"]
        assert "oasis_rpc_server_handled_total" in scrape(s["metrics"]), name


def test_every_service_counts_the_traffic_it_served(cluster: dict[str, Any]) -> None:
    services = cluster["services"]
    for topic in ("databases", "python"):
        m = scrape(services[topic]["metrics"])
        docs = services[topic]["documents"]
        assert docs > 0
        assert total(m, "oasis_engine_documents", engine=topic) == docs
        assert total(m, "oasis_engine_index_operations_total", op="added") == docs  # a fresh index
        assert total(m, "oasis_engine_commits_total", engine=topic) >= 1
        # a fresh index: its Whoosh commits group acknowledged batches (write-ahead log), never more commits
        assert total(m, "oasis_engine_commits_total") <= total(m, "oasis_engine_index_batches_total")
        index_calls = total(m, "oasis_rpc_server_handled_total", method="Index", code="OK")
        assert index_calls >= 1
        assert total(m, "oasis_rpc_server_handled_total", method="Score", code="OK") >= 1  # the robot's
        assert total(m, "oasis_rpc_server_handling_seconds_count", method="Score") >= 1

    broker = scrape(services["broker"]["metrics"])
    n = len(SEARCHES)
    assert total(broker, "oasis_rpc_server_handled_total", method="Search", code="OK") == n
    assert total(broker, "oasis_broker_fanout_engines_count") == n
    answers = total(broker, "oasis_broker_engine_status_total")
    assert answers >= n and total(broker, "oasis_broker_engine_status_total", state="ok") >= n
    assert total(broker, "oasis_broker_queries_total") == n

    directory = scrape(services["directory"]["metrics"])
    assert total(directory, "oasis_directory_engines") == 2
    assert total(directory, "oasis_rpc_server_handled_total", method="Heartbeat", code="OK") >= 2
    assert total(directory, "oasis_rpc_server_handled_total", method="Route") >= 1

    for name, st in cluster["robots"].items():
        m = scrape(services[name]["metrics"])
        assert total(m, "oasis_robot_pages_fetched_total", robot=name) == st.pages_fetched == 120
        assert total(m, "oasis_robot_fetches_total", robot=name, outcome="new") > 0
        assert total(m, "oasis_robot_fetched_bytes_total", robot=name) > 120 * 100
        assert total(m, "oasis_robot_pages_indexed_total", robot=name) == st.pages_indexed
        assert total(m, "oasis_robot_frontier_size", robot=name) == st.frontier_size
        assert total(m, "oasis_robot_harvest_rate", robot=name) == pytest.approx(st.harvest_rate)
        assert total(m, "oasis_robot_recall_estimate", robot=name) == pytest.approx(st.recall_estimate)
        assert 0 < st.recall_estimate <= 1
        assert total(m, "oasis_robot_state", robot=name, state="done") == 1
        harvest = total(m, "oasis_robot_relevance_total") / total(m, "oasis_robot_pages_ok_total")
        assert harvest == pytest.approx(st.harvest_rate)


def test_the_grafana_dashboard_charts_only_metrics_the_services_expose(cluster: dict[str, Any]) -> None:
    exposed: set[str] = set()
    for s in cluster["services"].values():
        if s["metrics"]:
            exposed |= set(scrape(s["metrics"]))
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    titles = " ".join(p["title"].lower() for p in dashboard["panels"])
    for wanted in ("harvest rate", "fetches per second", "latency p50 / p99", "engine documents", "broker"):
        assert wanted in titles
    assert len(exprs) >= 12
    referenced = {name for e in exprs for name in re.findall(r"\boasis_[a-z0-9_]+", e)}
    assert referenced, exprs
    missing = referenced - exposed
    assert not missing, f"the dashboard charts metrics no service exposes: {sorted(missing)}"
    assert any("histogram_quantile(0.99" in e for e in exprs) and any(
        "histogram_quantile(0.5" in e for e in exprs
    )


def test_export_round_trip_jsonl_and_warc(cluster: dict[str, Any], tmp_path: Path) -> None:
    from warcio.archiveiterator import ArchiveIterator

    state = cluster["state"]
    docs = cluster["services"]["databases"]["documents"]
    out = oasis(
        state, "export", "--engine", "databases", "--format", "jsonl", "--out", str(tmp_path / "db.jsonl")
    )
    assert f"{docs} documents written" in out.stdout
    lines = [json.loads(line) for line in (tmp_path / "db.jsonl").read_text().splitlines()]
    assert len(lines) == docs
    assert all({"url", "title", "text", "fetch_time", "relevance", "engine"} <= set(d) for d in lines)
    assert all(d["text"] and d["fetch_time"] > 1e9 and d["engine"] == "databases" for d in lines)
    urls = {d["url"] for d in lines}
    assert len(urls) == docs
    hits = json.loads(oasis(state, "search", "sql query index", "--json").stdout)["hits"]
    assert {h["url"] for h in hits if h["engine"] == "databases"} <= urls

    warc = tmp_path / "db.warc.gz"  # the format from the name (it was JSONL unless --format warc was given)
    assert "(warc)" in oasis(state, "export", "--engine", "databases", "--out", str(warc)).stdout
    by_url = {d["url"]: d for d in lines}
    seen = set()
    with warc.open("rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type != "resource":
                continue
            url = record.rec_headers.get_header("WARC-Target-URI")
            assert record.content_stream().read().decode("utf-8") == by_url[url]["text"]
            assert record.rec_headers.get_header("Oasis-Title") == by_url[url]["title"]
            seen.add(url)
    assert seen == urls
    packed = tmp_path / "db.jsonl.gz"  # gzipped as its name says (it was plain JSON lines under a .gz name)
    oasis(state, "export", "--engine", "databases", "--out", str(packed))
    assert [json.loads(line) for line in gzip.decompress(packed.read_bytes()).splitlines()] == lines
    clash = oasis(
        state, "export", "--engine", "databases", "--format", "jsonl", "--out", str(tmp_path / "x.warc.gz"),
        check=False,
    )  # fmt: skip
    assert clash.returncode == 2 and not (tmp_path / "x.warc.gz").exists()
    # and back: `oasis index` of an export restores its documents (same URLs: replaced, none added); before, a
    # named file was indexed as one HTML page whatever it held
    for dump in (packed, warc):
        back = oasis(state, "index", "--engine", "databases", str(dump))
        assert f"{docs} acknowledged (0 added, {docs} replaced, 0 rejected); {docs} documents searchable" in (
            back.stdout
        ), back.stdout
    assert f"--out {tmp_path / 'x.warc.gz'} names a WARC file but --format is jsonl" in clash.stderr

    # bad input: a clear error, and nothing is written or lost
    (tmp_path / "keep.jsonl").write_text("old contents\n")
    bad = oasis(
        state, "export", "--engine", "robot-python", "--out", str(tmp_path / "keep.jsonl"), check=False
    )
    assert bad.returncode == 2 and "not an engine" in bad.stderr
    gone = oasis(state, "export", "--engine", "nosuch", "--out", str(tmp_path / "x.jsonl"), check=False)
    assert gone.returncode == 2 and "nosuch" in gone.stderr
    keep = str(tmp_path / "keep.jsonl")
    dead = oasis(
        state, "export", "--engine", "databases", "--address", "127.0.0.1:1", "--out", keep, check=False
    )
    assert dead.returncode == 1 and "UNAVAILABLE" in dead.stderr
    assert (tmp_path / "keep.jsonl").read_text() == "old contents\n"
    assert not (tmp_path / "x.jsonl").exists()


def test_every_service_logs_json_lines_and_robots_log_progress(cluster: dict[str, Any]) -> None:
    logs = cluster["state"] / "logs"
    for name in cluster["services"]:
        lines = [line for line in (logs / f"{name}.log").read_text().splitlines() if line.strip()]
        assert lines, name
        for line in lines:
            entry = json.loads(line)  # every line: a JSON object
            assert {"ts", "level", "logger", "msg", "service"} <= set(entry), line
        assert {json.loads(line)["service"] for line in lines} == {"web" if name == "replayed-web" else name}
    for name, st in cluster["robots"].items():
        entries = [json.loads(line) for line in (logs / f"{name}.log").read_text().splitlines()]
        progress = [e for e in entries if e["msg"].startswith("progress ")]
        assert progress, f"{name} logged no progress line"
        last = progress[-1]
        assert last["state"] == "done" and last["pages"] == st.pages_fetched == 120
        assert {"rate", "harvest", "recall_est", "freshness_est", "frontier"} <= set(last)
        assert last["harvest"] == pytest.approx(st.harvest_rate, abs=1e-4)
        assert any(e["state"] == "running" and e["rate"] > 0 for e in progress[:-1]), progress


def test_search_shows_bold_highlights_on_a_terminal_and_plain_text_through_a_pipe(
    cluster: dict[str, Any],
) -> None:
    argv = [
        sys.executable,
        "-m",
        "oasis.cli",
        "search",
        "sql query index",
        "--state-dir",
        str(cluster["state"]),
    ]
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(argv, stdout=secondary, stderr=subprocess.PIPE)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    on_tty = b"".join(chunks).decode()
    assert "\x1b[1m" in on_tty and "\x1b[22m" in on_tty
    assert "<b>" not in on_tty and "</b>" not in on_tty
    piped = oasis(cluster["state"], "search", "sql query index").stdout
    assert "\x1b" not in piped and "<b>" not in piped
    assert "databases" in piped
    # the same words, with and without the bold
    strip = re.sub(r"\x1b\[(1|22)m", "", on_tty).replace("\r\n", "\n")
    assert [line for line in strip.splitlines() if "http" in line] == [
        line for line in piped.splitlines() if "http" in line
    ]
