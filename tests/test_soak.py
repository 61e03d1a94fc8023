"""Soak test (issue 15): a whole cluster from the launcher under mixed load for a fixed budget -- queries
(some hostile), indexing, crawling robots, one engine SIGSTOPped and resumed, one killed with SIGKILL and
restarted -- then: every acknowledged document is in its engine, every query was answered (hits or a
clear error) within its deadline + 50 ms, and no service's memory went over its cap.

"Within its deadline + 50 ms" is the broker's promise on a machine that runs it on time. On this shared
2-core machine the load itself (three robots, ten services, the test's own threads) can leave a ready process
waiting for a core for a while, and a query that the broker cut at its deadline then reaches the test late
(session 11: 3 of 693 queries at 680-736 ms, all partial, i.e. cut on time). So the same run measures the
baseline: a pinger calls the broker's health check (a reply with no work behind it) every 50 ms over one
open channel, and a query may exceed deadline + 50 ms by at most the slowest ping that overlapped it. A
broker that waits past its deadline (for a stopped engine: up to the client's deadline + 1 s) still fails.

The hostile queries here are the ones the broker answers within its deadline on today's engines (long,
nested, junk, field syntax); the queries of death of issue 15 item 2 (``?*``, ``*a* *e*``, long proximity
phrases) keep an engine's CPU busy after the broker has answered and are the subject of that item's tests.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import defaultdict
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from oasis.cluster.config import load_config
from oasis.cluster.launcher import Cluster, bring_up
from oasis.runtime.clients import BrokerClient, EngineClient, IndexDocument, ServiceError

BUDGET = 75.0  # seconds of load
DEADLINE_MS = 600
SLACK_MS = 50
MiB = 1024 * 1024
# resident-memory caps per kind of service (peaks measured on this test: see the test's output)
CAPS = {
    "directory": 150 * MiB,
    "broker": 200 * MiB,
    "engine": 400 * MiB,
    "robot": 300 * MiB,
    "web": 300 * MiB,
    "gateway": 200 * MiB,
}

CONFIG = """
[cluster]
lease_seconds = 3.0
heartbeat_seconds = 0.5
route_cache_seconds = 1.0
default_deadline_ms = 600
max_concurrent_queries = 64

[web]
corpus = "synthetic:pages=400,hosts=3,topics=3,seed=11"

[robot]
policy = "whittle"
min_delay = 0.02
max_in_flight = 4
max_pages = 400
min_relevance = 0.15

[[topic]]
name = "databases"
description = "Relational databases, SQL queries, indexes, transactions and query planning"
keywords = ["database", "sql", "query", "index", "transaction", "table"]

[[topic]]
name = "python"
description = "The Python programming language, its standard library, modules and interpreter"
keywords = ["python", "module", "function", "class", "interpreter", "library"]

