"""Broker over real gRPC on loopback: a real directory, real engine servers (small in-test servicers with
injectable delay and failure), and the broker's own server, channels and client adapters."""

from __future__ import annotations

import signal
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from oasis.broker.__main__ import add_broker
from oasis.broker.clients import EngineClientPool, GrpcDirectoryClient
from oasis.broker.service import Broker, BrokerConfig
from oasis.broker.servicer import ROUTE_SOURCE_METADATA
from oasis.broker.suspension import BackoffPolicy
from oasis.directory.__main__ import add_directory
from oasis.directory.registry import Registry
from oasis.runtime.service import RunningServer, ServerConfig, build_server
from oasis.runtime.spawn import spawn_service
from oasis.runtime.text import tokenize
from oasis.v1 import (
    broker_pb2,
    broker_pb2_grpc,
    common_pb2,
    directory_pb2,
    directory_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
)

OK, TIMEOUT, ERROR, SKIPPED, SUSPENDED = (
    broker_pb2.ENGINE_STATE_OK,
    broker_pb2.ENGINE_STATE_TIMEOUT,
    broker_pb2.ENGINE_STATE_ERROR,
    broker_pb2.ENGINE_STATE_SKIPPED,
    broker_pb2.ENGINE_STATE_SUSPENDED,
)


def terms(text: str) -> list[str]:
    return tokenize(text)


@dataclass
class FakeEngine(engine_pb2_grpc.EngineServicer):
    """A tiny real Engine service: score = scale * matching term occurrences; injectable delay, failure."""

    name: str
    docs: dict[str, str]  # url -> text
    scale: float = 1.0
    delay: float = 0.0
    fail: bool = False
    calls: int = 0
    timeouts_seen: list[float] = field(default_factory=list)
    # (corrected query, its matches) offered when a query word is unknown here and nothing matched here or
    # the request asks for it (as the engine does)
    suggest: tuple[str, int] | None = None

    def Search(
        self, request: engine_pb2.SearchRequest, context: grpc.ServicerContext
    ) -> engine_pb2.SearchReply:
        self.calls += 1
        remaining = context.time_remaining()
        if remaining is not None:
            self.timeouts_seen.append(remaining)
        end = time.monotonic() + self.delay
        while time.monotonic() < end and context.is_active():
            time.sleep(0.005)
        if self.fail:
            context.abort(grpc.StatusCode.INTERNAL, "injected failure")
        q = set(terms(request.query))
        scored = []
        for url, text in self.docs.items():
            tf = sum(1 for t in terms(text) if t in q)
            if tf:
                scored.append((self.scale * tf, url, text))
        scored.sort(key=lambda x: (-x[0], x[1]))
        hits = [
            engine_pb2.Hit(url=u, title=t[:20], snippet=t[:40], score=s)
            for s, u, t in scored[: request.limit or 10]
        ]
        held = {t for text in self.docs.values() for t in terms(text)}
        unknown = [t for t in dict.fromkeys(terms(request.query)) if t not in held]
        offer = self.suggest is not None and unknown and (not scored or request.suggest)
        suggestion, matches = self.suggest if offer and self.suggest is not None else ("", 0)
        return engine_pb2.SearchReply(
            unknown=unknown,
            hits=hits,
            total=len(scored),
            engine=self.name,
            max_score=scored[0][0] if scored else 0.0,
            suggestion=suggestion,
            suggestion_matches=matches,
        )

    def summary(self) -> common_pb2.TopicSummary:
        df: Counter[str] = Counter()
        cf: Counter[str] = Counter()
        for text in self.docs.values():
            ts = terms(text)
            cf.update(ts)
            df.update(set(ts))
        return common_pb2.TopicSummary(
            topic=self.name,
            documents=len(self.docs),
            total_terms=sum(cf.values()),
            terms=[common_pb2.TermStat(term=t, df=df[t], cf=cf[t]) for t in sorted(df)],
        )


def start_engine(engine: FakeEngine) -> RunningServer:
    def add(server: grpc.Server) -> list[str]:
        engine_pb2_grpc.add_EngineServicer_to_server(engine, server)
        return ["oasis.v1.Engine"]

    return build_server(ServerConfig(max_workers=8), add)


def dead_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


