"""Faults injected into a real local cluster started by the project's launcher (``bring_up``), on ephemeral
loopback ports: ``kill -9`` of an engine during a STREAM of queries, of the directory during a stream of
queries, of a robot mid-crawl (restarted by the launcher with its recorded command line), and a slow engine
behind the broker's suspension / back-off. Measured numbers are printed (``pytest -s``) for
docs/reliability.md."""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from robot_testweb import LocalWeb, html, page

from oasis.cluster.config import ClusterConfig, TopicConfig
from oasis.cluster.launcher import Cluster, bring_up
from oasis.runtime.clients import BrokerClient, EngineClient, IndexDocument, RobotClient, ServiceError
from oasis.v1 import directory_pb2, directory_pb2_grpc, engine_pb2, engine_pb2_grpc

HEARTBEAT = 0.3
DEADLINE_MS = 400
SLACK_MS = 50
DOCS = 40
TOPICS = {
    "databases": ("SQL databases", ("sql", "table", "index", "database")),
    "python": ("Python modules", ("python", "module", "function", "interpreter")),
    "web": ("Web frameworks", ("django", "template", "view", "http")),
}


def documents(topic: str) -> list[IndexDocument]:
    words = " ".join(TOPICS[topic][1])
    return [
        IndexDocument(url=f"http://{topic}.test/{i}", title=f"{topic} {i}", text=f"{words} item{i} shared")
        for i in range(DOCS)
    ]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    config = ClusterConfig(
        topics=tuple(TopicConfig(name=n, description=d, keywords=k) for n, (d, k) in TOPICS.items()),
        heartbeat_seconds=HEARTBEAT,
        lease_seconds=3.0,
        route_cache_seconds=30.0,
        default_deadline_ms=1000,
    )
    running = bring_up(config, tmp_path_factory.mktemp("faults"), robots=False, log_level="WARNING")
    try:
        for topic in TOPICS:
            client = EngineClient(running.get(topic).address)
            try:
                assert client.index(documents(topic)).acknowledged == DOCS
            finally:
                client.close()
        # the engines' next heartbeats carry summaries with the documents (routing skips empty engines)
        deadline = time.monotonic() + 20
        while summarised(running.get("directory").address) != {t: DOCS for t in TOPICS}:
            assert time.monotonic() < deadline, summarised(running.get("directory").address)
            time.sleep(0.1)
        yield running
    finally:
        running.down(grace=5.0)


def registered(address: str) -> set[str]:
    try:
        with grpc.insecure_channel(address) as channel:
            reply = directory_pb2_grpc.DirectoryStub(channel).ListEngines(
                directory_pb2.ListEnginesRequest(), timeout=1
            )
    except grpc.RpcError:
        return set()
    return {e.name for e in reply.engines}


def summarised(address: str) -> dict[str, int]:
    with grpc.insecure_channel(address) as channel:
        reply = directory_pb2_grpc.DirectoryStub(channel).ListEngines(
            directory_pb2.ListEnginesRequest(), timeout=1
        )
    return {e.name: e.summary.documents for e in reply.engines}


@dataclass
class Answer:
    started: float  # monotonic
    elapsed_ms: float
    engines: dict[str, str]
    partial: bool
    hit_engines: set[str]
    error: str = ""


def query_stream(
    address: str, stop: threading.Event, out: list[Answer], clients: int = 3
) -> list[threading.Thread]:
    """``clients`` threads, each sending queries back to back until ``stop`` (every answer recorded)."""

    def run(i: int) -> None:
        client = BrokerClient(address)
        try:
            for n in itertools.count():
                if stop.is_set():
                    return
                query = ["shared sql python django", "item3 shared", "shared module template table"][
                    (i + n) % 3
                ]
                t0 = time.monotonic()
                try:
                    r = client.search(query, k=10, deadline_ms=DEADLINE_MS)
                    out.append(
                        Answer(
                            t0,
                            (time.monotonic() - t0) * 1000,
                            r.engines,
                            r.partial,
                            {h.engine for h in r.hits},
                        )
                    )
                except ServiceError as exc:
                    out.append(Answer(t0, (time.monotonic() - t0) * 1000, {}, True, set(), str(exc)))
        finally:
            client.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    return threads


