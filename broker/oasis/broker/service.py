"""The broker's query path: route, fan out under one deadline, merge, report a status per engine.

Pure of gRPC: the directory and the engines are reached through the protocols of :mod:`oasis.broker.ports`.

* Routing asks the directory and caches the route for ``route_cache_seconds``. The last good route of every
  query is kept; when the directory is unreachable the broker falls back to it (``stale``), or, for a query it
  has never routed, to every engine it has ever been routed to (``fallback``). Either is shown in each
  engine's status message.
* One absolute deadline is computed per query; every engine call gets the time left as its timeout, and the
  broker stops waiting at the deadline and returns what has arrived (stragglers are marked ``timeout``); the
  deadline keeps a reply margin (10% of the query's time, 5-50 ms) for the merge and the reply.
* Engines failing repeatedly are suspended with capped exponential back-off (:mod:`oasis.broker.suspension`).
* At most ``max_concurrent_queries`` queries run at once; beyond that :class:`Overloaded` is raised at once.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from typing import Literal

from oasis.broker.merge import NORMALISATIONS, EngineResult, MergedHit, Normalisation, merge
from oasis.broker.ports import (
    DirectoryClient,
    DirectoryUnavailable,
    EngineCallError,
    EngineClient,
    EngineReply,
    InvalidRequest,
    Overloaded,
    RoutedEngine,
    RouteResult,
)
from oasis.broker.suspension import BackoffPolicy, Suspensions

logger = logging.getLogger(__name__)

Clock = Callable[[], float]
State = Literal["ok", "timeout", "error", "skipped", "suspended"]
RouteSource = Literal["directory", "cache", "stale", "fallback"]

MAX_QUERY_CHARS = 2048
MAX_K = 1000
MAX_DEADLINE_MS = 60_000
# the reply margin: of the query's time (the earlier of deadline_ms and the caller's gRPC deadline) the broker
# keeps this share, at least REPLY_MARGIN_SECONDS and at most REPLY_MARGIN_MAX, to merge and send the reply
# (a loaded host delays it)
REPLY_MARGIN_SECONDS = 0.005
REPLY_MARGIN_FRACTION = 0.1
REPLY_MARGIN_MAX = 0.05


@dataclass(frozen=True, kw_only=True)
class BrokerConfig:
    route_cache_seconds: float = 2.0
    default_deadline_ms: int = 1000
    default_k: int = 10
    max_concurrent_queries: int = 64
    route_budget_fraction: float = 0.5  # share of the time left that the directory call may use
    route_cache_entries: int = 10_000
    normalisation: Normalisation = "global"  # measured best vs a central index (docs/directory-broker.md)
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)

    def __post_init__(self) -> None:
        if self.route_cache_seconds < 0:
            raise ValueError(f"route_cache_seconds must be >= 0, got {self.route_cache_seconds}")
        if not 0 < self.default_deadline_ms <= MAX_DEADLINE_MS:
            raise ValueError(
                f"default_deadline_ms must be in (0, {MAX_DEADLINE_MS}], got {self.default_deadline_ms}"
            )
        if not 0 < self.default_k <= MAX_K:
            raise ValueError(f"default_k must be in (0, {MAX_K}], got {self.default_k}")
        if self.max_concurrent_queries < 1:
            raise ValueError(f"max_concurrent_queries must be >= 1, got {self.max_concurrent_queries}")
        if not 0 < self.route_budget_fraction <= 1:
            raise ValueError(f"route_budget_fraction must be in (0, 1], got {self.route_budget_fraction}")
        if self.route_cache_entries < 1:
            raise ValueError("route_cache_entries must be >= 1")
        if self.normalisation not in NORMALISATIONS:
            raise ValueError(f"normalisation must be one of {NORMALISATIONS}, got {self.normalisation!r}")


@dataclass(frozen=True, kw_only=True)
class EngineStatus:
    name: str
    state: State
    message: str = ""
    latency_ms: float = 0.0
    hits: int = 0
    matches: int = 0  # every document the engine matched, not only the hits it returned


@dataclass(frozen=True, kw_only=True)
class SearchOutcome:
    hits: tuple[MergedHit, ...]
    engines: tuple[EngineStatus, ...]
    partial: bool  # some routed engine did not answer
    took_ms: float
    route_source: RouteSource
    # a word no engine holds (or no hit anywhere): the engines' corrected query that matches most ("did you
    # mean"), or ""
    suggestion: str = ""


def check_request(query: str, k: int, deadline_ms: int, max_engines: int) -> str:
    if not query or not query.strip():
        raise InvalidRequest("empty query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidRequest(
            f"query of {len(query)} characters is longer than the limit of {MAX_QUERY_CHARS}"
        )
    if not 0 <= k <= MAX_K:
        raise InvalidRequest(f"k must be in [0, {MAX_K}] (0 = default), got {k}")
    if not 0 <= deadline_ms <= MAX_DEADLINE_MS:
        raise InvalidRequest(
            f"deadline_ms must be in [0, {MAX_DEADLINE_MS}] (0 = default), got {deadline_ms}"
        )
    if max_engines < 0:
        raise InvalidRequest(f"max_engines must be >= 0 (0 = all matching), got {max_engines}")
    return query.strip()


class RouteCache:
    """Routes by (normalised query, max_engines): fresh for ``ttl`` seconds, kept as last good route after."""

    def __init__(self, *, ttl: float, entries: int, clock: Clock) -> None:
        self._ttl = ttl
        self._entries = entries
        self._clock = clock
        self._routes: OrderedDict[tuple[str, int], tuple[float, RouteResult]] = OrderedDict()
        self._known: dict[str, RoutedEngine] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(query: str, max_engines: int) -> tuple[str, int]:
        return (" ".join(query.lower().split()), max_engines)

    def fresh(self, key: tuple[str, int]) -> RouteResult | None:
        with self._lock:
            entry = self._routes.get(key)
        if entry is not None and self._clock() - entry[0] < self._ttl:
            return entry[1]
        return None

    def put(self, key: tuple[str, int], route: RouteResult) -> None:
        with self._lock:
            self._routes[key] = (self._clock(), route)
            self._routes.move_to_end(key)
            while len(self._routes) > self._entries:
                self._routes.popitem(last=False)
            for e in route.engines:
                self._known[e.name] = RoutedEngine(name=e.name, address=e.address, score=1.0)

    def last_good(self, key: tuple[str, int]) -> RouteResult | None:
        with self._lock:
            entry = self._routes.get(key)
        return entry[1] if entry else None

    def all_known(self) -> RouteResult | None:
        with self._lock:
            known = tuple(sorted(self._known.values(), key=lambda e: e.name))
        return RouteResult(engines=known) if known else None


class Broker:
    def __init__(
        self,
        config: BrokerConfig,
        *,
        directory: DirectoryClient,
        engines: EngineClient,
        clock: Clock,
    ) -> None:
        self.config = config
        self._directory = directory
        self._engines = engines
        self._clock = clock
        self._routes = RouteCache(
            ttl=config.route_cache_seconds, entries=config.route_cache_entries, clock=clock
        )
        self.suspensions = Suspensions(config.backoff, clock)
        self._slots = threading.BoundedSemaphore(config.max_concurrent_queries)

    def search(
        self,
        query: str,
        *,
        k: int = 0,
        deadline_ms: int = 0,
        max_engines: int = 0,
        caller_remaining: float | None = None,
    ) -> SearchOutcome:
        """Search every routed engine under one deadline and merge.

        ``caller_remaining`` is the time left on the caller's own (gRPC) deadline, if any; the query's
        deadline is the earlier of it and ``deadline_ms``, and the broker stops waiting for engines a reply
        margin before it (10% of it, 5-50 ms), so that the merged reply reaches the caller by the deadline
        on a loaded host too.
        """
        start = self._clock()
        query = check_request(query, k, deadline_ms, max_engines)
        limit = (deadline_ms or self.config.default_deadline_ms) / 1000.0
        if caller_remaining is not None:
            limit = min(limit, caller_remaining)
        margin = min(max(REPLY_MARGIN_SECONDS, REPLY_MARGIN_FRACTION * limit), REPLY_MARGIN_MAX)
        deadline = start + max(limit - margin, 0.0)
        if not self._slots.acquire(blocking=False):
            raise Overloaded(
                f"broker is at its limit of {self.config.max_concurrent_queries} concurrent queries"
            )
        try:
            return self._search(query, k or self.config.default_k, max_engines, start, deadline)
        finally:
            self._slots.release()

    def _route(self, query: str, max_engines: int, deadline: float) -> tuple[RouteResult, RouteSource]:
        key = RouteCache.key(query, max_engines)
        cached = self._routes.fresh(key)
        if cached is not None:
            return cached, "cache"
        timeout = (deadline - self._clock()) * self.config.route_budget_fraction
        try:
            if timeout <= 0:
                raise DirectoryUnavailable("no time left to ask the directory")
            route = self._directory.route(query, max_engines, timeout)
        except DirectoryUnavailable as exc:
            stale = self._routes.last_good(key)
            if stale is not None:
                logger.warning("directory unavailable (%s); using the last good route", exc)
                return stale, "stale"
            known = self._routes.all_known()
            if known is not None:
                logger.warning("directory unavailable (%s); querying every known engine", exc)
                return known, "fallback"
            raise
        self._routes.put(key, route)
        return route, "directory"

    def _probe(self, engine: RoutedEngine, query: str, k: int) -> None:
        """Search a suspended engine in the background (nobody waits): an answer ends its suspension."""

        def done(future: Future[EngineReply]) -> None:
            if future.exception() is None:
                self.suspensions.record_success(engine.name)

        timeout = self.config.backoff.probe_seconds * 2
        self._engines.start_search(engine.address, query, k, timeout).add_done_callback(done)

    def _search_here(self, engine: RoutedEngine, query: str, k: int, deadline: float) -> Future[EngineReply]:
        """Search ``engine`` on the calling thread (blocking until its reply or the deadline); the outcome as
        a finished future, like the fan-out's."""
        future: Future[EngineReply] = Future()
        try:
            future.set_result(self._engines.search(engine.address, query, k, deadline - self._clock()))
        except Exception as exc:  # kept in the future, as the pool's calls keep theirs
            future.set_exception(exc)
        return future

    def _suggestions(self, engines: list[RoutedEngine], query: str, deadline: float) -> dict[str, Suggestion]:
        """Each of ``engines``' correction of the query's words it lacks, asked for in parallel (a second
        search, with ``suggest``) and waited for until ``deadline``: a reply too late, or a failure, offers
        none and leaves the results as they are."""
        futures = {
            e.name: self._engines.start_search(e.address, query, 1, deadline - self._clock(), suggest=True)
            for e in engines
        }
        wait(futures.values(), timeout=max(0.0, deadline - self._clock()))
        out: dict[str, Suggestion] = {}
        for name, future in futures.items():
            if future.done() and future.exception() is None and future.result().suggestion:
                out[name] = _offered(future.result())
        return out

    def _stamp(self, finished: dict[str, float], name: str) -> Callable[[Future[EngineReply]], None]:
        def stamp(_future: Future[EngineReply]) -> None:
            finished[name] = self._clock()

        return stamp

    def _search(self, query: str, k: int, max_engines: int, start: float, deadline: float) -> SearchOutcome:
        route, source = self._route(query, max_engines, deadline)
        note = {
            "directory": "",
            "cache": "",
            "stale": "route: last good (directory unreachable)",
            "fallback": "route: all known engines (directory unreachable)",
        }[source]
        statuses: dict[str, EngineStatus] = {}
        calls: dict[str, tuple[RoutedEngine, Future[EngineReply]]] = {}
        finished: dict[str, float] = {}
        asked: list[RoutedEngine] = []
        for engine in route.engines:
            left = self.suspensions.suspended_for(engine.name)
            if left > 0:
                if self.suspensions.probe_due(engine.name):
                    self._probe(engine, query, k)
                statuses[engine.name] = EngineStatus(
                    name=engine.name,
                    state="suspended",
                    message=_join(f"suspended for {left:.1f} s more", note),
                )
                continue
            asked.append(engine)
        # every engine but the last is searched on the fan-out pool; the last on this thread, which would
        # otherwise only wait (one thread hand-off and one pool future less per query: issue 14)
        for engine in asked[:-1]:
            future = self._engines.start_search(engine.address, query, k, deadline - self._clock())
            future.add_done_callback(self._stamp(finished, engine.name))
            calls[engine.name] = (engine, future)
        if asked:
            last = asked[-1]
            calls[last.name] = (last, self._search_here(last, query, k, deadline))
            finished[last.name] = self._clock()
        wait([f for _, f in calls.values()], timeout=max(0.0, deadline - self._clock()))
        results: list[EngineResult] = []
        refused: list[str] = []
        suggestions: dict[str, Suggestion] = {}
        unknowns: dict[str, frozenset[str]] = {}  # an engine that answered -> the query's words it lacks
        for name, (engine, future) in calls.items():
            latency_ms = (finished.get(name, self._clock()) - start) * 1000.0
            if not future.done():
                self.suspensions.record_failure(name, started=start)
                statuses[name] = EngineStatus(
                    name=name,
                    state="timeout",
                    message=_join("no reply by the deadline", note),
                    latency_ms=latency_ms,
                )
                continue
            try:
                reply = future.result()
            except EngineCallError as exc:
                if exc.code == "INVALID_ARGUMENT":  # the query's fault, not the engine's: never counted
                    refused.append(str(exc))
                else:
                    self.suspensions.record_failure(name, started=start)
                state: State = "timeout" if exc.timeout else "error"
                statuses[name] = EngineStatus(
                    name=name, state=state, message=_join(str(exc), note), latency_ms=latency_ms
                )
                continue
            self.suspensions.record_success(name)
            unknowns[name] = frozenset(reply.unknown)
            if reply.suggestion:
                suggestions[name] = _offered(reply)
            results.append(
                EngineResult(
                    engine=name, route_score=engine.score, max_score=reply.max_score, hits=reply.hits
                )
            )
            statuses[name] = EngineStatus(
                name=name,
                state="ok",
                message=note,
                latency_ms=latency_ms,
                hits=len(reply.hits),
                matches=max(reply.total, len(reply.hits)),
            )
        for name in route.skipped:
            statuses.setdefault(
                name, EngineStatus(name=name, state="skipped", message="shares no query term")
            )
        for name in route.omitted:
            statuses.setdefault(
                name,
                EngineStatus(name=name, state="skipped", message="may hold matches; not asked (max_engines)"),
            )
        if refused and len(refused) == len(calls):
            raise InvalidRequest(f"the engines refused the query: {refused[0]}")
        hits = merge(results, k, self.config.normalisation)
        ordered = [statuses[e.name] for e in route.engines] + [
            statuses[n] for n in (*route.skipped, *route.omitted) if n in statuses
        ]
        # partial whenever an engine that might hold results was not asked or did not answer
        partial = bool(route.omitted) or any(s.state not in ("ok", "skipped") for s in ordered)
        lacking = frozenset.intersection(*unknowns.values()) if unknowns else frozenset()
        if lacking and not _suggestion(list(suggestions.values()), lacking, hits=True):
            if hits:  # beside hits an engine corrects only when asked: ask those that lack no other word
                ask = [e for e in route.engines if e.name in unknowns and unknowns[e.name] <= lacking]
            else:  # nothing matched where the query went: the misspelt word may be a skipped engine's
                ask = [e for e in route.skipped_engines if self.suspensions.suspended_for(e.name) <= 0]
            suggestions.update(self._suggestions(ask, query, deadline))
        in_order = [e.name for e in (*route.engines, *route.skipped_engines) if e.name in suggestions]
        suggestion = _suggestion([suggestions[name] for name in in_order], lacking, bool(hits))
        return SearchOutcome(
            hits=tuple(hits),
            engines=tuple(dict.fromkeys(ordered)),
            partial=partial,
            took_ms=(self._clock() - start) * 1000.0,
            route_source=source,
            suggestion=suggestion,
        )


# an engine's "did you mean": (the pages it finds there, the corrected query, the words it corrects: those
# the engine lacks)
Suggestion = tuple[int, str, frozenset[str]]


def _offered(reply: EngineReply) -> Suggestion:
    return (reply.suggestion_matches, reply.suggestion, frozenset(reply.unknown))


def _suggestion(offered: list[Suggestion], lacking: frozenset[str], hits: bool) -> str:
    """The broker's "did you mean" among the engines' suggestions, in route order: the one that finds most
    (the first on a tie) of those correcting only words no engine that answered holds (``lacking``), when it
    finds anything. A word one engine lacks may be another's ("dask" in a cluster whose scikit-learn engine
    lacks it): that engine's correction would change a word the cluster knows. With no hit anywhere, any
    engine's suggestion rather than none."""
    everywhere = [o for o in offered if o[2] <= lacking and o[0] > 0]
    if not everywhere and not hits:
        everywhere = offered
    return max(everywhere, key=lambda o: o[0])[1] if everywhere else ""


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)