class Cluster:
    def __init__(self, config: BrokerConfig) -> None:
        self.engines = {
            "pg": FakeEngine(
                "pg",
                {
                    "http://pg.test/select": "select rows from a table with sql",
                    "http://pg.test/index": "create index on a table",
                    "http://shared.test/sql": "sql sql sql everywhere",
                },
                scale=10.0,
            ),
            "py": FakeEngine(
                "py",
                {
                    "http://py.test/sqlite": "the sqlite3 module runs sql on a table",
                    "http://py.test/list": "list comprehension in python",
                    "http://SHARED.test/sql#frag": "sql sql sql everywhere",
                },
                scale=0.1,
            ),
            "dj": FakeEngine("dj", {"http://dj.test/tmpl": "django template language"}, scale=1.0),
        }
        self.servers: dict[str, RunningServer] = {n: start_engine(e) for n, e in self.engines.items()}
        self.registry = Registry(lease_seconds=60.0, clock=time.monotonic)
        self.directory = build_server(ServerConfig(max_workers=4), lambda s: add_directory(s, self.registry))
        with grpc.insecure_channel(self.directory.address) as ch:
            stub = directory_pb2_grpc.DirectoryStub(ch)
            for name, engine in self.engines.items():
                info = directory_pb2.EngineInfo(
                    name=name, address=self.servers[name].address, summary=engine.summary()
                )
                stub.Register(directory_pb2.RegisterRequest(engine=info), timeout=5)
        self.directory_client = GrpcDirectoryClient(self.directory.address)
        self.engine_client = EngineClientPool()
        self.broker = Broker(
            config, directory=self.directory_client, engines=self.engine_client, clock=time.monotonic
        )
        self.server = build_server(
            ServerConfig(max_workers=config.max_concurrent_queries + 4), lambda s: add_broker(s, self.broker)
        )
        self.channel = grpc.insecure_channel(self.server.address)
        self.stub = broker_pb2_grpc.BrokerStub(self.channel)

    def register(self, name: str, address: str, summary: common_pb2.TopicSummary) -> None:
        with grpc.insecure_channel(self.directory.address) as ch:
            info = directory_pb2.EngineInfo(name=name, address=address, summary=summary)
            directory_pb2_grpc.DirectoryStub(ch).Register(
                directory_pb2.RegisterRequest(engine=info), timeout=5
            )

    def search(self, query: str, **kw: int) -> broker_pb2.BrokerSearchReply:
        reply: broker_pb2.BrokerSearchReply = self.stub.Search(
            broker_pb2.BrokerSearchRequest(query=query, **kw), timeout=10
        )
        return reply

    def close(self) -> None:
        self.channel.close()
        self.directory_client.close()
        self.engine_client.close()
        with ThreadPoolExecutor(8) as pool:  # each stop takes ~0.2 s inside gRPC: stop them together
            for server in [self.server, self.directory, *self.servers.values()]:
                pool.submit(server.stop, 0)


def states(reply: broker_pb2.BrokerSearchReply) -> dict[str, int]:
    return {s.name: s.state for s in reply.engines}


FAST_BACKOFF = BackoffPolicy(threshold=2, base_seconds=0.3, cap_seconds=1.0)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    c = Cluster(BrokerConfig(route_cache_seconds=0.0, backoff=FAST_BACKOFF, normalisation="max"))
    yield c
    c.close()


def test_search_merges_normalised_scores_dedupes_and_reports_skipped(cluster: Cluster) -> None:
    reply = cluster.search("sql table", k=10)
    assert states(reply) == {"pg": OK, "py": OK, "dj": SKIPPED}
    assert reply.partial is False
    urls = [h.url for h in reply.hits]
    assert len(urls) == len(set(urls))
    assert "http://shared.test/sql" in urls  # two engines returned it under different spellings
    assert set(urls) == {
        "http://pg.test/select",
        "http://pg.test/index",
        "http://shared.test/sql",
        "http://py.test/sqlite",
    }
    # scores normalised per engine (s / s_max): py's raw scores are 100x smaller than pg's, yet its
    # two-term hit (0.2 of 0.3) ranks level with pg's two-term hit (20 of 30)
    by_url = {h.url: h for h in reply.hits}
    assert by_url["http://py.test/sqlite"].score == pytest.approx(2 / 3)
    assert by_url["http://py.test/sqlite"].raw_score == pytest.approx(0.2)
    assert by_url["http://pg.test/select"].score == pytest.approx(2 / 3)
    assert by_url["http://pg.test/select"].raw_score == pytest.approx(20.0)
    assert by_url["http://shared.test/sql"].score == pytest.approx(1.0)
    assert all(0 <= h.score <= 1 for h in reply.hits)
    assert [h.score for h in reply.hits] == sorted((h.score for h in reply.hits), reverse=True)
    assert cluster.engines["dj"].calls == 0
    ok = {s.name: s for s in reply.engines if s.state == OK}
    assert ok["pg"].hits == 3 and ok["py"].hits == 2
    assert reply.took_ms > 0


