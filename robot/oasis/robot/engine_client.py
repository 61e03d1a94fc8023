"""The robot's adapter over the Engine stub: acknowledged index batches and topic relevance scores.

Every call passes ``timeout=``; ``grpc.RpcError`` becomes :class:`RobotEngineError` here and nowhere else.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import grpc

from oasis.robot.engine_port import IndexDoc, IndexResult, RobotEngineError
from oasis.runtime.service import open_channel
from oasis.v1 import engine_pb2, engine_pb2_grpc

logger = logging.getLogger(__name__)

MAX_SCORE_BATCH = 256  # pages per Score call (keeps messages far below the 8 MiB limit)
MAX_SCORE_CHARS = 20_000  # text sent per page for scoring


def _error(what: str, exc: grpc.RpcError) -> RobotEngineError:
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return RobotEngineError(f"engine {what} failed: {getattr(code, 'name', code)}: {details}")


class EngineClient:
    def __init__(self, address: str, *, timeout: float = 30.0) -> None:
        self.address = address
        self._timeout = timeout
        self._channel = open_channel(address)
        self._stub = engine_pb2_grpc.EngineStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def wait_ready(self, timeout: float) -> None:
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError as exc:
            raise RobotEngineError(f"engine at {self.address} not reachable within {timeout} s") from exc

    def topic(self) -> tuple[str, str, list[str]]:
        try:
            t = self._stub.GetTopic(engine_pb2.GetTopicRequest(), timeout=self._timeout)
        except grpc.RpcError as exc:
            raise _error("GetTopic", exc) from exc
        return t.name, t.description, list(t.keywords)

    def score(self, pages: Sequence[tuple[str, str]]) -> list[float]:
        """Topic relevance r(i) in [0, 1] of each (title, text)."""
        out: list[float] = []
        for start in range(0, len(pages), MAX_SCORE_BATCH):
            chunk = pages[start : start + MAX_SCORE_BATCH]
            request = engine_pb2.ScoreRequest(
                pages=[engine_pb2.PageText(title=t[:1000], text=x[:MAX_SCORE_CHARS]) for t, x in chunk]
            )
            try:
                reply = self._stub.Score(request, timeout=self._timeout)
            except grpc.RpcError as exc:
                raise _error("Score", exc) from exc
            if len(reply.relevance) != len(chunk):
                raise RobotEngineError(
                    f"engine Score returned {len(reply.relevance)} scores for {len(chunk)} pages"
                )
            out.extend(float(r) for r in reply.relevance)
        return out

    def index(self, docs: Sequence[IndexDoc]) -> IndexResult:
        """Send one batch over an Index stream; wait until the engine acknowledges (commits) all of it."""
        if not docs:
            return IndexResult(0, 0, 0, 0, ())
        last = len(docs)

        def requests() -> Iterator[engine_pb2.IndexRequest]:
            for seq, doc in enumerate(docs, start=1):
                req = engine_pb2.IndexRequest(seq=seq, flush=seq == last)
                if doc.delete:
                    req.delete_url = doc.url
                else:
                    req.upsert.CopyFrom(
                        engine_pb2.Document(
                            url=doc.url,
                            title=doc.title,
                            text=doc.text,
                            fetch_time=doc.fetch_time,
                            has_relevance=doc.relevance is not None,
                            relevance=doc.relevance or 0.0,
                        )
                    )
                yield req

        added = replaced = deleted = 0
        rejected: list[tuple[str, str]] = []
        acked = 0
        try:
            for ack in self._stub.Index(requests(), timeout=self._timeout):
                added += ack.added
                replaced += ack.replaced
                deleted += ack.deleted
                rejected.extend((r.url, r.reason) for r in ack.rejected)
                acked = max(acked, int(ack.acked_through))
        except grpc.RpcError as exc:
            raise _error("Index", exc) from exc
        if acked < last:
            raise RobotEngineError(f"engine acknowledged {acked} of {last} index operations")
        return IndexResult(acked, added, replaced, deleted, tuple(rejected))
