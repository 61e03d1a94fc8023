"""The engine registry: engines register with a topic summary and keep a lease alive by heartbeat.

Pure domain code: no gRPC. The clock is injected (seconds, monotonic), so lease expiry is testable without
sleeping. A directory restart loses every lease; engines learn that from ``heartbeat`` returning ``False``
and register again.

Ownership (issue 15, item 1): a registration carries an owner token the engine chose. A live name stays
bound to its owner until its lease ends: a Register with another token (whatever the address) is refused,
and Heartbeat / Deregister must present the token. At most ``max_engines`` engines are live at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from oasis.runtime.bloom import BloomFilter
from oasis.runtime.text import distinct_terms

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

MAX_NAME_CHARS = 200


class InvalidEngine(ValueError):
    """A registration or heartbeat that cannot be accepted (bad name, address or summary)."""


class EngineOwned(PermissionError):
    """The name is held by another live registrant (a different owner token)."""


class TooManyEngines(RuntimeError):
    """The directory holds its limit of live engines."""


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
    term_filter: BloomFilter | None = None  # membership of the engine's whole vocabulary
    vocabulary: int = 0  # distinct terms of the engine (0: not said)
    # the listed terms and the analysed keywords, computed once (Route reads it for every engine)
    known_terms: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.documents < 0 or self.total_terms < 0 or self.vocabulary < 0:
            raise InvalidEngine(
                f"documents, total_terms and vocabulary must be non-negative, got {self.documents},"
                f" {self.total_terms}, {self.vocabulary}"
            )
        keyword_terms = {t for kw in self.keywords for t in distinct_terms(kw)}
        object.__setattr__(self, "known_terms", frozenset(self.terms) | keyword_terms)

    def may_hold(self, term: str) -> bool:
        """False only when the engine cannot hold ``term``: not listed, not a keyword, not in its filter,
        and (without a filter) its summary lists its whole vocabulary."""
        if term in self.known_terms:
            return True
        if self.term_filter is not None:
            return term in self.term_filter
        return self.vocabulary > len(self.terms)


@dataclass(frozen=True, kw_only=True)
class EngineRecord:
    name: str
    address: str
    summary: Summary
    expires_at: float
    owner: str = ""


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

    def __init__(self, *, lease_seconds: float, clock: Clock, max_engines: int = 128) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be > 0, got {lease_seconds}")
        if max_engines < 1:
            raise ValueError(f"max_engines must be >= 1, got {max_engines}")
        self.lease_seconds = lease_seconds
        self.max_engines = max_engines
        self._clock = clock
        self._engines: dict[str, EngineRecord] = {}
        self._lock = threading.Lock()

    def register(self, *, name: str, address: str, summary: Summary, owner: str = "") -> float:
        """Add an engine, or replace its own registration; return the lease length in seconds.

        Raises :class:`EngineOwned` when another owner holds the live name, :class:`TooManyEngines` at the
        limit of live engines."""
        now = self._clock()
        record = EngineRecord(
            name=check_name(name),
            address=check_address(address),
            summary=summary,
            expires_at=now + self.lease_seconds,
            owner=owner,
        )
        with self._lock:
            self._expire(now)
            previous = self._engines.get(name)
            if previous is not None and previous.owner != owner:
                raise EngineOwned(
                    f"engine name {name!r} is held by a live engine at {previous.address} (its lease ends"
                    f" in {previous.expires_at - now:.1f} s unless renewed by its owner)"
                )
            if previous is None and len(self._engines) >= self.max_engines:
                raise TooManyEngines(f"the directory holds its limit of {self.max_engines} live engines")
            self._engines[name] = record
        if previous is None:
            logger.info("engine %s registered at %s (%d documents)", name, address, summary.documents)
        return self.lease_seconds

    def heartbeat(self, *, name: str, summary: Summary | None = None, owner: str = "") -> bool:
        """Renew the lease. ``False`` means the engine is unknown (expired, or the directory restarted).
        Raises :class:`EngineOwned` when the live name has another owner."""
        now = self._clock()
        with self._lock:
            self._expire(now)
            record = self._engines.get(name)
            if record is None:
                return False
            if record.owner != owner:
                raise EngineOwned(f"engine name {name!r} is registered by another owner")
            self._engines[name] = replace(
                record, expires_at=now + self.lease_seconds, summary=summary if summary else record.summary
            )
            return True

    def deregister(self, name: str, owner: str = "") -> bool:
        """Remove the engine; raises :class:`EngineOwned` when it has another owner."""
        with self._lock:
            record = self._engines.get(name)
            if record is not None and record.owner != owner:
                raise EngineOwned(f"engine name {name!r} is registered by another owner")
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