def test_no_hit_anywhere_brings_the_suggestion_that_finds_most(cluster: Cluster) -> None:
    """When no engine matches, each may offer its query with the unknown words corrected and how many of its
    pages that finds; the broker passes on the one that finds most ("did you mean"), and none when every
    word is known."""
    cluster.engines["pg"].suggest = ("sequel tables", 3)
    cluster.engines["py"].suggest = ("sqlite tables", 7)
    reply = cluster.search("sqlte tabels", k=10)
    assert not reply.hits and reply.suggestion == "sqlite tables"
    assert cluster.search("sql table", k=10).suggestion == ""  # every word known: no suggestion


def test_a_word_no_engine_holds_is_corrected_beside_hits_a_word_one_holds_is_not(cluster: Cluster) -> None:
    """ "Did you mean" was offered only when nothing matched: "sql tabels" found the sql pages and said
    nothing of "tabels". Now a query with a word no engine that answered holds gets the correction beside its
    hits, from a second search of the engines that lack no other word (asked with ``suggest``); an engine
    that lacks a word another engine holds is not asked ("python" is py's word: pg would correct it away),
    and a query whose every word some engine holds costs no second search."""
    pg, py = cluster.engines["pg"], cluster.engines["py"]
    pg.suggest = ("sql tables", 3)
    reply = cluster.search("sql tabels", k=10)
    assert reply.hits and reply.suggestion == "sql tables"
    pg.suggest, py.suggest = ("pytorch sql tables", 9), ("python sql tables", 2)
    before = pg.calls, py.calls
    reply = cluster.search("python sql tabels", k=10)
    assert {s.name for s in reply.engines if s.state == OK} >= {"pg", "py"}
    assert reply.hits and reply.suggestion == "python sql tables"
    assert (pg.calls - before[0], py.calls - before[1]) == (1, 2)  # py asked again, pg not
    py.suggest = None  # only pg could correct, and it would change a known word: no suggestion
    assert cluster.search("python sql tabels", k=10).suggestion == ""
    before = pg.calls, py.calls
    assert cluster.search("python sql", k=10).suggestion == ""
    assert (pg.calls - before[0], py.calls - before[1]) == (1, 1)


def test_a_misspelt_word_is_corrected_by_a_skipped_engine_when_nothing_matched(cluster: Cluster) -> None:
    """Measured with ``oasis bench query-latency``: ``torubleshooting`` was routed to the Python engine only
    (its term filter said "may hold"), the Django engine, which holds "troubleshooting", was skipped as
    sharing no query term, and no correction came back. Now when nothing matched where the query went and no
    engine asked corrected the word, the skipped engines are asked for theirs."""
    # an engine whose summary says it may hold "djangoo" (as a term filter's false positive does)
    fp = FakeEngine("fp", {"http://fp.test/x": "nothing here"})
    server = start_engine(fp)
    try:
        stat = common_pb2.TermStat(term=terms("djangoo")[0], df=1, cf=1)
        cluster.register(
            "fp",
            server.address,
            common_pb2.TopicSummary(topic="fp", documents=1, total_terms=2, terms=[stat]),
        )
        dj = cluster.engines["dj"]
        dj.suggest = ("django templates", 1)
        before = dj.calls
        reply = cluster.search("sql djangoo", k=10)  # hits where it went: dj, skipped, is not asked
        assert reply.hits and reply.suggestion == "" and dj.calls == before
        reply = cluster.search("djangoo templtes", k=10)
        states = {s.name: s.state for s in reply.engines}
        assert states["fp"] == OK and states["dj"] == SKIPPED and fp.calls == 2
        assert not reply.hits and reply.suggestion == "django templates" and dj.calls == before + 1
    finally:
        server.stop(0)


