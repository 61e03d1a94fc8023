"""The engine's Prometheus metrics (see :mod:`oasis.runtime.metrics`): documents, commits, operations."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from oasis.engine.index import CommitResult, TopicIndex
from oasis.runtime.metrics import CounterMetricFamily, GaugeMetricFamily, Metric, counter

OPERATIONS = counter(
    "oasis_engine_index_operations_total",
    "index operations of acknowledged batches, by outcome (added, replaced, deleted, rejected)",
    ["op"],
)
BATCHES = counter(
    "oasis_engine_index_batches_total",
    "batches acknowledged from Index streams (each in the write-ahead log; Whoosh commits group them)",
)


def record_commit(result: CommitResult) -> None:
    BATCHES.inc()
    for op, n in (
        ("added", result.added),
        ("replaced", result.replaced),
        ("deleted", result.deleted),
        ("rejected", len(result.rejected)),
    ):
        if n:
            OPERATIONS.labels(op).inc(n)


def index_families(index: TopicIndex, engine: str) -> Callable[[], Iterable[Metric]]:
    """Documents, index size and commits of ``index``, read at scrape time."""

    def families() -> Iterable[Metric]:
        stats = index.stats()
        docs = GaugeMetricFamily("oasis_engine_documents", "documents in the index", labels=["engine"])
        docs.add_metric([engine], stats.documents)
        size = GaugeMetricFamily("oasis_engine_index_bytes", "bytes of the index on disk", labels=["engine"])
        size.add_metric([engine], stats.index_bytes)
        commits = CounterMetricFamily(
            "oasis_engine_commits", "index commits since the engine started", labels=["engine"]
        )
        commits.add_metric([engine], index.generation)
        return [docs, size, commits]

    return families
