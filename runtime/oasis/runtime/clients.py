"""The client adapters of the Oasis services: the broker (search), the engine (index, score, search, stats),
the robot (status) and the directory (list engines). Every call passes ``timeout=``; a ``grpc.RpcError``
becomes a :class:`~oasis.runtime.errors.ServiceError` at the one boundary of
:class:`~oasis.runtime.rpc.GrpcClient`.

:class:`EngineClient` is the one engine client: the CLI and the cluster commands index and count with it,
the robot indexes acknowledged batches and scores pages with it (behind its ``EngineLike`` port), and the
broker fans searches out with its :meth:`EngineClient.start_search` futures (behind its ``EngineClient``
port).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import grpc

from oasis.runtime.engine_types import EngineDocument, EngineHit, EngineReply, IndexDocument, IndexReport
from oasis.runtime.errors import ServiceError
from oasis.runtime.rpc import GrpcClient
from oasis.v1 import (
    broker_pb2,
    broker_pb2_grpc,
    directory_pb2,
    directory_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
    robot_pb2,
    robot_pb2_grpc,
)

logger = logging.getLogger(__name__)

__all__ = [
    "BrokerClient",
    "DirectoryClient",
    "EngineClient",
    "IndexDocument",
    "IndexReport",
    "RobotClient",
    "RobotState",
    "SearchHit",
    "SearchResult",
    "ServiceError",
    "documents_by_engine",
]

STATE_NAMES = {
    broker_pb2.ENGINE_STATE_OK: "ok",
    broker_pb2.ENGINE_STATE_TIMEOUT: "timeout",
    broker_pb2.ENGINE_STATE_ERROR: "error",
    broker_pb2.ENGINE_STATE_SKIPPED: "skipped",
    broker_pb2.ENGINE_STATE_SUSPENDED: "suspended",
}

MAX_SCORE_BATCH = 256  # pages per Score call (keeps messages far below the 8 MiB limit)
MAX_SCORE_CHARS = 20_000  # text sent per page for scoring
MAX_SCORE_TITLE_CHARS = 1000
# `oasis index` and the load benchmark stream whole corpora: a flush every this many documents, and a long
# deadline for the whole stream
BULK_FLUSH_EVERY = 200
BULK_INDEX_TIMEOUT = 600.0


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
    engine_hits: dict[str, int] = field(default_factory=dict)  # engine -> hits it returned
    engine_latency_ms: dict[str, float] = field(default_factory=dict)  # engine -> time to its answer
    engine_matches: dict[str, int] = field(default_factory=dict)  # engine -> every document it matched
    suggestion: str = ""  # a word no engine holds: a corrected query ("did you mean"), or ""

    @property
    def matches(self) -> int:
        """About how many pages match: the engines' matches summed (a page two topics hold counts twice),
        never fewer than the hits returned."""
        return max(len(self.hits), sum(self.engine_matches.values()))


class BrokerClient(GrpcClient):
    kind = "broker"

    def __init__(self, address: str) -> None:
        super().__init__(address, timeout=2.0)
        self._stub = broker_pb2_grpc.BrokerStub(self._channel)

    def search(self, query: str, k: int = 10, deadline_ms: int = 1000) -> SearchResult:
        request = broker_pb2.BrokerSearchRequest(query=query, k=k, deadline_ms=deadline_ms)
        reply = self._call("Search", self._stub.Search, request, timeout=deadline_ms / 1000.0 + 1.0)
        return SearchResult(
            hits=[SearchHit(h.url, h.title, h.snippet, h.score, h.engine) for h in reply.hits],
            engines={e.name: STATE_NAMES.get(e.state, "error") for e in reply.engines},
            partial=reply.partial,
            took_ms=reply.took_ms,
            messages={e.name: e.message for e in reply.engines if e.message},
            engine_hits={e.name: e.hits for e in reply.engines},
            engine_latency_ms={e.name: e.latency_ms for e in reply.engines},
            engine_matches={e.name: e.matches for e in reply.engines},
            suggestion=reply.suggestion,
        )


class EngineClient(GrpcClient):
    """The one client of an engine. ``timeout`` is the default deadline of every call; ``error`` the
    :class:`ServiceError` subclass its failures raise (the robot's and the broker's ports name their own)."""

    kind = "engine"

    def __init__(
        self, address: str, *, timeout: float = 30.0, error: type[ServiceError] = ServiceError
    ) -> None:
        super().__init__(address, timeout=timeout, error=error)
        self._stub = engine_pb2_grpc.EngineStub(self._channel)

    def wait_ready(self, timeout: float) -> None:
        """Block until the channel is connected; the client's error (UNAVAILABLE) after ``timeout``."""
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError as exc:
            raise self._fail("connect", f"not reachable within {timeout} s", "UNAVAILABLE") from exc

    def document_count(self, timeout: float = 2.0) -> int:
        return int(
            self._call("Stats", self._stub.Stats, engine_pb2.StatsRequest(), timeout=timeout).documents
        )

    def export(self, limit: int = 0, timeout: float = 3600.0) -> Iterator[IndexDocument]:
        """Every stored document of the engine (a snapshot taken at the call), streamed; at most ``limit``
        (0: all). ``timeout`` bounds the whole stream."""
        stream = self._stub.Export(engine_pb2.ExportRequest(limit=limit), timeout=timeout)
        try:
            with self._boundary("Export"):
                for d in stream:
                    yield IndexDocument(
                        url=d.url, title=d.title, text=d.text, fetch_time=d.fetch_time, relevance=d.relevance
                    )
        finally:
            stream.cancel()  # no-op once the stream has ended; frees it when the caller stops early
    def list_documents(self, *, page: int = 1000, timeout: float = 10.0) -> list[EngineDocument]:
        """Every document the engine holds (URL, title, fetch time, relevance), in pages of ``page``."""
        out: list[EngineDocument] = []
        after = ""
        while True:
            request = engine_pb2.ListDocumentsRequest(after=after, limit=page)
            reply = self._call("ListDocuments", self._stub.ListDocuments, request, timeout=timeout)
            out.extend(
                EngineDocument(url=d.url, title=d.title, fetch_time=d.fetch_time, relevance=d.relevance)
                for d in reply.documents
            )
            if not reply.more or not reply.documents:
                return out
            after = reply.documents[-1].url

    def topic(self) -> tuple[str, str, list[str]]:
        t = self._call("GetTopic", self._stub.GetTopic, engine_pb2.GetTopicRequest())
        return t.name, t.description, list(t.keywords)

    def score(self, pages: Sequence[tuple[str, str]]) -> list[float]:
        """Topic relevance r(i) in [0, 1] of each (title, text), in calls of at most MAX_SCORE_BATCH pages."""
        return self._score(pages)[0]

    def score_with_model(self, pages: Sequence[tuple[str, str]]) -> tuple[list[float], str]:
        """:meth:`score`, and the build of the engine's relevance model that scored them all: the same build
        gives the same score for the same text, so a cache of scores holds while it is the engine's. Pages
        over several calls are scored again (up to three times) until one build scored them all; "" if none
        did (or the engine does not name its builds): a cache must not be kept then."""
        for _ in range(3):
            scores, models = self._score(pages)
            if len(models) <= 1:
                return scores, models.pop() if models else ""
        return scores, ""

    def _score(self, pages: Sequence[tuple[str, str]]) -> tuple[list[float], set[str]]:
        out: list[float] = []
        models: set[str] = set()
        for start in range(0, len(pages), MAX_SCORE_BATCH):
            chunk = pages[start : start + MAX_SCORE_BATCH]
            request = engine_pb2.ScoreRequest(
                pages=[
                    engine_pb2.PageText(title=t[:MAX_SCORE_TITLE_CHARS], text=x[:MAX_SCORE_CHARS])
                    for t, x in chunk
                ]
            )
            reply = self._call("Score", self._stub.Score, request)
            if len(reply.relevance) != len(chunk):
                raise self._fail(
                    "Score", f"returned {len(reply.relevance)} scores for {len(chunk)} pages", "INTERNAL"
                )
            out.extend(float(r) for r in reply.relevance)
            models.add(reply.model)
        return out, models

    def index(
        self,
        docs: Iterable[IndexDocument],
        *,
        flush_every: int | None = None,
        timeout: float | None = None,
    ) -> IndexReport:
        """Stream ``docs`` over one Index call and return once the engine has acknowledged (committed) every
        one; the client's error (``DATA_LOSS``) if the stream ends with fewer acknowledged.

        The last operation always asks for a flush; ``flush_every`` asks for one every that many operations
        too (None: only at the end; the engine also commits whenever its own batch is full). The robot sends
        each batch in one call with the defaults; ``oasis index`` streams a corpus with
        ``flush_every=BULK_FLUSH_EVERY, timeout=BULK_INDEX_TIMEOUT``.
        """
        if flush_every is not None and flush_every < 1:
            raise ValueError(f"flush_every must be >= 1, got {flush_every}")
        items = iter(docs)
        first = next(items, None)
        if first is None:
            return IndexReport(0, 0, 0, 0, ())
        sent = 0

        def requests() -> Iterator[engine_pb2.IndexRequest]:
            nonlocal sent
            doc: IndexDocument | None = first
            seq = 0
            while doc is not None:
                seq += 1
                following = next(items, None)
                flush = following is None or (flush_every is not None and seq % flush_every == 0)
                yield index_request(seq, doc, flush)
                sent = seq
                doc = following

        added = replaced = deleted = acked = 0
        rejected: list[tuple[str, str]] = []
        with self._boundary("Index"):
            call = self._stub.Index(requests(), timeout=self._timeout if timeout is None else timeout)
            for ack in call:
                added += ack.added
                replaced += ack.replaced
                deleted += ack.deleted
                rejected.extend((r.url, r.reason) for r in ack.rejected)
                acked = max(acked, int(ack.acked_through))
        if acked < sent or sent == 0:
            raise self._fail("Index", f"acknowledged {acked} of {sent} operations", "DATA_LOSS")
        return IndexReport(acked, added, replaced, deleted, tuple(rejected))

    def search(self, query: str, limit: int, timeout: float, suggest: bool = False) -> EngineReply:
        """One Search, blocking; the client's error (``DEADLINE_EXCEEDED`` when ``timeout`` runs out, or no
        time was left to start). ``suggest``: the correction of the words the engine lacks, even beside
        hits."""
        if timeout <= 0:
            raise self._fail("Search", "no time left before the deadline", "DEADLINE_EXCEEDED")
        request = engine_pb2.SearchRequest(query=query, limit=limit, suggest=suggest)
        try:
            reply = self._call("Search", self._stub.Search, request, timeout=timeout)
        except ValueError as exc:  # e.g. a closed channel
            raise self._fail("Search", str(exc), "UNAVAILABLE") from exc
        return reply_from_proto(reply)

    def start_search(
        self, query: str, limit: int, timeout: float, suggest: bool = False
    ) -> Future[EngineReply]:
        """Start :meth:`search` without blocking; the future fails with the client's error.

        The call runs on a thread of a pool shared by every client (:data:`FANOUT`): a blocking call there
        costs less than gRPC's own ``future``, which starts a polling thread per channel whenever the
        channel goes from idle to busy (every query of the broker's fan-out: 14 % of the broker's CPU,
        profiled with py-spy, issue 14)."""
        return FANOUT.submit(self.search, query, limit, timeout, suggest)