def test_max_engines_limits_fan_out(cluster: Cluster) -> None:
    reply = cluster.search("sql table", k=10, max_engines=1)
    assert [s.name for s in reply.engines if s.state == OK] == ["pg"]  # more sql/table documents
    assert cluster.engines["py"].calls == 0


def test_slow_engine_times_out_within_deadline_plus_50ms_with_partial_results(cluster: Cluster) -> None:
    cluster.engines["py"].delay = 3.0
    cluster.search("sql", k=5)  # warm channels: connection set-up is not what is measured
    cluster.engines["py"].delay = 3.0
    start = time.monotonic()
    reply = cluster.search("sql table", k=10, deadline_ms=300)
    elapsed = time.monotonic() - start
    assert elapsed < 0.300 + 0.050, f"took {elapsed * 1000:.0f} ms"
    assert states(reply)["py"] == TIMEOUT
    assert states(reply)["pg"] == OK
    assert reply.partial is True
    assert {h.engine for h in reply.hits} == {"pg"}
    # the deadline was propagated: the engine saw a gRPC timeout no larger than the query's deadline less the
    # broker's reply margin (10% of 300 ms), kept to merge and send the reply by the deadline on a loaded host
    assert 0 < cluster.engines["py"].timeouts_seen[-1] <= 0.300 - 0.030


def test_caller_grpc_deadline_shorter_than_deadline_ms_is_respected(cluster: Cluster) -> None:
    cluster.search("sql", k=5)
    cluster.engines["pg"].delay = 3.0
    start = time.monotonic()
    reply = cluster.stub.Search(broker_pb2.BrokerSearchRequest(query="sql", deadline_ms=5000), timeout=0.4)
    assert time.monotonic() - start < 0.4
    assert states(reply)["pg"] == TIMEOUT and states(reply)["py"] == OK


def test_dead_engine_is_an_error_then_suspended_and_probed_again_after_back_off(cluster: Cluster) -> None:
    summary = cluster.engines["pg"].summary()
    cluster.register("ghost", dead_address(), summary)
    first = cluster.search("sql", k=10)
    assert states(first)["ghost"] == ERROR
    assert first.partial is True
    assert {h.engine for h in first.hits} == {"pg", "py"}
    assert states(cluster.search("sql", k=10))["ghost"] == ERROR  # second consecutive failure: suspended
    third = cluster.search("sql", k=10)
    assert states(third)["ghost"] == SUSPENDED
    assert "suspended for" in {s.name: s for s in third.engines}["ghost"].message


def test_failing_engine_is_suspended_and_resumes_when_it_recovers(cluster: Cluster) -> None:
    py = cluster.engines["py"]
    py.fail = True
    assert states(cluster.search("sql"))["py"] == ERROR
    assert states(cluster.search("sql"))["py"] == ERROR
    calls = py.calls
    assert states(cluster.search("sql"))["py"] == SUSPENDED
    assert py.calls <= calls + 1  # no query waits on it while suspended: at most one background probe
    py.fail = False  # the engine recovers
    time.sleep(0.35)  # past the 0.3 s suspension
    reply = cluster.search("sql")
    assert states(reply)["py"] == OK
    assert cluster.broker.suspensions.failures("py") == 0


def test_directory_down_uses_last_good_route_then_all_known_engines(cluster: Cluster) -> None:
    fresh = cluster.stub.Search.with_call(broker_pb2.BrokerSearchRequest(query="sql table"), timeout=10)
    assert dict(fresh[1].trailing_metadata())[ROUTE_SOURCE_METADATA] == "directory"
    cluster.directory.stop(0)  # as good as kill -9 for a client: connections refused
    reply, call = cluster.stub.Search.with_call(broker_pb2.BrokerSearchRequest(query="sql table"), timeout=10)
    assert dict(call.trailing_metadata())[ROUTE_SOURCE_METADATA] == "stale"
    assert states(reply) == {"pg": OK, "py": OK, "dj": SKIPPED}
    assert all("directory unreachable" in s.message for s in reply.engines if s.state == OK)
    assert {h.engine for h in reply.hits} == {"pg", "py"}
    # a query never routed before goes to every engine the broker has been routed to
    reply, call = cluster.stub.Search.with_call(broker_pb2.BrokerSearchRequest(query="index"), timeout=10)
    assert dict(call.trailing_metadata())[ROUTE_SOURCE_METADATA] == "fallback"
    assert [h.url for h in reply.hits] == ["http://pg.test/index"]