def test_engine_kill_9_during_a_query_stream(cluster: Cluster) -> None:
    """Every query of a continuous stream (3 clients) returns within deadline + 50 ms while an engine is
    killed; after the kill the dead engine is reported and the others still answer; after the launcher
    restarts it, it re-registers and serves its whole acknowledged index."""
    broker = cluster.get("broker").address
    victim = cluster.get("python")
    answers: list[Answer] = []
    stop = threading.Event()
    threads = query_stream(broker, stop, answers)
    time.sleep(1.0)
    killed_at = time.monotonic()
    os.kill(victim.pid, signal.SIGKILL)
    time.sleep(2.0)
    stop.set()
    for t in threads:
        t.join(10)
    assert all(not a.error for a in answers), [a.error for a in answers if a.error][:3]
    before = [a for a in answers if a.started + a.elapsed_ms / 1000 < killed_at]
    after = [a for a in answers if a.started > killed_at + 0.05]
    worst = max(a.elapsed_ms for a in answers)
    print(
        f"\n{len(answers)} queries ({len(before)} before the kill, {len(after)} after); "
        f"worst {worst:.0f} ms, deadline {DEADLINE_MS} ms"
    )
    assert len(before) >= 5 and len(after) >= 10
    assert worst <= DEADLINE_MS + SLACK_MS, sorted(a.elapsed_ms for a in answers)[-5:]
    assert all(a.engines.get("python") == "ok" for a in before), [(a.engines, a.elapsed_ms) for a in before][
        :8
    ]
    for a in after:
        assert a.engines["python"] in {"error", "timeout", "suspended"}, a.engines
        assert a.partial and "python" not in a.hit_engines
        assert a.engines["databases"] == "ok" and a.engines["web"] == "ok"
        assert a.hit_engines and a.hit_engines <= {"databases", "web"}

    t0 = time.monotonic()
    record = cluster.restart("python")
    assert record.port == victim.port and record.pid != victim.pid
    client = BrokerClient(broker)
    engine = EngineClient(record.address)
    try:
        assert engine.document_count() == DOCS  # nothing acknowledged was lost
        deadline = time.monotonic() + 20  # the broker probes the engine again when its back-off ends
        result = client.search("python module", k=DOCS, deadline_ms=1000)
        while result.engines.get("python") != "ok" and time.monotonic() < deadline:
            time.sleep(0.1)
            result = client.search("python module", k=DOCS, deadline_ms=1000)
        recovered = time.monotonic() - t0
        print(f"engine restarted and answering through the broker {recovered:.1f} s after restart began")
        assert result.engines["python"] == "ok", result.messages
        assert "python" in registered(cluster.get("directory").address)
        assert {h.url for h in result.hits if h.engine == "python"} == {d.url for d in documents("python")}
    finally:
        client.close()
        engine.close()


def test_directory_kill_9_during_a_query_stream(cluster: Cluster) -> None:
    """While the directory is dead, a query stream keeps being answered from the broker's cached routes
    (every engine ok, no error); after restart every engine is registered again within about one
    heartbeat (plus the channel's 250 ms reconnect back-off)."""
    broker = cluster.get("broker").address
    directory = cluster.get("directory")
    client = BrokerClient(broker)
    try:  # warm the route cache for the stream's queries (the python engine may still be in back-off)
        for q in ("shared sql python django", "item3 shared", "shared module template table"):
            client.search(q, deadline_ms=1000)
    finally:
        client.close()
    os.kill(directory.pid, signal.SIGKILL)
    answers: list[Answer] = []
    stop = threading.Event()
    threads = query_stream(broker, stop, answers)
    time.sleep(1.5)
    stop.set()
    for t in threads:
        t.join(10)
    assert len(answers) >= 10
    assert all(not a.error for a in answers), [a.error for a in answers if a.error][:3]
    assert all(a.engines.get("databases") == "ok" and a.engines.get("web") == "ok" for a in answers)
    assert max(a.elapsed_ms for a in answers) <= DEADLINE_MS + SLACK_MS

    record = cluster.restart("directory")
    serving_at = time.monotonic()
    assert record.address == directory.address
    engines: set[str] = set()
    while engines != set(TOPICS) and time.monotonic() < serving_at + 5:
        engines = registered(record.address)
        time.sleep(0.02)
    back_after = time.monotonic() - serving_at
    print(
        f"\n{len(answers)} queries answered with the directory dead; "
        f"engines back {back_after:.2f} s after restart"
    )
    assert engines == set(TOPICS)
    # one heartbeat (0.3 s) plus the channel's reconnect back-off (250 ms +- 20 %) and scheduling slack
    assert back_after <= HEARTBEAT + 0.3 + 0.2, back_after


