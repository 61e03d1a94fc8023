"""The one engine client and the one gRPC error boundary (oasis.runtime.clients / oasis.runtime.rpc), over a
real gRPC server on loopback with a recording Engine servicer."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import grpc
import pytest

from oasis.broker.clients import EngineClientPool
from oasis.broker.ports import EngineCallError
from oasis.robot.engine_client import connect_engine
from oasis.robot.engine_port import IndexDoc, RobotEngineError
from oasis.runtime.clients import MAX_SCORE_BATCH, EngineClient, IndexDocument, ServiceError
from oasis.runtime.service import RunningServer, ServerConfig, build_server
from oasis.v1 import engine_pb2, engine_pb2_grpc


@dataclass
class RecordingEngine(engine_pb2_grpc.EngineServicer):
    """Acknowledges at every flush (but the one of seq 3 when ``drop_last_ack``); records what it is sent."""

    requests: list[engine_pb2.IndexRequest] = field(default_factory=list)
    timeouts: list[float] = field(default_factory=list)
    score_calls: list[int] = field(default_factory=list)
    drop_last_ack: bool = False
    search_delay: float = 0.0
    abort: grpc.StatusCode | None = None

    def Index(
        self, request_iterator: Iterator[engine_pb2.IndexRequest], context: grpc.ServicerContext
    ) -> Iterator[engine_pb2.IndexAck]:
        self.timeouts.append(context.time_remaining() or 0.0)
        pending = 0
        for r in request_iterator:
            self.requests.append(r)
            pending += 1
            if r.flush and not (self.drop_last_ack and r.seq == 3):
                yield engine_pb2.IndexAck(
                    acked_through=r.seq, added=pending if not r.delete_url else pending - 1,
                    deleted=1 if r.delete_url else 0,
                )  # fmt: skip
                pending = 0

    def Score(self, request: engine_pb2.ScoreRequest, context: grpc.ServicerContext) -> engine_pb2.ScoreReply:
        self.score_calls.append(len(request.pages))
        return engine_pb2.ScoreReply(relevance=[min(1.0, len(p.text) / 100) for p in request.pages])

    def Stats(self, request: engine_pb2.StatsRequest, context: grpc.ServicerContext) -> engine_pb2.StatsReply:
        if self.abort is not None:
            context.abort(self.abort, "injected")
        return engine_pb2.StatsReply(documents=7)

    def Search(
        self, request: engine_pb2.SearchRequest, context: grpc.ServicerContext
    ) -> engine_pb2.SearchReply:
        end = time.monotonic() + self.search_delay
        while time.monotonic() < end and context.is_active():
            time.sleep(0.005)
        hit = engine_pb2.Hit(url="http://a.test/", title="A", snippet="a", score=2.5)
        return engine_pb2.SearchReply(hits=[hit], total=1, max_score=2.5)


@pytest.fixture
def engine() -> Iterator[tuple[RecordingEngine, RunningServer]]:
    servicer = RecordingEngine()

    def add(server: grpc.Server) -> list[str]:
        engine_pb2_grpc.add_EngineServicer_to_server(servicer, server)
        return ["oasis.v1.Engine"]

    running = build_server(ServerConfig(max_workers=4, not_serving_seconds=0.0), add)
    yield servicer, running
    running.stop(0)


def docs(n: int) -> list[IndexDocument]:
    return [
        IndexDocument(url=f"http://a.test/{i}", title="t", text="x", relevance=0.5) for i in range(1, n + 1)
    ]


def test_robot_batch_flushes_once_at_the_end_with_the_client_timeout(
    engine: tuple[RecordingEngine, RunningServer],
) -> None:
    servicer, running = engine
    client = connect_engine(running.address, timeout=7.0)
    start = time.monotonic()
    try:
        report = client.index([*docs(4), IndexDoc(url="http://a.test/gone", delete=True)])
    finally:
        elapsed = time.monotonic() - start
        client.close()
    assert [r.flush for r in servicer.requests] == [False, False, False, False, True]
    assert [r.seq for r in servicer.requests] == [1, 2, 3, 4, 5]
    assert servicer.requests[-1].delete_url == "http://a.test/gone"
    assert servicer.requests[0].upsert.has_relevance and servicer.requests[0].upsert.relevance == 0.5
    assert (report.acknowledged, report.added, report.deleted) == (5, 4, 1)
    # the call carried the client's 7 s deadline, less what the call had used when the server read it (the
    # grpc-timeout header rounds the remaining time up a little: 7.0096 was seen)
    assert 7.0 - elapsed <= servicer.timeouts[0] <= 7.05


def test_bulk_index_flushes_every_n_and_at_the_end(engine: tuple[RecordingEngine, RunningServer]) -> None:
    servicer, running = engine
    client = EngineClient(running.address)
    try:
        report = client.index(iter(docs(5)), flush_every=2, timeout=600.0)
        assert client.index([]).acknowledged == 0  # nothing to send: no call
    finally:
        client.close()
    assert [r.flush for r in servicer.requests] == [False, True, False, True, True]
    assert report.acknowledged == 5 and report.added == 5
    assert servicer.timeouts == [pytest.approx(600.0, abs=5.0)]


def test_missing_acknowledgement_is_data_loss_in_the_robots_error(
    engine: tuple[RecordingEngine, RunningServer],
) -> None:
    servicer, running = engine
    servicer.drop_last_ack = True
    client = connect_engine(running.address)
    try:
        with pytest.raises(RobotEngineError, match="acknowledged 0 of 3 operations") as info:
            client.index(docs(3))
    finally:
        client.close()
    assert info.value.code == "DATA_LOSS" and isinstance(info.value, ServiceError)


def test_score_is_sent_in_bounded_batches(engine: tuple[RecordingEngine, RunningServer]) -> None:
    servicer, running = engine
    client = EngineClient(running.address)
    try:
        scores = client.score([("t", "x" * 50)] * (MAX_SCORE_BATCH + 3))
    finally:
        client.close()
    assert servicer.score_calls == [MAX_SCORE_BATCH, 3]
    assert scores == [0.5] * (MAX_SCORE_BATCH + 3)


def test_rpc_errors_become_the_clients_domain_error_with_the_code(
    engine: tuple[RecordingEngine, RunningServer],
) -> None:
    servicer, running = engine
    servicer.abort = grpc.StatusCode.PERMISSION_DENIED
    expected = f"engine {running.address} Stats: PERMISSION_DENIED: injected"
    clients = (
        (EngineClient(running.address), ServiceError),
        (connect_engine(running.address), RobotEngineError),
    )
    for client, error in clients:
        try:
            with pytest.raises(error, match=expected) as info:
                client.document_count()
        finally:
            client.close()
        assert info.value.code == "PERMISSION_DENIED"
        assert isinstance(info.value.__cause__, grpc.RpcError)
    servicer.abort = None
    client = EngineClient(running.address)
    try:
        assert client.document_count() == 7
    finally:
        client.close()


def test_broker_futures_tell_a_deadline_from_other_failures(
    engine: tuple[RecordingEngine, RunningServer],
) -> None:
    servicer, running = engine
    pool = EngineClientPool()
    try:
        reply = pool.start_search(running.address, "a", 10, timeout=5.0).result(timeout=10)
        assert [(h.url, h.score) for h in reply.hits] == [("http://a.test/", 2.5)] and reply.max_score == 2.5
        servicer.search_delay = 2.0
        late = pool.start_search(running.address, "a", 10, timeout=0.2).exception(timeout=10)
        assert isinstance(late, EngineCallError) and late.timeout and late.code == "DEADLINE_EXCEEDED"
        none_left = pool.start_search(running.address, "a", 10, timeout=0.0).exception(timeout=1)
        assert isinstance(none_left, EngineCallError) and none_left.timeout
        down = pool.start_search(dead_address(), "a", 10, timeout=2.0).exception(timeout=10)
        assert isinstance(down, EngineCallError) and not down.timeout and down.code == "UNAVAILABLE"
    finally:
        pool.close()


def dead_address() -> str:
    """An address nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"
