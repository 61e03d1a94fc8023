"""The Engine gRPC servicer: proto -> domain -> one TopicIndex call -> proto; errors -> status codes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import grpc

from oasis.engine.config import EngineConfig
from oasis.engine.index import (
    CommitResult,
    Hit,
    InvalidQuery,
    Op,
    Rejected,
    SearchTimeout,
    Summary,
    TopicIndex,
    make_delete,
    make_upsert,
)
from oasis.engine.metrics import record_commit
from oasis.runtime.urls import InvalidURL
from oasis.v1 import common_pb2, engine_pb2, engine_pb2_grpc

logger = logging.getLogger(__name__)

SERVICE_NAME = "oasis.v1.Engine"
TOPIC_METADATA_KEY = (
    "oasis-topic"  # optional: a caller naming the topic it expects gets NOT_FOUND on mismatch
)
MAX_SCORE_PAGES = 1_000
DEFAULT_LIMIT = 10
DEFAULT_SUMMARY_TERMS = 500
MAX_LIST_DOCUMENTS = 1000


def hit_to_proto(hit: Hit) -> engine_pb2.Hit:
    return engine_pb2.Hit(
        url=hit.url,
        title=hit.title,
        snippet=hit.snippet,
        score=hit.score,
        relevance=hit.relevance,
        fetch_time=hit.fetch_time,
    )


def summary_to_proto(summary: Summary) -> common_pb2.TopicSummary:
    return common_pb2.TopicSummary(
        topic=summary.topic,
        documents=summary.documents,
        total_terms=summary.total_terms,
        terms=[common_pb2.TermStat(term=t.term, df=t.df, cf=t.cf) for t in summary.terms],
        keywords=list(summary.keywords),
        term_filter=summary.term_filter.bits if summary.term_filter else b"",
        term_filter_hashes=summary.term_filter.hashes if summary.term_filter else 0,
        vocabulary=summary.vocabulary,
    )


def ack_to_proto(result: CommitResult, through: int | None = None) -> engine_pb2.IndexAck:
    return engine_pb2.IndexAck(
        acked_through=max(result.acked_through, through if through is not None else -1),
        added=result.added,
        replaced=result.replaced,
        deleted=result.deleted,
        rejected=[engine_pb2.RejectedOp(seq=r.seq, url=r.url, reason=r.reason) for r in result.rejected],
    )


def op_from_proto(request: engine_pb2.IndexRequest, config: EngineConfig) -> Op:
    kind = request.WhichOneof("op")
    if kind == "upsert":
        d = request.upsert
        return make_upsert(
            seq=request.seq,
            url=d.url,
            title=d.title,
            text=d.text,
            fetch_time=d.fetch_time,
            relevance=d.relevance if d.has_relevance else None,
            limits=config.limits,
            allowed_hosts=config.allowed_hosts,
        )
    if kind == "delete_url":
        return make_delete(seq=request.seq, url=request.delete_url)
    return Rejected(seq=request.seq, url="", reason="request has neither upsert nor delete_url")


class EngineServicer(engine_pb2_grpc.EngineServicer):
    def __init__(self, index: TopicIndex, config: EngineConfig) -> None:
        self._index = index
        self._config = config

    def _check_topic(self, context: grpc.ServicerContext) -> None:
        for key, value in context.invocation_metadata() or ():
            if key == TOPIC_METADATA_KEY and value != self._index.topic.name:
                context.abort(
                    grpc.StatusCode.NOT_FOUND,
                    f"engine {self._config.name!r} serves topic {self._index.topic.name!r}, not {value!r}",
                )

    def Index(
        self, request_iterator: Iterator[engine_pb2.IndexRequest], context: grpc.ServicerContext
    ) -> Iterator[engine_pb2.IndexAck]:
        """Buffer ops; commit at batch size, on flush, and at end of stream; ack after each commit."""
        self._check_topic(context)
        buffer: list[Op] = []
        last_seq = -1
        for request in request_iterator:
            if request.seq <= last_seq:
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"seq must be strictly increasing within a stream: {request.seq} after {last_seq}"
                    f" (operations through {last_seq} that were acknowledged are durable)",
                )
            last_seq = request.seq
            if request.WhichOneof("op") is not None or not request.flush:
                buffer.append(op_from_proto(request, self._config))
            if buffer and (request.flush or len(buffer) >= self._config.batch_size):
                # everything through last_seq is now committed: buffered ops, and any bare flush request
                yield ack_to_proto(self._commit(buffer, context), through=last_seq)
                buffer = []
            elif request.flush:  # a bare flush with nothing buffered: everything up to here is durable
                yield engine_pb2.IndexAck(acked_through=request.seq)
        if buffer:
            yield ack_to_proto(self._commit(buffer, context), through=last_seq)

    def _commit(self, buffer: list[Op], context: grpc.ServicerContext) -> CommitResult:
        try:
            result = self._index.apply(buffer)
        except Exception as exc:
            logger.error("commit of %d operations failed", len(buffer), exc_info=True)
            context.abort(grpc.StatusCode.INTERNAL, f"commit failed, batch not acknowledged: {exc}")
            raise  # unreachable: abort raises
        record_commit(result)
        return result

    def Delete(
        self, request: engine_pb2.DeleteRequest, context: grpc.ServicerContext
    ) -> engine_pb2.DeleteReply:
        self._check_topic(context)
        try:
            deleted = self._index.delete_urls(request.urls)
        except InvalidURL as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid URL, nothing deleted: {exc}")
        return engine_pb2.DeleteReply(deleted=deleted)

    def Search(
        self, request: engine_pb2.SearchRequest, context: grpc.ServicerContext
    ) -> engine_pb2.SearchReply:
        self._check_topic(context)
        try:
            page = self._index.search(
                request.query,
                limit=request.limit or DEFAULT_LIMIT,
                offset=request.offset,
                timeout=context.time_remaining(),
                suggest=request.suggest,
            )
        except InvalidQuery as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except SearchTimeout as exc:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(exc))
        return engine_pb2.SearchReply(
            hits=[hit_to_proto(h) for h in page.hits],
            total=page.total,
            engine=self._config.name,
            max_score=page.max_score,
            suggestion=page.suggestion,
            suggestion_matches=page.suggestion_matches,
            unknown=page.unknown,
        )

    def Score(self, request: engine_pb2.ScoreRequest, context: grpc.ServicerContext) -> engine_pb2.ScoreReply:
        self._check_topic(context)
        if len(request.pages) > MAX_SCORE_PAGES:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{len(request.pages)} pages in one Score call, limit {MAX_SCORE_PAGES}",
            )
        limit = self._config.limits.max_text_chars
        for i, p in enumerate(request.pages):
            if len(p.text) > limit:
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"page {i}: text has {len(p.text)} characters, limit {limit}",
                )
        scores, model = self._index.score_with_model((p.title, p.text) for p in request.pages)
        return engine_pb2.ScoreReply(relevance=scores, model_documents=model.n_docs, model=model.build)

    def GetTopic(
        self, request: engine_pb2.GetTopicRequest, context: grpc.ServicerContext
    ) -> engine_pb2.Topic:
        self._check_topic(context)
        t = self._index.topic
        return engine_pb2.Topic(name=t.name, description=t.description, keywords=list(t.keywords))

    def Stats(self, request: engine_pb2.StatsRequest, context: grpc.ServicerContext) -> engine_pb2.StatsReply:
        self._check_topic(context)
        s = self._index.stats()
        return engine_pb2.StatsReply(
            engine=self._config.name,
            topic=self._index.topic.name,
            documents=s.documents,
            last_commit=s.last_commit,
            index_bytes=s.index_bytes,
        )

    def Summary(
        self, request: engine_pb2.SummaryRequest, context: grpc.ServicerContext
    ) -> common_pb2.TopicSummary:
        self._check_topic(context)
        if request.max_terms < 0:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"max_terms must be >= 0, got {request.max_terms}"
            )
        max_terms = min(request.max_terms or DEFAULT_SUMMARY_TERMS, 100_000)
        return summary_to_proto(self._index.summary(max_terms))

    def Export(
        self, request: engine_pb2.ExportRequest, context: grpc.ServicerContext
    ) -> Iterator[engine_pb2.Document]:
        self._check_topic(context)
        if request.limit < 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"limit must be >= 0, got {request.limit}")
        documents = self._index.documents(limit=request.limit)
        try:
            for d in documents:
                yield document_to_proto(d)
        finally:
            documents.close()  # the client went away: release the index reader now

    def ListDocuments(
        self, request: engine_pb2.ListDocumentsRequest, context: grpc.ServicerContext
    ) -> engine_pb2.ListDocumentsReply:
        self._check_topic(context)
        if request.limit < 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"limit must be >= 0, got {request.limit}")
        docs, more = self._index.list_documents(
            after=request.after, limit=min(request.limit or MAX_LIST_DOCUMENTS, MAX_LIST_DOCUMENTS)
        )
        return engine_pb2.ListDocumentsReply(
            documents=[
                engine_pb2.DocumentInfo(
                    url=d.url, title=d.title, fetch_time=d.fetch_time, relevance=d.relevance
                )
                for d in docs
            ],
            more=more,
        )


def document_to_proto(stored: dict[str, Any]) -> engine_pb2.Document:
    return engine_pb2.Document(
        url=stored["url"],
        title=stored.get("title", ""),
        text=stored.get("text", ""),
        fetch_time=float(stored.get("fetch_time") or 0.0),
        has_relevance=True,
        relevance=float(stored.get("relevance") or 0.0),
    )


def add_engine_servicer(server: Any, servicer: EngineServicer) -> list[str]:
    engine_pb2_grpc.add_EngineServicer_to_server(servicer, server)
    return [SERVICE_NAME]
