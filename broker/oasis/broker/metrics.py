"""The broker's Prometheus metrics (see :mod:`oasis.runtime.metrics`): per-engine status, fan-out size."""

from __future__ import annotations

from oasis.broker.service import SearchOutcome
from oasis.runtime.metrics import counter, histogram

ENGINE_STATUS = counter(
    "oasis_broker_engine_status_total",
    "engine answers per query, by engine and state (ok, timeout, error, skipped, suspended)",
    ["engine", "state"],
)
FANOUT = histogram(
    "oasis_broker_fanout_engines",
    "engines a query was sent to (routed and not suspended)",
    buckets=(0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64),
)
QUERIES = counter(
    "oasis_broker_queries_total",
    "queries answered, by where the route came from (directory, cache, stale, fallback) and partial or not",
    ["route", "partial"],
)


def record_outcome(outcome: SearchOutcome) -> None:
    called = 0
    for status in outcome.engines:
        ENGINE_STATUS.labels(status.name, status.state).inc()
        called += status.state in ("ok", "timeout", "error")
    FANOUT.observe(called)
    QUERIES.labels(outcome.route_source, "true" if outcome.partial else "false").inc()
