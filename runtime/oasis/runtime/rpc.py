"""The one gRPC error boundary of the client adapters.

Every client class derives from :class:`GrpcClient` and makes its calls through :meth:`GrpcClient._call`
(unary) or inside :meth:`GrpcClient._boundary` (streams, futures): there, and nowhere else, a
``grpc.RpcError`` becomes the client's :class:`~oasis.runtime.errors.ServiceError` (sub)class, with the
status code name. Every call passes ``timeout=``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from oasis.runtime.errors import ServiceError
from oasis.runtime.service import open_channel

logger = logging.getLogger(__name__)

E = TypeVar("E", bound=ServiceError)


def status_name(exc: BaseException) -> str:
    """The gRPC status code name of a failed call (``UNKNOWN`` if it carries none)."""
    code = exc.code() if isinstance(exc, grpc.Call) else None
    return code.name if isinstance(code, grpc.StatusCode) else "UNKNOWN"


def translate(what: str, exc: BaseException, error: type[E]) -> E:
    """``error("WHAT: CODE: details", CODE)`` for a failed call."""
    code = status_name(exc)
    details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
    return error(f"{what}: {code}: {details}", code)


class GrpcClient:
    """A channel to one service and the error boundary of every call made on it.

    ``kind`` names the service in error messages (``engine 127.0.0.1:5 Score: UNAVAILABLE: ...``);
    ``timeout`` is the default of every call; ``error`` is the domain error raised.
    """

    kind = "service"

    def __init__(self, address: str, *, timeout: float, error: type[ServiceError] = ServiceError) -> None:
        self.address = address
        self._timeout = timeout
        self._error = error
        self._channel = open_channel(address)

    def close(self) -> None:
        self._channel.close()

    def _what(self, method: str) -> str:
        return f"{self.kind} {self.address} {method}"

    def _fail(self, method: str, message: str, code: str) -> ServiceError:
        """A domain error for a failure the client itself detects (wrong reply, no time left)."""
        return self._error(f"{self._what(method)}: {message}", code)

    @contextmanager
    def _boundary(self, method: str) -> Iterator[None]:
        try:
            yield
        except grpc.RpcError as exc:
            raise translate(self._what(method), exc, self._error) from exc

    def _call(self, method: str, rpc: Callable[..., Any], request: Any, timeout: float | None = None) -> Any:
        with self._boundary(method):
            return rpc(request, timeout=self._timeout if timeout is None else timeout)


def health_status(address: str, timeout: float = 1.0, service: str = "") -> str:
    """``SERVING`` / ``NOT_SERVING`` / ``UNKNOWN`` from the standard health service, or ``UNREACHABLE``."""
    try:
        with open_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout
            )
    except grpc.RpcError:
        return "UNREACHABLE"
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))
