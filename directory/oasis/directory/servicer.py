"""gRPC Directory servicer: proto -> domain -> one call -> proto; domain errors -> INVALID_ARGUMENT."""

from __future__ import annotations

import logging

import grpc

from oasis.directory.analysis import InvalidQuery, check_query
from oasis.directory.registry import (
    EngineOwned,
    EngineRecord,
    InvalidEngine,
    Registry,
    Summary,
    TermStats,
    TooManyEngines,
)
from oasis.directory.routing import route
from oasis.runtime.bloom import MAX_HASHES, BloomFilter
from oasis.v1 import common_pb2, directory_pb2, directory_pb2_grpc

logger = logging.getLogger(__name__)

MAX_ROUTE_K = 10_000
# caps on what one registration may cost every Route (issue 15, item 1)
MAX_SUMMARY_TERMS = 100_000
MAX_KEYWORDS = 200
MAX_FILTER_BYTES = 2 * 1024 * 1024
MAX_OWNER_CHARS = 200


def summary_from_proto(msg: common_pb2.TopicSummary) -> Summary:
    if len(msg.terms) > MAX_SUMMARY_TERMS:
        raise InvalidEngine(f"summary has {len(msg.terms)} terms, limit {MAX_SUMMARY_TERMS}")
    if len(msg.keywords) > MAX_KEYWORDS:
        raise InvalidEngine(f"summary has {len(msg.keywords)} keywords, limit {MAX_KEYWORDS}")
    term_filter = None
    if msg.term_filter:
        if len(msg.term_filter) > MAX_FILTER_BYTES:
            raise InvalidEngine(f"term filter of {len(msg.term_filter)} bytes, limit {MAX_FILTER_BYTES}")
        if not 1 <= msg.term_filter_hashes <= MAX_HASHES:
            raise InvalidEngine(f"term_filter_hashes must be in [1, {MAX_HASHES}]")
        term_filter = BloomFilter(msg.term_filter, msg.term_filter_hashes)
    terms: dict[str, TermStats] = {}
    for t in msg.terms:
        if not t.term:
            raise InvalidEngine("summary has a term with an empty string")
        terms[t.term] = TermStats(df=t.df, cf=t.cf)
    return Summary(
        topic=msg.topic,
        documents=msg.documents,
        total_terms=msg.total_terms,
        terms=terms,
        keywords=tuple(msg.keywords),
        term_filter=term_filter,
        vocabulary=msg.vocabulary,
    )


def summary_to_proto(s: Summary) -> common_pb2.TopicSummary:
    return common_pb2.TopicSummary(
        topic=s.topic,
        documents=s.documents,
        total_terms=s.total_terms,
        terms=[common_pb2.TermStat(term=t, df=v.df, cf=v.cf) for t, v in s.terms.items()],
        keywords=list(s.keywords),
        term_filter=s.term_filter.bits if s.term_filter else b"",
        term_filter_hashes=s.term_filter.hashes if s.term_filter else 0,
        vocabulary=s.vocabulary,
    )


def record_to_proto(r: EngineRecord) -> directory_pb2.EngineInfo:
    return directory_pb2.EngineInfo(name=r.name, address=r.address, summary=summary_to_proto(r.summary))


class DirectoryServicer(directory_pb2_grpc.DirectoryServicer):
    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    def Register(
        self, request: directory_pb2.RegisterRequest, context: grpc.ServicerContext
    ) -> directory_pb2.RegisterReply:
        try:
            if len(request.owner) > MAX_OWNER_CHARS:
                raise InvalidEngine(f"owner token longer than {MAX_OWNER_CHARS} characters")
            lease = self._registry.register(
                name=request.engine.name,
                address=request.engine.address,
                summary=summary_from_proto(request.engine.summary),
                owner=request.owner,
            )
        except InvalidEngine as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except EngineOwned as exc:
            context.abort(grpc.StatusCode.ALREADY_EXISTS, str(exc))
        except TooManyEngines as exc:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        return directory_pb2.RegisterReply(lease_seconds=lease)

    def Heartbeat(
        self, request: directory_pb2.HeartbeatRequest, context: grpc.ServicerContext
    ) -> directory_pb2.HeartbeatReply:
        try:
            summary = summary_from_proto(request.summary) if request.HasField("summary") else None
        except InvalidEngine as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        try:
            known = self._registry.heartbeat(name=request.name, summary=summary, owner=request.owner)
        except EngineOwned as exc:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, str(exc))
        return directory_pb2.HeartbeatReply(known=known, lease_seconds=self._registry.lease_seconds)

    def Deregister(
        self, request: directory_pb2.DeregisterRequest, context: grpc.ServicerContext
    ) -> directory_pb2.DeregisterReply:
        try:
            removed = self._registry.deregister(request.name, owner=request.owner)
        except EngineOwned as exc:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, str(exc))
        return directory_pb2.DeregisterReply(removed=removed)

    def Route(
        self, request: directory_pb2.RouteRequest, context: grpc.ServicerContext
    ) -> directory_pb2.RouteReply:
        try:
            query = check_query(request.query)
            if not 0 <= request.k <= MAX_ROUTE_K:
                raise InvalidQuery(f"k must be in [0, {MAX_ROUTE_K}], got {request.k}")
        except InvalidQuery as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        result = route(query, self._registry.live(), request.k)
        return directory_pb2.RouteReply(
            engines=[
                directory_pb2.RoutedEngine(name=e.name, address=e.address, score=e.score)
                for e in result.engines
            ],
            skipped=list(result.skipped),
            omitted=list(result.omitted),
            skipped_engines=[
                directory_pb2.RoutedEngine(name=e.name, address=e.address, score=e.score)
                for e in result.skipped_engines
            ],
        )

    def ListEngines(
        self, request: directory_pb2.ListEnginesRequest, context: grpc.ServicerContext
    ) -> directory_pb2.ListEnginesReply:
        return directory_pb2.ListEnginesReply(engines=[record_to_proto(r) for r in self._registry.live()])
