"""The engine registry: engines register with a topic summary and keep a lease alive by heartbeat.

Pure domain code: no gRPC. The clock is injected (seconds, monotonic), so lease expiry is testable without
sleeping. A directory restart loses every lease; engines learn that from ``heartbeat`` returning ``False``
and register again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

MAX_NAME_CHARS = 200


class InvalidEngine(ValueError):
    """A registration or heartbeat that cannot be accepted (bad name, address or summary)."""


@dataclass(frozen=True, kw_only=True)
class TermStats:
    df: int  # documents of the engine containing the term
    cf: int  # occurrences of the term in the engine's collection

    def __post_init__(self) -> None:
        if self.df < 0 or self.cf < 0:
            raise InvalidEngine(f"term statistics must be non-negative, got df={self.df} cf={self.cf}")


@dataclass(frozen=True, kw_only=True)
class Summary:
    """What an engine tells the directory about its collection (CORI statistics)."""

    topic: str = ""
    documents: int = 0
    total_terms: int = 0  # cw in CORI: the collection's length in tokens
    terms: Mapping[str, TermStats] = field(default_factory=dict)
    keywords: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.documents < 0 or self.total_terms < 0:
            raise InvalidEngine(
                f"documents and total_terms must be non-negative, got {self.documents}, {self.total_terms}"
            )


@dataclass(frozen=True, kw_only=True)
class EngineRecord:
    name: str
    address: str
    summary: Summary
    expires_at: float


def check_address(address: str) -> str:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise InvalidEngine(f"address must be host:port, got {address[:200]!r}")
    return address


def check_name(name: str) -> str:
    if not name or not name.strip():
        raise InvalidEngine("empty engine name")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidEngine(f"engine name longer than {MAX_NAME_CHARS} characters")
    return name


class Registry:
    """Live engines, each with a lease that a heartbeat renews. Thread-safe."""

    def __init__(self, *, lease_seconds: float, clock: Clock) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be > 0, got {lease_seconds}")
        self.lease_seconds = lease_seconds
        self._clock = clock
        self._engines: dict[str, EngineRecord] = {}
        self._lock = threading.Lock()

    def register(self, *, name: str, address: str, summary: Summary) -> float:
        """Add or replace an engine; return the lease length in seconds."""
        record = EngineRecord(
            name=check_name(name),
            address=check_address(address),
            summary=summary,
            expires_at=self._clock() + self.lease_seconds,
        )
        with self._lock:
            previous = self._engines.get(name)
            self._engines[name] = record
        if previous is None:
            logger.info("engine %s registered at %s (%d documents)", name, address, summary.documents)
        return self.lease_seconds

    def heartbeat(self, *, name: str, summary: Summary | None = None) -> bool:
        """Renew the lease. ``False`` means the engine is unknown (expired, or the directory restarted)."""
        now = self._clock()
        with self._lock:
            self._expire(now)
            record = self._engines.get(name)
            if record is None:
                return False
            self._engines[name] = replace(
                record, expires_at=now + self.lease_seconds, summary=summary if summary else record.summary
            )
            return True

    def deregister(self, name: str) -> bool:
        with self._lock:
            removed = self._engines.pop(name, None) is not None
        if removed:
            logger.info("engine %s deregistered", name)
        return removed

    def live(self) -> list[EngineRecord]:
        """Engines whose lease has not expired, by name."""
        with self._lock:
            self._expire(self._clock())
            return sorted(self._engines.values(), key=lambda r: r.name)

    def _expire(self, now: float) -> None:
        # an engine is live while now < expires_at; at expires_at its lease is over
        for name in [n for n, r in self._engines.items() if r.expires_at <= now]:
            del self._engines[name]
            logger.warning("engine %s dropped: lease expired", name)