def test_robot_kill_9_mid_crawl_restarted_by_the_launcher(cluster: Cluster, tmp_path: Path) -> None:
    """A robot started by the launcher is killed with SIGKILL mid-crawl; ``Cluster.restart`` starts it with
    its recorded command line (seeds and --autostart included): it resumes from its checkpoint, the engine
    keeps every page it acknowledged, the crawl completes, and at most about one checkpoint interval of
    pages is fetched twice."""
    n_pages, interval = 100, 10
    web = LocalWeb().start()
    try:
        web.routes["/robots.txt"] = page("User-agent: *\nDisallow: /never/\n", ctype="text/plain")
        for i in range(n_pages):
            links = [f"/c{j}.html|crawlpage {j}" for j in (i + 1, i + 2, 2 * i + 1) if j < n_pages]
            web.routes[f"/c{i}.html"] = page(
                html(f"Crawlpage {i}", f"crawlpage sql database table {i}", [*links, "/never/x|never"])
            )
        engine_address = cluster.get("databases").address
        name = "robot-databases"
        state_dir = cluster.state_dir / "robots" / "databases"
        argv = [
            "-m", "oasis.robot", "--name", name, "--engine", engine_address, "--state-dir", str(state_dir),
            "--min-delay", "0.01", "--max-in-flight", "4", "--checkpoint-interval", str(interval),
            "--allow-private", "--autostart", "--log-level", "WARNING", "--seeds", web.url("/c0.html"),
        ]  # fmt: skip
        robot = cluster.start(name, "robot", argv)

        def crawled() -> set[str]:
            with grpc.insecure_channel(engine_address) as channel:
                reply = engine_pb2_grpc.EngineStub(channel).Search(
                    engine_pb2.SearchRequest(query="crawlpage", limit=1000), timeout=10
                )
            return {h.url for h in reply.hits}

        checkpoint = state_dir / "checkpoint.json"
        deadline = time.monotonic() + 60
        while not (checkpoint.exists() and len(crawled()) >= 35):
            assert time.monotonic() < deadline, "robot made no progress"
            time.sleep(0.05)
        os.kill(robot.pid, signal.SIGKILL)
        time.sleep(0.2)
        acked_before = crawled()
        fetched_before = [a.path for a in web.log if a.path.startswith("/c")]
        assert len(fetched_before) < n_pages, "killed too late to test a resume"
        saved = json.loads(checkpoint.read_text())["counters"]["pages_indexed"]
        assert saved <= len(acked_before)  # a checkpoint never runs ahead of the engine

        robot = cluster.restart(name)
        status = RobotClient(robot.address)
        try:
            deadline = time.monotonic() + 60
            while status.status().state != "done":
                assert time.monotonic() < deadline, "resumed crawl did not finish"
                time.sleep(0.1)
        finally:
            status.close()
        cluster.stop_one(cluster.get(name))
        paths = [a.path for a in web.log if a.path.startswith("/c")]
        refetched = len(paths) - len(set(paths))
        after = crawled()
        print(
            f"\nkilled after {len(fetched_before)} fetches ({len(acked_before)} acknowledged); "
            f"refetched {refetched} after resume (checkpoint interval {interval})"
        )
        assert acked_before <= after
        assert after == {web.url(f"/c{i}.html") for i in range(n_pages)}
        # one checkpoint interval, plus what was in flight (4) and queued (16) at the kill
        assert refetched <= interval + 4 + 16, refetched
        assert not any(p.startswith("/never/") for p in web.paths())
    finally:
        web.stop()


def test_slow_engine_is_suspended_backed_off_and_resumed_when_it_recovers() -> None:
    """A slow engine (delay injected by the test servicer's hook): each query still returns by its deadline;
    after ``threshold`` timeouts it is suspended (not called; queries no longer wait for it), a probe while it
    is still slow doubles the suspension, and once it is fast again the next probe brings it back."""
    from test_broker_service import OK, SUSPENDED, TIMEOUT, states
    from test_broker_service import Cluster as BrokerRig

    from oasis.broker.service import BrokerConfig
    from oasis.broker.suspension import BackoffPolicy

    rig = BrokerRig(
        BrokerConfig(
            route_cache_seconds=30.0, backoff=BackoffPolicy(threshold=2, base_seconds=0.4, cap_seconds=5.0)
        )
    )
    try:
        rig.search("sql", deadline_ms=1000)  # warm channels and the route cache
        py = rig.engines["py"]
        py.delay = 5.0  # slow: far beyond any deadline

        def timed(deadline_ms: int = 200) -> tuple[dict[str, int], float]:
            t0 = time.monotonic()
            reply = rig.search("sql table", k=10, deadline_ms=deadline_ms)
            return states(reply), (time.monotonic() - t0) * 1000

        first, second = timed()[0], timed()[0]
        assert first["py"] == TIMEOUT and second["py"] == TIMEOUT
        calls = py.calls
        suspended, fast_ms = timed()
        assert suspended["py"] == SUSPENDED and suspended["pg"] == OK
        assert py.calls <= calls + 1  # no query waits on it while suspended: at most one background probe
        assert fast_ms < 150, fast_ms  # no longer waits for the slow engine's deadline
        assert 0.3 < rig.broker.suspensions.suspended_for("py") <= 0.4
        time.sleep(0.45)  # the suspension ends; the probe finds it still slow: suspended twice as long
        probe, probe_ms = timed()
        assert probe["py"] == TIMEOUT and probe_ms <= 200 + 50
        assert 0.7 < rig.broker.suspensions.suspended_for("py") <= 0.8
        assert timed()[0]["py"] == SUSPENDED
        py.delay = 0.0  # the engine recovers
        time.sleep(0.85)
        recovered, _ = timed()
        assert recovered["py"] == OK
        assert rig.broker.suspensions.failures("py") == 0 and rig.broker.suspensions.suspended_for("py") == 0
        print(f"\nsuspended query {fast_ms:.0f} ms (deadline 200 ms); back-off 0.4 s -> 0.8 s -> recovered")
    finally:
        rig.close()