def test_directory_down_with_no_route_ever_is_unavailable() -> None:
    c = Cluster(BrokerConfig())
    try:
        c.directory.stop(0)
        with pytest.raises(grpc.RpcError) as info:
            c.search("sql")
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "directory" in (info.value.details() or "")
    finally:
        c.close()


def test_route_cache_avoids_the_directory_within_its_ttl() -> None:
    c = Cluster(BrokerConfig(route_cache_seconds=30.0))
    try:
        first = c.stub.Search.with_call(broker_pb2.BrokerSearchRequest(query="SQL  table"), timeout=10)
        second = c.stub.Search.with_call(broker_pb2.BrokerSearchRequest(query="sql table"), timeout=10)
        assert dict(first[1].trailing_metadata())[ROUTE_SOURCE_METADATA] == "directory"
        assert dict(second[1].trailing_metadata())[ROUTE_SOURCE_METADATA] == "cache"
        assert [h.url for h in first[0].hits] == [h.url for h in second[0].hits]
    finally:
        c.close()


@pytest.mark.parametrize(
    ("request_kw", "message"),
    [
        ({"query": ""}, "empty query"),
        ({"query": "  \t "}, "empty query"),
        ({"query": "x" * 100_000}, "longer than"),
        ({"query": "sql", "k": -1}, "k must be"),
        ({"query": "sql", "deadline_ms": -5}, "deadline_ms must be"),
        ({"query": "sql", "max_engines": -1}, "max_engines must be"),
    ],
)
def test_bad_input_is_invalid_argument_and_the_broker_keeps_serving(
    cluster: Cluster, request_kw: dict[str, object], message: str
) -> None:
    with pytest.raises(grpc.RpcError) as info:
        cluster.stub.Search(broker_pb2.BrokerSearchRequest(**request_kw), timeout=10)  # type: ignore[arg-type]
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (info.value.details() or "")
    assert len(cluster.search("sql").hits) > 0


def test_load_beyond_capacity_is_resource_exhausted_not_collapse() -> None:
    c = Cluster(BrokerConfig(max_concurrent_queries=2, route_cache_seconds=5.0))
    try:
        c.search("sql")
        c.engines["pg"].delay = 0.5
        codes: list[grpc.StatusCode] = []
        lock = threading.Lock()

        def one() -> None:
            try:
                c.search("sql", deadline_ms=2000)
                code = grpc.StatusCode.OK
            except grpc.RpcError as exc:
                code = exc.code()
            with lock:
                codes.append(code)

        with ThreadPoolExecutor(8) as pool:
            for _ in range(8):
                pool.submit(one)
        counts = Counter(codes)
        assert counts[grpc.StatusCode.OK] >= 2
        assert counts[grpc.StatusCode.RESOURCE_EXHAUSTED] >= 1
        assert set(counts) <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}
        c.engines["pg"].delay = 0.0
        assert states(c.search("sql"))["pg"] == OK  # capacity is back once the load is gone
    finally:
        c.close()


def test_command_line_broker_answers_and_drains_on_sigterm(cluster: Cluster, tmp_path: Path) -> None:
    log = tmp_path / "broker.log"
    broker = spawn_service(
        [sys.executable, "-m", "oasis.broker", "--directory", cluster.directory.address,
         "--default-deadline-ms", "2000"],
        tmp_path / "broker.json",
        timeout=20,
        name="broker",
        log=log,
    )  # fmt: skip
    proc = broker.process
    try:
        with grpc.insecure_channel(broker.address) as channel:
            reply = broker_pb2_grpc.BrokerStub(channel).Search(
                broker_pb2.BrokerSearchRequest(query="django template"), timeout=10
            )
        assert [h.url for h in reply.hits] == ["http://dj.test/tmpl"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    assert proc.returncode == 0, log.read_text()
