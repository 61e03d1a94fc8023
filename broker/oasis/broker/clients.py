"""gRPC adapters for the broker: Directory and Engine stubs behind the protocols of :mod:`oasis.broker.ports`.

Every call passes ``timeout=``; ``grpc.RpcError`` becomes a domain error here and nowhere else.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future

import grpc

from oasis.broker.merge import EngineHit
from oasis.broker.ports import DirectoryUnavailable, EngineCallError, EngineReply, RoutedEngine, RouteResult
from oasis.runtime.service import open_channel
from oasis.v1 import directory_pb2, directory_pb2_grpc, engine_pb2, engine_pb2_grpc

logger = logging.getLogger(__name__)


class GrpcDirectoryClient:
    def __init__(self, address: str) -> None:
        self.address = address
        self._channel = open_channel(address)
        self._stub = directory_pb2_grpc.DirectoryStub(self._channel)

    def route(self, query: str, k: int, timeout: float) -> RouteResult:
        try:
            reply = self._stub.Route(
                directory_pb2.RouteRequest(query=query, k=k), timeout=max(timeout, 0.001)
            )
        except grpc.RpcError as exc:
            raise DirectoryUnavailable(f"directory {self.address}: {_describe(exc)}") from exc
        return RouteResult(
            engines=tuple(RoutedEngine(name=e.name, address=e.address, score=e.score) for e in reply.engines),
            skipped=tuple(reply.skipped),
        )

    def close(self) -> None:
        self._channel.close()


class GrpcEngineClient:
    """One channel per engine address, created on first use and reused."""

    def __init__(self) -> None:
        self._stubs: dict[str, engine_pb2_grpc.EngineStub] = {}
        self._channels: list[grpc.Channel] = []
        self._lock = threading.Lock()

    def _stub(self, address: str) -> engine_pb2_grpc.EngineStub:
        with self._lock:
            stub = self._stubs.get(address)
            if stub is None:
                channel = open_channel(address)
                self._channels.append(channel)
                stub = self._stubs[address] = engine_pb2_grpc.EngineStub(channel)
            return stub

    def start_search(self, address: str, query: str, limit: int, timeout: float) -> Future[EngineReply]:
        """Start a non-blocking Search with ``timeout``; the future fails with :class:`EngineCallError`."""
        out: Future[EngineReply] = Future()
        out.set_running_or_notify_cancel()
        if timeout <= 0:
            out.set_exception(EngineCallError("no time left before the deadline", timeout=True))
            return out
        request = engine_pb2.SearchRequest(query=query, limit=limit)
        try:
            call = self._stub(address).Search.future(request, timeout=timeout)
        except (grpc.RpcError, ValueError) as exc:
            out.set_exception(EngineCallError(f"engine {address}: {exc}"))
            return out

        def done(c: grpc.Future) -> None:
            try:
                reply = c.result()
            except grpc.RpcError as exc:
                code = exc.code() if isinstance(exc, grpc.Call) else None
                out.set_exception(
                    EngineCallError(
                        f"engine {address}: {_describe(exc)}",
                        timeout=code == grpc.StatusCode.DEADLINE_EXCEEDED,
                    )
                )
                return
            except grpc.FutureCancelledError:
                out.set_exception(EngineCallError(f"engine {address}: call cancelled"))
                return
            out.set_result(reply_from_proto(reply))

        call.add_done_callback(done)
        return out

    def close(self) -> None:
        with self._lock:
            for channel in self._channels:
                channel.close()
            self._channels.clear()
            self._stubs.clear()


def reply_from_proto(reply: engine_pb2.SearchReply) -> EngineReply:
    return EngineReply(
        hits=tuple(EngineHit(url=h.url, title=h.title, snippet=h.snippet, score=h.score) for h in reply.hits),
        max_score=reply.max_score,
        total=reply.total,
    )


def _describe(exc: grpc.RpcError) -> str:
    if isinstance(exc, grpc.Call):
        return f"{exc.code().name}: {exc.details()}"
    return str(exc)
