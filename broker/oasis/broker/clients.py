"""gRPC adapters for the broker: Directory and Engine stubs behind the protocols of :mod:`oasis.broker.ports`.

Engines are reached with the one engine client of :mod:`oasis.runtime.clients` (raising
:class:`~oasis.broker.ports.EngineCallError`); every call passes ``timeout=``, and ``grpc.RpcError`` becomes
a domain error at the boundary of :class:`~oasis.runtime.rpc.GrpcClient` and nowhere else.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future

from oasis.broker.ports import DirectoryUnavailable, EngineCallError, EngineReply, RoutedEngine, RouteResult
from oasis.runtime.clients import EngineClient
from oasis.runtime.rpc import GrpcClient
from oasis.v1 import directory_pb2, directory_pb2_grpc

logger = logging.getLogger(__name__)


class GrpcDirectoryClient(GrpcClient):
    kind = "directory"

    def __init__(self, address: str) -> None:
        super().__init__(address, timeout=1.0, error=DirectoryUnavailable)
        self._stub = directory_pb2_grpc.DirectoryStub(self._channel)

    def route(self, query: str, k: int, timeout: float) -> RouteResult:
        request = directory_pb2.RouteRequest(query=query, k=k)
        reply = self._call("Route", self._stub.Route, request, timeout=max(timeout, 0.001))
        return RouteResult(
            engines=tuple(RoutedEngine(name=e.name, address=e.address, score=e.score) for e in reply.engines),
            omitted=tuple(reply.omitted),
            skipped_engines=tuple(
                RoutedEngine(name=e.name, address=e.address, score=e.score) for e in reply.skipped_engines
            ),
        )


class EngineClientPool:
    """The broker's engines: one :class:`~oasis.runtime.clients.EngineClient` (one channel) per engine
    address, created on first use and reused; satisfies the ``EngineClient`` port."""

    def __init__(self) -> None:
        self._clients: dict[str, EngineClient] = {}
        self._lock = threading.Lock()

    def _client(self, address: str) -> EngineClient:
        with self._lock:
            client = self._clients.get(address)
            if client is None:
                client = self._clients[address] = EngineClient(address, error=EngineCallError)
            return client

    def start_search(
        self, address: str, query: str, limit: int, timeout: float, suggest: bool = False
    ) -> Future[EngineReply]:
        """Start a non-blocking Search with ``timeout``; the future fails with :class:`EngineCallError`."""
        return self._client(address).start_search(query, limit, timeout, suggest)

    def search(self, address: str, query: str, limit: int, timeout: float) -> EngineReply:
        """A blocking Search with ``timeout``; raises :class:`EngineCallError`."""
        return self._client(address).search(query, limit, timeout)

    def close(self) -> None:
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()
