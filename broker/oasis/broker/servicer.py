"""gRPC Broker servicer: proto -> :class:`Broker.search` -> proto; domain errors -> status codes."""

from __future__ import annotations

import logging

import grpc

from oasis.broker.metrics import record_outcome
from oasis.broker.ports import DirectoryUnavailable, InvalidRequest, Overloaded
from oasis.broker.service import Broker, SearchOutcome
from oasis.v1 import broker_pb2, broker_pb2_grpc

logger = logging.getLogger(__name__)

STATE_TO_PROTO = {
    "ok": broker_pb2.ENGINE_STATE_OK,
    "timeout": broker_pb2.ENGINE_STATE_TIMEOUT,
    "error": broker_pb2.ENGINE_STATE_ERROR,
    "skipped": broker_pb2.ENGINE_STATE_SKIPPED,
    "suspended": broker_pb2.ENGINE_STATE_SUSPENDED,
}
ROUTE_SOURCE_METADATA = "oasis-route-source"


def outcome_to_proto(outcome: SearchOutcome) -> broker_pb2.BrokerSearchReply:
    return broker_pb2.BrokerSearchReply(
        hits=[
            broker_pb2.MergedHit(
                url=h.url,
                title=h.title,
                snippet=h.snippet,
                score=h.score,
                engine=h.engine,
                raw_score=h.raw_score,
            )
            for h in outcome.hits
        ],
        engines=[
            broker_pb2.EngineStatus(
                name=s.name,
                state=STATE_TO_PROTO[s.state],
                message=s.message,
                latency_ms=s.latency_ms,
                hits=s.hits,
                matches=s.matches,
            )
            for s in outcome.engines
        ],
        partial=outcome.partial,
        took_ms=outcome.took_ms,
        suggestion=outcome.suggestion,
    )


class BrokerServicer(broker_pb2_grpc.BrokerServicer):
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def Search(
        self, request: broker_pb2.BrokerSearchRequest, context: grpc.ServicerContext
    ) -> broker_pb2.BrokerSearchReply:
        try:
            outcome = self._broker.search(
                request.query,
                k=request.k,
                deadline_ms=request.deadline_ms,
                max_engines=request.max_engines,
                caller_remaining=context.time_remaining(),
            )
        except InvalidRequest as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except Overloaded as exc:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        except DirectoryUnavailable as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"no route for the query: {exc}")
        record_outcome(outcome)
        context.set_trailing_metadata(((ROUTE_SOURCE_METADATA, outcome.route_source),))
        return outcome_to_proto(outcome)
