"""The Engine service over real gRPC on loopback, with a real Whoosh index in tmp_path."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from oasis.engine.config import EngineConfig
from oasis.engine.index import TopicIndex
from oasis.engine.servicer import TOPIC_METADATA_KEY, EngineServicer, add_engine_servicer
from oasis.engine.topic import Topic
from oasis.runtime.service import ServerConfig, build_server, channel_options
from oasis.v1 import engine_pb2, engine_pb2_grpc

TOPIC = Topic(name="space", description="space exploration", keywords=("rocket", "orbit"))
TIMEOUT = 10.0


class Engine:
    def __init__(self, tmp_path: Path, **config: object) -> None:
        self.config = EngineConfig(name="e1", topic=TOPIC, index_dir=tmp_path / "ix", **config)  # type: ignore[arg-type]
        self.index = TopicIndex.open(self.config.index_dir, TOPIC, limits=self.config.limits)
        servicer = EngineServicer(self.index, self.config)
        self.running = build_server(ServerConfig(), lambda s: add_engine_servicer(s, servicer))
        self.channel = grpc.insecure_channel(self.running.address, options=channel_options())
        self.stub = engine_pb2_grpc.EngineStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        self.running.stop(0)
        self.index.close()

    def index_docs(self, requests: list[engine_pb2.IndexRequest]) -> list[engine_pb2.IndexAck]:
        return list(self.stub.Index(iter(requests), timeout=TIMEOUT))

    def search(self, query: str, **kw: int) -> engine_pb2.SearchReply:
        return self.stub.Search(engine_pb2.SearchRequest(query=query, **kw), timeout=TIMEOUT)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    e = Engine(tmp_path, batch_size=3)
    yield e
    e.close()


def doc(seq: int, url: str, text: str, title: str = "", flush: bool = False) -> engine_pb2.IndexRequest:
    return engine_pb2.IndexRequest(
        seq=seq,
        upsert=engine_pb2.Document(url=url, title=title, text=text, fetch_time=1000.0 + seq),
        flush=flush,
    )


def test_index_then_search(engine: Engine) -> None:
    reqs = [
        doc(i, f"http://space.org/{i}", f"rocket number {i} reached orbit", title=f"Rocket {i}")
        for i in range(1, 8)
    ]
    acks = engine.index_docs(reqs)
    # batch size 3: commits after seq 3 and 6, then the rest at end of stream
    assert [a.acked_through for a in acks] == [3, 6, 7]
    assert sum(a.added for a in acks) == 7
    reply = engine.search("rocket", limit=5)
    assert reply.total == 7 and len(reply.hits) == 5 and reply.engine == "e1"
    assert reply.max_score == pytest.approx(reply.hits[0].score) and reply.max_score > 0
    assert "<b>rocket</b>" in reply.hits[0].snippet
    assert 0 < reply.hits[0].relevance <= 1
    page2 = engine.search("rocket", limit=5, offset=5)
    assert len(page2.hits) == 2
    assert {h.url for h in reply.hits}.isdisjoint(h.url for h in page2.hits)


def test_flush_acknowledges_at_once(engine: Engine) -> None:
    acks = engine.index_docs(
        [
            doc(10, "http://space.org/a", "orbit", flush=True),
            doc(11, "http://space.org/b", "x1"),
            engine_pb2.IndexRequest(seq=12, flush=True),
        ]
    )
    assert [a.acked_through for a in acks] == [10, 12]
    assert [a.added for a in acks] == [1, 1]


def test_modify_and_delete(engine: Engine) -> None:
    engine.index_docs(
        [doc(1, "http://space.org/p", "old words about rockets"), doc(2, "http://space.org/q", "orbit")]
    )
    acks = engine.index_docs(
        [
            doc(3, "http://SPACE.org/p#top", "new words about telescopes"),
            engine_pb2.IndexRequest(seq=4, delete_url="http://space.org/q"),
        ]
    )
    assert (acks[-1].replaced, acks[-1].deleted) == (1, 1)
    assert engine.search("rockets").total == 0
    assert engine.search("telescopes").hits[0].url == "http://space.org/p"
    assert engine.search("orbit").total == 0
    reply = engine.stub.Delete(
        engine_pb2.DeleteRequest(urls=["http://space.org/p", "http://space.org/none"]), timeout=TIMEOUT
    )
    assert reply.deleted == 1
    stats = engine.stub.Stats(engine_pb2.StatsRequest(), timeout=TIMEOUT)
    assert stats.documents == 0 and stats.topic == "space" and stats.index_bytes > 0 and stats.last_commit > 0


def test_health(engine: Engine) -> None:
    health = health_pb2_grpc.HealthStub(engine.channel)
    for service in ("", "oasis.v1.Engine"):
        reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=TIMEOUT)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


def expect_error(code: grpc.StatusCode, fragment: str, call: object) -> None:
    with pytest.raises(grpc.RpcError) as info:
        call()  # type: ignore[operator]
    assert info.value.code() == code, info.value.details()
    assert fragment in (info.value.details() or "")


def test_bad_input_gets_clear_errors_and_service_keeps_serving(engine: Engine) -> None:
    engine.index_docs([doc(1, "http://space.org/1", "rocket")])
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, "query is empty", lambda: engine.search(""))
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, "query is empty", lambda: engine.search(" \t "))
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, "limit 4096", lambda: engine.search("rocket " * 15_000))
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, "no searchable terms", lambda: engine.search("AND OR"))
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, "offset", lambda: engine.search("rocket", offset=-3))
    # a refused wildcard says what is wrong with it, as written (before: "unsupported query element Every"
    # for "*", and "'url:http': fields cannot be searched, and a wildcard needs letters" for both of these)
    for query, says in (
        ("*", "'*' alone would match every page: a wildcard needs at least 2 letters before * or ?"),
        ("url:http*", "'url:http*': fields cannot be searched; search for the words alone"),
        ("foo-bar*", "'foo-bar*': a wildcard applies to one word: letters or digits before * or ?"),
        ("r*", "'r*': a wildcard needs at least 2 letters before * or ?"),
    ):
        expect_error(grpc.StatusCode.INVALID_ARGUMENT, says, lambda q=query: engine.search(q))  # type: ignore[misc]
    assert engine.search("rock*").total == 1
    expect_error(
        grpc.StatusCode.INVALID_ARGUMENT,
        "invalid URL",
        lambda: engine.stub.Delete(engine_pb2.DeleteRequest(urls=["ftp://x"]), timeout=TIMEOUT),
    )
    wrong_topic = [(TOPIC_METADATA_KEY, "cooking")]
    expect_error(
        grpc.StatusCode.NOT_FOUND,
        "serves topic 'space', not 'cooking'",
        lambda: engine.stub.Search(
            engine_pb2.SearchRequest(query="rocket"), timeout=TIMEOUT, metadata=wrong_topic
        ),
    )
    expect_error(
        grpc.StatusCode.INVALID_ARGUMENT,
        "strictly increasing",
        lambda: engine.index_docs([doc(5, "http://space.org/5", "a1"), doc(5, "http://space.org/6", "b1")]),
    )
    # the right topic named explicitly is fine, and the service still serves
    ok = engine.stub.Search(
        engine_pb2.SearchRequest(query="rocket"), timeout=TIMEOUT, metadata=[(TOPIC_METADATA_KEY, "space")]
    )
    assert ok.total == 1


def test_invalid_pages_are_rejected_in_the_stream_without_losing_others(engine: Engine) -> None:
    big = "word " * 500_000  # 2.5 MB > the 2 M character limit
    acks = engine.index_docs(
        [
            doc(1, "", "empty url"),
            doc(2, "ftp://space.org/x", "bad scheme"),
            doc(3, "http://space.org/good", "rocket"),
            doc(4, "http://space.org/big", big),
            engine_pb2.IndexRequest(seq=5),
            doc(6, "http://space.org/good2", "orbit", flush=True),
        ]
    )
    rejected = {r.seq: r.reason for a in acks for r in a.rejected}
    assert set(rejected) == {1, 2, 4, 5}
    assert "empty URL" in rejected[1] and "not http or https" in rejected[2]
    assert "limit 2000000" in rejected[4] and "neither upsert nor delete" in rejected[5]
    assert acks[-1].acked_through == 6
    assert sum(a.added for a in acks) == 2
    assert engine.search("rocket OR orbit").total == 2


def test_allowed_hosts(tmp_path: Path) -> None:
    e = Engine(tmp_path, allowed_hosts=frozenset({"space.org"}))
    try:
        acks = e.index_docs([doc(1, "http://space.org/a", "rocket"), doc(2, "http://spam.com/a", "rocket")])
        assert [r.seq for a in acks for r in a.rejected] == [2]
        assert "not in --allowed-hosts" in acks[-1].rejected[0].reason
        assert e.search("rocket").total == 1
    finally:
        e.close()


def test_score_topic_and_summary(engine: Engine) -> None:
    engine.index_docs(
        [doc(1, "http://space.org/1", "rocket orbit apple"), doc(2, "http://space.org/2", "apple")]
    )
    pages = [engine_pb2.PageText(title="Rocket", text="rocket to orbit"), engine_pb2.PageText(text="cake")]
    reply = engine.stub.Score(engine_pb2.ScoreRequest(pages=pages), timeout=TIMEOUT)
    model = engine.index.relevance_model()
    assert list(reply.relevance) == pytest.approx([model.score("Rocket", "rocket to orbit"), 0.0])
    assert reply.model_documents == model.n_docs  # the model that scored them: its IDF collection's size ...
    assert reply.model == model.build != ""  # ... and its build
    assert reply.relevance[0] > 0.5
    topic = engine.stub.GetTopic(engine_pb2.GetTopicRequest(), timeout=TIMEOUT)
    assert (topic.name, topic.description, list(topic.keywords)) == (
        "space",
        "space exploration",
        ["rocket", "orbit"],
    )
    summary = engine.stub.Summary(engine_pb2.SummaryRequest(max_terms=3), timeout=TIMEOUT)
    assert (
        summary.documents == 2 and summary.total_terms == 4 and list(summary.keywords) == ["rocket", "orbit"]
    )
    terms = [(t.term, t.df, t.cf) for t in summary.terms]
    assert set(terms[:2]) == {("rocket", 1, 1), ("orbit", 1, 1)}  # the topic's terms first
    assert terms[2] == ("appl", 2, 2)


def test_concurrent_streams_all_acknowledged(engine: Engine) -> None:
    errors: list[BaseException] = []

    def stream(k: int) -> None:
        try:
            acks = engine.index_docs([doc(i, f"http://space.org/{k}/{i}", f"rocket {k}") for i in range(10)])
            assert acks[-1].acked_through == 9
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=stream, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert engine.search("rocket").total == 40
