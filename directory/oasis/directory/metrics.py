"""The directory's Prometheus metrics (see :mod:`oasis.runtime.metrics`): registered engines."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from oasis.directory.registry import Registry
from oasis.runtime.metrics import GaugeMetricFamily, Metric


def registry_families(registry: Registry) -> Callable[[], Iterable[Metric]]:
    """Live (leased) engines and the documents they reported, read at scrape time."""

    def families() -> Iterable[Metric]:
        live = registry.live()
        engines = GaugeMetricFamily("oasis_directory_engines", "engines registered with a live lease")
        engines.add_metric([], len(live))
        docs = GaugeMetricFamily(
            "oasis_directory_engine_documents",
            "documents each live engine reported in its last summary",
            labels=["engine"],
        )
        for record in live:
            docs.add_metric([record.name], record.summary.documents)
        return [engines, docs]

    return families