[[topic]]
name = "web"
description = "Web development: HTTP, HTML templates, views, forms and web frameworks"
keywords = ["http", "html", "template", "view", "form", "django"]
"""

QUERIES = ["sql query index", "python module function", "http template view", "database transaction"]
HOSTILE = [
    " ".join(f"term{i}" for i in range(300)),  # 300 terms
    "(" * 40 + "sql" + ")" * 40,  # deep nesting
    "\u202e\u0000\ufffd \U0001f600 ??? !!! ::: ",  # junk
    "x" * 2000,  # one 2000-character term
    "AND OR NOT",
    'title:"sql" OR url:python',
    # queries of death before the restricted query language (issue 15 item 2): refused or bounded now
    "?*",
    "sql *a* *e* *i* *o* *u*",
    '"' + " ".join(f"w{i}" for i in range(300)) + '"~50',
    "fetch_time:*",
]


def rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def test_soak_mixed_load_with_faults(tmp_path: Path) -> None:
    config_file = tmp_path / "cluster.toml"
    config_file.write_text(CONFIG)
    cluster: Cluster = bring_up(load_config(config_file), tmp_path / "state", timeout=60, log_level="WARNING")
    stop = threading.Event()
    lock = threading.Lock()
    latencies: list[tuple[float, str, str, float]] = []  # (ms, query, outcome, seconds into the load)
    pings: list[tuple[float, float]] = []  # (seconds into the load at the start, ms) of each health check
    acked: dict[str, set[str]] = defaultdict(set)  # engine -> acknowledged URLs
    peaks: dict[str, int] = defaultdict(int)
    errors: list[str] = []
    topics = [s.name for s in cluster.of_kind("engine")]

    def address(name: str) -> str:
        with lock:
            return cluster.get(name).address

    def querier(seed: int) -> None:
        rng = random.Random(seed)
        broker = BrokerClient(cluster.of_kind("broker")[0].address)
        try:
            while not stop.is_set():
                q = rng.choice(HOSTILE) if rng.random() < 0.3 else rng.choice(QUERIES)
                t0 = time.monotonic()
                try:
                    res = broker.search(q, k=10, deadline_ms=DEADLINE_MS)
                    outcome = "partial" if res.partial else "ok"
                except ServiceError as exc:
                    outcome = exc.code
                took = (time.monotonic() - t0) * 1000  # before taking the lock (a restart holds it)
                with lock:
                    latencies.append((took, q[:40], outcome, t0 - t_start))
                time.sleep(0.02)
        finally:
            broker.close()

    def indexer() -> None:
        batch_no = 0
        while not stop.is_set():
            for topic in topics:
                batch_no += 1
                docs = [
                    IndexDocument(
                        url=f"http://soak.local/{topic}/{batch_no}/{i}",
                        title=f"soak {topic} {batch_no} {i}",
                        text=f"soakbatch{batch_no} {topic} sql python http document {i}",
                        fetch_time=time.time(),
                    )
                    for i in range(10)
                ]
                client = EngineClient(address(topic), timeout=5)
                try:
                    report = client.index(docs)
                    with lock:
                        acked[topic].update(d.url for d in docs[: report.acknowledged])
                except ServiceError:
                    pass  # engine stopped or down: this batch is not acknowledged
                finally:
                    client.close()
            time.sleep(0.2)

    def pinger() -> None:
        with grpc.insecure_channel(cluster.of_kind("broker")[0].address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            stub.Check(health_pb2.HealthCheckRequest(), timeout=5)  # connected before the load starts
            while not stop.is_set():
                time.sleep(0.05)
                t0 = time.monotonic()
                try:
                    stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
                except grpc.RpcError:  # the broker never stops here: a failed check excuses nothing
                    continue
                took = (time.monotonic() - t0) * 1000
                with lock:
                    pings.append((t0 - t_start, took))

    def sampler() -> None:
        while not stop.is_set():
            with lock:
                services = list(cluster.services)
            for s in services:
                peaks[s.name] = max(peaks[s.name], rss(s.pid))
            time.sleep(0.5)

    warm = BrokerClient(cluster.of_kind("broker")[0].address)
    try:  # the first query opens the broker's channels (not counted; the load measures a running cluster)
        warm.search(QUERIES[0], k=10, deadline_ms=5000)
    finally:
        warm.close()
    t_start = time.monotonic()
    threads = [threading.Thread(target=querier, args=(i,)) for i in range(2)]
    threads += [threading.Thread(target=f) for f in (indexer, sampler, pinger)]
    for t in threads:
        t.start()
    try:
        time.sleep(BUDGET * 0.25)
        stopped = cluster.get("python")
        print(f"\nSIGSTOP python at {time.monotonic() - t_start:.1f} s")
        os.kill(stopped.pid, signal.SIGSTOP)  # a hung engine
        time.sleep(6.0)
        os.kill(stopped.pid, signal.SIGCONT)
        time.sleep(BUDGET * 0.2)
        killed = cluster.get("web")
        print(f"SIGKILL web at {time.monotonic() - t_start:.1f} s")
        os.kill(killed.pid, signal.SIGKILL)
        time.sleep(1.0)
        with lock:
            cluster.restart("web", timeout=60)
        time.sleep(max(0.0, BUDGET - (time.monotonic() - t_start)))
    except Exception as exc:  # keep the cluster stoppable; the assertion below reports it
        errors.append(repr(exc))
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    try:
        assert not errors, errors
        # every acknowledged document is there (one search per batch token)
        missing: list[str] = []
        for topic in topics:
            client = EngineClient(address(topic), timeout=10)
            try:
                by_batch: dict[str, set[str]] = defaultdict(set)
                for url in acked[topic]:
                    by_batch[url.split("/")[4]].add(url)
                for batch, urls in by_batch.items():
                    hits = client.start_search(f"soakbatch{batch}", 20, timeout=10).result()
                    missing += sorted(urls - {h.url for h in hits.hits})
            finally:
                client.close()
        outcomes = defaultdict(int)
        for _, _, o, _ in latencies:
            outcomes[o] += 1
        worst = max(latencies)
        total_acked = sum(len(v) for v in acked.values())
        print(
            f"\nsoak {BUDGET:.0f} s: {len(latencies)} queries {dict(outcomes)}, worst {worst[0]:.0f} ms "
            f"({worst[1]!r}, limit {DEADLINE_MS + SLACK_MS}); {total_acked} documents acknowledged, "
            f"{len(missing)} missing; peak RSS MiB "
            + ", ".join(f"{n}={v / MiB:.0f}" for n, v in sorted(peaks.items()))
        )
        assert len(latencies) > 100 and total_acked > 300
        assert missing == [], f"{len(missing)} acknowledged documents missing, e.g. {missing[:3]}"
        over = [(x, ping_during(pings, x)) for x in latencies if x[0] > DEADLINE_MS + SLACK_MS]
        late = [(x, excuse) for x, excuse in over if x[0] > DEADLINE_MS + SLACK_MS + excuse]
        print(
            f"pings: {len(pings)}, median {sorted(p for _, p in pings)[len(pings) // 2]:.1f} ms, worst "
            f"{max(p for _, p in pings):.0f} ms; queries over {DEADLINE_MS + SLACK_MS} ms (ms, slowest ping "
            f"beside it): {[(round(x[0]), round(e)) for x, e in over]}"
        )
        assert len(pings) > 200
        assert late == [], f"{len(late)} queries over the deadline + 50 ms + the ping beside them: {late[:5]}"
        for s in cluster.services:
            assert 0 < peaks[s.name] <= CAPS[s.kind], f"{s.name}: {peaks[s.name] / MiB:.0f} MiB"
    finally:
        cluster.down(grace=10)


def ping_during(pings: list[tuple[float, float]], query: tuple[float, str, str, float]) -> float:
    """The slowest health check that overlapped the query (both as (start s, ms)); 0 if none did."""
    start, end = query[3], query[3] + query[0] / 1000
    return max((ms for t, ms in pings if t < end and t + ms / 1000 > start), default=0.0)


pytestmark = pytest.mark.slow
