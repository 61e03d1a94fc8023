"""The broker's seams: what it needs from the directory and from engines, and their domain errors.

The gRPC adapters in :mod:`oasis.broker.clients` implement these protocols; the fan-out in
:mod:`oasis.broker.service` depends only on them.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol

from oasis.runtime.engine_types import EngineReply
from oasis.runtime.errors import ServiceError

__all__ = [
    "DirectoryClient",
    "DirectoryUnavailable",
    "EngineCallError",
    "EngineClient",
    "EngineReply",
    "InvalidRequest",
    "Overloaded",
    "RouteResult",
    "RoutedEngine",
]


class DirectoryUnavailable(ServiceError):
    """The directory could not be reached (or did not answer in time)."""


class EngineCallError(ServiceError):
    """An engine call failed. ``timeout`` tells a deadline expiry from any other failure."""

    @property
    def timeout(self) -> bool:
        return self.code == "DEADLINE_EXCEEDED"


class InvalidRequest(ValueError):
    """A query the broker refuses (empty, too long, bad k or deadline)."""


class Overloaded(Exception):
    """The broker is at its bound of concurrent queries."""


@dataclass(frozen=True, kw_only=True)
class RoutedEngine:
    name: str
    address: str
    score: float


@dataclass(frozen=True, kw_only=True)
class RouteResult:
    engines: tuple[RoutedEngine, ...]
    omitted: tuple[str, ...] = ()  # may hold matches but ranked beyond max_engines: not asked
    # sharing no query term: not asked (but asked for a "did you mean" when nothing matched)
    skipped_engines: tuple[RoutedEngine, ...] = ()

    @property
    def skipped(self) -> tuple[str, ...]:
        """The names of the skipped engines."""
        return tuple(e.name for e in self.skipped_engines)


class DirectoryClient(Protocol):
    def route(self, query: str, k: int, timeout: float) -> RouteResult:
        """Raise :class:`DirectoryUnavailable` when the directory cannot answer."""
        ...


class EngineClient(Protocol):
    def start_search(
        self, address: str, query: str, limit: int, timeout: float, suggest: bool = False
    ) -> Future[EngineReply]:
        """Start a search without blocking; the future fails with :class:`EngineCallError`. ``suggest``:
        with the correction of the words the engine lacks, even beside hits."""
        ...

    def search(self, address: str, query: str, limit: int, timeout: float) -> EngineReply:
        """Search on the calling thread; raise :class:`EngineCallError` (``timeout``: the time left)."""
        ...
