"""Acceptance (issue 3): crawl postgresql-doc-15 served on loopback by the replayed web into a real engine
over gRPC; the engine answers topic queries with the right pages; zero robots.txt and zero politeness
violations, checked from the server's own access log."""

from __future__ import annotations

import random
import time
from pathlib import Path

import grpc
import pytest
from robot_testweb import LocalEngine

from oasis.engine.topic import Topic
from oasis.robot.config import RobotConfig
from oasis.robot.crawler import Crawler
from oasis.robot.engine_client import connect_engine
from oasis.robot.scheduling import make_controller
from oasis.v1 import engine_pb2, engine_pb2_grpc

pytestmark = [pytest.mark.corpus, pytest.mark.slow]

DELAY = 0.01
TOPIC = Topic(
    name="postgres-sql",
    description="PostgreSQL SQL commands, indexes, transactions, vacuum and query planning",
    keywords=("sql", "index", "transaction", "vacuum", "query", "table", "isolation", "planner"),
)
# query -> the page that must answer it in the top 5
QUERIES = {
    "multicolumn index": "/indexes-multicolumn.html",
    "table partitioning": "/ddl-partitioning.html",
    "partial index": "/indexes-partial.html",
    "row security policies": "/ddl-rowsecurity.html",
    "transaction isolation levels": "/transaction-iso.html",
    "routine vacuuming": "/routine-vacuuming.html",
}
# robots.txt: embedded SQL in C and the information schema are off limits (both are linked early)
DISALLOWED = ("/ecpg", "/infoschema-")


def test_crawl_postgresql_docs_polite_and_searchable(tmp_path: Path) -> None:
    from oasis.web.corpora import CorpusNotInstalled, debian_corpus
    from oasis.web.server import ReplayedWeb, RobotsPolicy

    try:
        corpus = debian_corpus("postgresql-doc-15")
    except CorpusNotInstalled as exc:
        pytest.skip(f"postgresql-doc-15 not installed ({exc}); `./dev test` installs it")
    engine = LocalEngine(tmp_path / "index", TOPIC)
    web = ReplayedWeb(corpus, robots=RobotsPolicy(disallow=DISALLOWED)).start()
    try:
        config = RobotConfig(
            name="acceptance",
            min_delay=DELAY,
            max_in_flight=8,
            state_dir=tmp_path / "state",
            allowed_hosts=frozenset(u.split("/")[2] for u in web.hosts.values()),
        )
        client = connect_engine(engine.address, timeout=30)
        crawler = Crawler(config, make_controller("whittle", rng=random.Random(7)), client)
        try:
            crawler.add_seeds(web.seeds)
            t0 = time.monotonic()
            status = crawler.run(timeout=150)  # to exhaustion: every reachable, allowed page
            elapsed = time.monotonic() - t0
        finally:
            crawler.close()
            client.close()
        log = web.access_log
        fetched = {r.path for r in log}
        print(f"crawled {status.pages_fetched} pages in {elapsed:.1f} s; errors {status.errors}")

        reachable = corpus.reachable()
        allowed = {
            u for u in reachable if not u.split("/", 3)[3].startswith(tuple(p[1:] for p in DISALLOWED))
        }
        assert status.state == "done" and status.frontier_size == 0
        assert status.pages_fetched >= len(allowed) and status.pages_indexed >= 0.95 * len(allowed)
        # zero robots.txt violations, robots.txt fetched first
        assert log[0].path == "/robots.txt"
        assert web.disallowed_requests() == []
        assert status.errors.get("robots_disallowed", 0) > 0  # the rules were exercised
        # zero politeness violations: no two requests to the host closer than the delay
        gaps = web.min_gaps()
        assert gaps and min(gaps.values()) >= DELAY, gaps
        # the engine answers topic queries with the right pages
        served = next(iter(web.hosts.values()))
        with grpc.insecure_channel(engine.address) as channel:
            stub = engine_pb2_grpc.EngineStub(channel)
            for query, path in QUERIES.items():
                assert path in fetched, f"{path} not crawled"
                reply = stub.Search(engine_pb2.SearchRequest(query=query, limit=5), timeout=10)
                urls = [h.url for h in reply.hits]
                assert served + path in urls, (query, urls)
    finally:
        web.stop()
        engine.close()