# the pool that runs :meth:`EngineClient.start_search`; threads start on demand and are reused
FANOUT = ThreadPoolExecutor(max_workers=128, thread_name_prefix="engine-search")


def index_request(seq: int, doc: IndexDocument, flush: bool) -> engine_pb2.IndexRequest:
    request = engine_pb2.IndexRequest(seq=seq, flush=flush)
    if doc.delete:
        request.delete_url = doc.url
    else:
        request.upsert.CopyFrom(
            engine_pb2.Document(
                url=doc.url,
                title=doc.title,
                text=doc.text,
                fetch_time=doc.fetch_time,
                has_relevance=doc.relevance is not None,
                relevance=doc.relevance or 0.0,
            )
        )
    return request


def reply_from_proto(reply: engine_pb2.SearchReply) -> EngineReply:
    return EngineReply(
        hits=tuple(EngineHit(url=h.url, title=h.title, snippet=h.snippet, score=h.score) for h in reply.hits),
        max_score=reply.max_score,
        total=reply.total,
        suggestion=reply.suggestion,
        suggestion_matches=reply.suggestion_matches,
        unknown=tuple(reply.unknown),
    )


@dataclass(frozen=True)
class RobotState:
    state: str
    pages_fetched: int
    pages_indexed: int
    frontier_size: int
    errors: dict[str, int]
    harvest_rate: float
    recall_estimate: float = 0.0
    recrawls: int = 0
    changes_seen: int = 0
    not_modified: int = 0
    pages_per_second: float = 0.0
    freshness_estimate: float = 0.0
    budget_per_second: float = 0.0
    links_skipped: dict[str, int] = field(default_factory=dict)  # links not followed, by why


