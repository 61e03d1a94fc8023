"""Small client adapters the CLI uses to talk to the services. Every call passes ``timeout=``; a
``grpc.RpcError`` becomes :class:`ServiceError` here, at one boundary."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import grpc

from oasis.runtime.service import open_channel
from oasis.v1 import broker_pb2, broker_pb2_grpc, engine_pb2, engine_pb2_grpc, robot_pb2, robot_pb2_grpc

logger = logging.getLogger(__name__)

STATE_NAMES = {
    broker_pb2.ENGINE_STATE_OK: "ok",
    broker_pb2.ENGINE_STATE_TIMEOUT: "timeout",
    broker_pb2.ENGINE_STATE_ERROR: "error",
    broker_pb2.ENGINE_STATE_SKIPPED: "skipped",
    broker_pb2.ENGINE_STATE_SUSPENDED: "suspended",
}


class ServiceError(RuntimeError):
    """A call to an Oasis service failed; ``code`` is the gRPC status code name."""

    def __init__(self, message: str, code: str = "UNKNOWN") -> None:
        super().__init__(message)
        self.code = code


def _error(what: str, exc: grpc.RpcError) -> ServiceError:
    code = exc.code().name if hasattr(exc, "code") and exc.code() is not None else "UNKNOWN"
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return ServiceError(f"{what}: {code}: {details}", code)


@dataclass(frozen=True)
class SearchHit:
    url: str
    title: str
    snippet: str
    score: float
    engine: str


@dataclass(frozen=True)
class SearchResult:
    hits: list[SearchHit]
    engines: dict[str, str]
    partial: bool
    took_ms: float
    messages: dict[str, str] = field(default_factory=dict)  # engine -> why it is not ok / how it was routed


class BrokerClient:
    def __init__(self, address: str) -> None:
        self._channel = open_channel(address)
        self._stub = broker_pb2_grpc.BrokerStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def search(self, query: str, k: int = 10, deadline_ms: int = 1000) -> SearchResult:
        request = broker_pb2.BrokerSearchRequest(query=query, k=k, deadline_ms=deadline_ms)
        try:
            reply = self._stub.Search(request, timeout=deadline_ms / 1000.0 + 1.0)
        except grpc.RpcError as exc:
            raise _error("broker search", exc) from exc
        return SearchResult(
            hits=[SearchHit(h.url, h.title, h.snippet, h.score, h.engine) for h in reply.hits],
            engines={e.name: STATE_NAMES.get(e.state, "error") for e in reply.engines},
            partial=reply.partial,
            took_ms=reply.took_ms,
            messages={e.name: e.message for e in reply.engines if e.message},
        )


@dataclass(frozen=True)
class IndexDocument:
    url: str
    title: str
    text: str
    fetch_time: float = 0.0


@dataclass
class IndexReport:
    acknowledged: int = 0
    added: int = 0
    replaced: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)


class EngineClient:
    def __init__(self, address: str) -> None:
        self._channel = open_channel(address)
        self._stub = engine_pb2_grpc.EngineStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def document_count(self, timeout: float = 2.0) -> int:
        try:
            return int(self._stub.Stats(engine_pb2.StatsRequest(), timeout=timeout).documents)
        except grpc.RpcError as exc:
            raise _error("engine stats", exc) from exc

    def index(self, docs: Iterable[IndexDocument], batch: int = 200, timeout: float = 600.0) -> IndexReport:
        """Stream ``docs`` to the engine and return once every one is acknowledged (durable)."""
        sent = threading.Event()
        last_seq = 0

        def requests() -> Iterator[engine_pb2.IndexRequest]:
            nonlocal last_seq
            seq = 0
            for seq, doc in enumerate(docs, start=1):
                yield engine_pb2.IndexRequest(
                    seq=seq,
                    upsert=engine_pb2.Document(
                        url=doc.url, title=doc.title, text=doc.text, fetch_time=doc.fetch_time
                    ),
                    flush=seq % batch == 0,
                )
            last_seq = seq
            sent.set()

        report = IndexReport()
        try:
            for ack in self._stub.Index(requests(), timeout=timeout):
                report.acknowledged = int(ack.acked_through)
                report.added += ack.added
                report.replaced += ack.replaced
                report.rejected.extend((r.url, r.reason) for r in ack.rejected)
        except grpc.RpcError as exc:
            raise _error("engine index", exc) from exc
        if not sent.is_set() or report.acknowledged < last_seq:
            raise ServiceError(
                f"engine acknowledged {report.acknowledged} of {last_seq} documents", "DATA_LOSS"
            )
        return report


@dataclass(frozen=True)
class RobotState:
    state: str
    pages_fetched: int
    pages_indexed: int
    frontier_size: int
    errors: dict[str, int]
    harvest_rate: float


class RobotClient:
    def __init__(self, address: str) -> None:
        self._channel = open_channel(address)
        self._stub = robot_pb2_grpc.RobotStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def status(self, timeout: float = 2.0) -> RobotState:
        try:
            r = self._stub.Status(robot_pb2.StatusRequest(), timeout=timeout)
        except grpc.RpcError as exc:
            raise _error("robot status", exc) from exc
        return RobotState(
            r.state, r.pages_fetched, r.pages_indexed, r.frontier_size, dict(r.errors), r.harvest_rate
        )


def documents_by_engine(addresses: Sequence[tuple[str, str]]) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for name, address in addresses:
        client = EngineClient(address)
        try:
            out[name] = client.document_count()
        except ServiceError:
            out[name] = None
        finally:
            client.close()
    return out
