"""The broker's merged answer is the plain computation's (issue 14): real engine processes over real Whoosh
indexes of the Debian documentation corpora, a real directory and the broker's own gRPC clients.

The plain computation is what the broker did before its fan-out was optimised: ask the directory for the
route, search every routed engine over gRPC, merge. The broker must give the same URLs, titles, snippets,
scores and engines in the same order, and the same per-engine hit counts, whether its route comes from the
directory (route cache TTL 0, twice) or from its cache."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from oasis.bench._cluster import (
    TOPICS,
    CorpusMissing,
    build_index,
    make_queries,
    sample_docs,
    start_engine,
)
from oasis.broker.clients import EngineClientPool, GrpcDirectoryClient
from oasis.broker.merge import EngineResult, merge
from oasis.broker.service import Broker, BrokerConfig, SearchOutcome
from oasis.directory.__main__ import add_directory
from oasis.directory.registry import Registry
from oasis.engine.topic import Topic
from oasis.runtime.clients import EngineClient
from oasis.runtime.service import ServerConfig, build_server, open_channel
from oasis.v1 import directory_pb2, directory_pb2_grpc, engine_pb2, engine_pb2_grpc

DOCS_PER_TOPIC = 40
K = 10


class Rig:
    def __init__(self, stack: ExitStack, tmp: Path) -> None:
        rng = random.Random(7)
        try:
            docs = {t.name: sample_docs(t, DOCS_PER_TOPIC, rng) for t in TOPICS}
        except CorpusMissing as exc:
            pytest.skip(f"{exc}; `./dev test` installs the corpora")
        self.queries = [q for _, q in make_queries(docs, 4, rng)]
        registry = Registry(lease_seconds=3600.0, clock=time.monotonic)
        directory = build_server(ServerConfig(max_workers=4), lambda s: add_directory(s, registry))
        stack.callback(directory.stop, 0)
        self.directory = GrpcDirectoryClient(directory.address)
        stack.callback(self.directory.close)
        for t in TOPICS:
            build_index(tmp / t.name, Topic(name=t.name, keywords=t.keywords), docs[t.name], t.name)
            engine = start_engine(t.name, t, tmp / t.name, tmp)
            stack.callback(engine.stop, 20)
            with open_channel(engine.address) as ch:
                summary = engine_pb2_grpc.EngineStub(ch).Summary(
                    engine_pb2.SummaryRequest(max_terms=500), timeout=30
                )
            with open_channel(directory.address) as ch:
                directory_pb2_grpc.DirectoryStub(ch).Register(
                    directory_pb2.RegisterRequest(
                        engine=directory_pb2.EngineInfo(name=t.name, address=engine.address, summary=summary)
                    ),
                    timeout=10,
                )
        self.pool = EngineClientPool()
        stack.callback(self.pool.close)

    def broker(self, route_cache_seconds: float) -> Broker:
        config = BrokerConfig(route_cache_seconds=route_cache_seconds, default_deadline_ms=20_000)
        return Broker(config, directory=self.directory, engines=self.pool, clock=time.monotonic)

    def plain(self, query: str) -> tuple[list[tuple[str, str, str, float, str]], dict[str, int]]:
        """Route, search every routed engine one after another, merge: the answer and hits per engine."""
        route = self.directory.route(query, 0, 10.0)
        results = []
        for e in route.engines:
            client = EngineClient(e.address)
            try:
                reply = client.search(query, K, 20.0)
            finally:
                client.close()
            results.append(
                EngineResult(engine=e.name, route_score=e.score, max_score=reply.max_score, hits=reply.hits)
            )
        merged = merge(results, K, BrokerConfig().normalisation)
        return [(h.url, h.title, h.snippet, h.score, h.engine) for h in merged], {
            r.engine: len(r.hits) for r in results
        }


def answer(outcome: SearchOutcome) -> tuple[list[tuple[str, str, str, float, str]], dict[str, int]]:
    assert not outcome.partial
    return [(h.url, h.title, h.snippet, h.score, h.engine) for h in outcome.hits], {
        s.name: s.hits for s in outcome.engines if s.state == "ok"
    }


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with ExitStack() as stack:
        yield Rig(stack, tmp_path_factory.mktemp("equality"))


def test_broker_answers_equal_the_plain_route_search_merge(rig: Rig) -> None:
    uncached = rig.broker(route_cache_seconds=0.0)  # every query asks the directory
    cached = rig.broker(route_cache_seconds=3600.0)
    compared = 0
    for query in rig.queries:
        expected = rig.plain(query)
        first = uncached.search(query, k=K)
        assert first.route_source == "directory"
        assert answer(first) == expected, query
        repeated = uncached.search(query, k=K)
        assert repeated.route_source == "directory"
        assert answer(repeated) == expected, query
        cached.search(query, k=K)
        from_cache = cached.search(query, k=K)
        assert from_cache.route_source == "cache"
        assert answer(from_cache) == expected, query
        compared += bool(expected[0])
    assert compared >= 10  # the queries found something: the comparison is not of empty answers
    assert any(len(hits) > 1 for hits in (rig.plain(q)[1] for q in rig.queries))  # merges of engines