class RobotClient(GrpcClient):
    kind = "robot"

    def __init__(self, address: str) -> None:
        super().__init__(address, timeout=2.0)
        self._stub = robot_pb2_grpc.RobotStub(self._channel)

    def status(self, timeout: float = 2.0) -> RobotState:
        r = self._call("Status", self._stub.Status, robot_pb2.StatusRequest(), timeout=timeout)
        return RobotState(
            r.state,
            r.pages_fetched,
            r.pages_indexed,
            r.frontier_size,
            dict(r.errors),
            r.harvest_rate,
            recall_estimate=r.recall_estimate,
            recrawls=r.recrawls,
            changes_seen=r.changes_seen,
            not_modified=r.not_modified,
            pages_per_second=r.pages_per_second,
            freshness_estimate=r.freshness_estimate,
            budget_per_second=r.budget_per_second,
            links_skipped=dict(r.links_skipped),
        )


class DirectoryClient(GrpcClient):
    """The directory's registry as its readers see it (the gateway's status page); the broker's routing
    client is its own port (:mod:`oasis.broker.clients`)."""

    kind = "directory"

    def __init__(self, address: str, *, timeout: float = 2.0) -> None:
        super().__init__(address, timeout=timeout)
        self._stub = directory_pb2_grpc.DirectoryStub(self._channel)

    def list_engines(self, timeout: float | None = None) -> list[tuple[str, str]]:
        """(name, address) of every engine holding a lease, in name order."""
        reply = self._call("ListEngines", self._stub.ListEngines, directory_pb2.ListEnginesRequest(), timeout)
        return sorted((e.name, e.address) for e in reply.engines)


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
