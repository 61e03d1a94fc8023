"""The robot's Prometheus metrics and its periodic progress log line, both read from one status snapshot.

Nothing here runs on the crawl's hot path: the collector calls :meth:`Crawler.status` once per scrape, and
:class:`ProgressLog` once every ``every`` seconds.

Estimates (the robot's own, from what it has seen; a live evaluator against the web's ground truth is
separate):

* recall: :attr:`CrawlStatus.recall_estimate` (:mod:`oasis.robot.recall`: the relevance the robot holds,
  its fresh part estimated, over that plus the fringe's estimated relevance, calibrated by what first
  retrievals found; papers/004 Eq. 1);
* freshness: :attr:`CrawlStatus.freshness_estimate` (:func:`oasis.robot.rates.freshness_estimate`: each
  held page's relevance times its estimated probability of no change since its last fetch; papers/004
  Eq. 2), the same figure ``Robot.Status`` and ``oasis status`` give. Before session 30 these metrics
  showed the share of re-fetches that found the page unchanged instead, a different quantity under the
  same name (biased low: the re-crawl schedule picks pages likely to have changed).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from oasis.robot.crawler import Crawler, CrawlStatus
from oasis.runtime.metrics import CounterMetricFamily, GaugeMetricFamily, Metric

logger = logging.getLogger(__name__)

REFETCH_KINDS = ("modified", "unchanged", "deleted")  # outcomes of fetching a page already retrieved
STATES = ("idle", "running", "stopping", "stopped", "done")


def freshness_estimate(status: CrawlStatus) -> float | None:
    """The robot's freshness estimate; None when it has none (it does not re-crawl, or holds no page its
    change-rate estimates know: the status then says 0, which no page's survival probability can be)."""
    return status.freshness_estimate if status.freshness_estimate > 0 else None


def status_families(
    robot: str, status: CrawlStatus, *, bytes_fetched: int, relevance_sum: float, pages_ok: int
) -> list[Metric]:
    """The robot's metric families from one status snapshot."""
    labels = ["robot"]

    def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
        g = GaugeMetricFamily(name, doc, labels=labels)
        g.add_metric([robot], value)
        return g

    def total(name: str, doc: str, value: float) -> CounterMetricFamily:
        c = CounterMetricFamily(name, doc, labels=labels)
        c.add_metric([robot], value)
        return c

    fetches = CounterMetricFamily(
        "oasis_robot_fetches",
        "page fetches processed, by outcome (new, modified, unchanged, deleted, error)",
        labels=["robot", "outcome"],
    )
    for outcome, n in sorted(status.kinds.items()):
        fetches.add_metric([robot, outcome], n)
    errors = CounterMetricFamily(
        "oasis_robot_errors", "fetch and processing errors, by kind", labels=["robot", "kind"]
    )
    for kind, n in sorted(status.errors.items()):
        errors.add_metric([robot, kind], n)
    state = GaugeMetricFamily(
        "oasis_robot_state", "1 for the robot's current state", labels=["robot", "state"]
    )
    for s in STATES:
        state.add_metric([robot, s], 1.0 if status.state == s else 0.0)
    families: list[Metric] = [
        fetches,
        errors,
        state,
        total(
            "oasis_robot_pages_fetched", "page requests completed (any answer, or none)", status.pages_fetched
        ),
        total("oasis_robot_pages_indexed", "pages the engine acknowledged", status.pages_indexed),
        total(
            "oasis_robot_recrawls",
            "re-fetches of pages already retrieved (modified, unchanged or deleted)",
            sum(status.kinds.get(k, 0) for k in REFETCH_KINDS),
        ),
        total(
            "oasis_robot_fetched_bytes", "body bytes of page responses since the robot started", bytes_fetched
        ),
        total(
            "oasis_robot_relevance",
            "sum of r(i) of pages fetched successfully (rate of this / rate of pages_ok = harvest rate)",
            relevance_sum,
        ),
        total("oasis_robot_pages_ok", "pages fetched successfully (new, modified, unchanged)", pages_ok),
        gauge("oasis_robot_frontier_size", "documents located, not yet fetched", status.frontier_size),
        gauge(
            "oasis_robot_recrawl_queue_size", "retrieved documents queued for re-crawl", status.recrawl_size
        ),
        gauge("oasis_robot_in_flight", "requests in flight (pages and robots.txt)", status.in_flight),
        gauge(
            "oasis_robot_concurrency",
            "the fetcher controller's target of requests in flight",
            status.concurrency,
        ),
        gauge("oasis_robot_response_queue", "responses waiting for the processor", status.response_queue),
        gauge(
            "oasis_robot_harvest_rate",
            "mean relevance r(i) of pages fetched successfully",
            status.harvest_rate,
        ),
        gauge(
            "oasis_robot_recall_estimate",
            "the robot's recall estimate: held relevance, its fresh part estimated, over held + estimated "
            "fringe relevance (calibrated by first retrievals)",
            status.recall_estimate,
        ),
    ]
    fresh = freshness_estimate(status)
    families.append(
        gauge(
            "oasis_robot_freshness_estimate",
            "the robot's freshness estimate: held relevance times its estimated probability of no change "
            "since the last fetch, over the held relevance (NaN: none)",
            math.nan if fresh is None else fresh,
        )
    )
    return families


def crawler_families(crawler: Crawler) -> Callable[[], Iterable[Metric]]:
    """The collector function of a live robot (for :func:`oasis.runtime.metrics.register_collector`)."""

    def families() -> Iterable[Metric]:
        return status_families(
            crawler.config.name,
            crawler.status(),
            bytes_fetched=crawler.bytes_fetched,
            relevance_sum=crawler.relevance_sum,
            pages_ok=crawler.pages_ok,
        )

    return families


@dataclass
class _Last:
    at: float
    pages: int


class ProgressLog:
    """Log one progress line every ``every`` seconds: pages, fetch rate over the interval, harvest rate,
    recall and freshness estimates, frontier. The JSON log format carries the numbers as fields."""

    def __init__(
        self,
        name: str,
        status: Callable[[], CrawlStatus],
        every: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if every <= 0:
            raise ValueError(f"progress interval must be > 0 seconds, got {every}")
        self.name = name
        self._status = status
        self.every = every
        self._clock = clock
        self._last: _Last | None = None
        self._last_state = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def fields(self) -> dict[str, object]:
        """One progress record (and the state for the next one's rate)."""
        s = self._status()
        now = self._clock()
        last = self._last
        rate = (s.pages_fetched - last.pages) / (now - last.at) if last and now > last.at else 0.0
        self._last = _Last(now, s.pages_fetched)
        fresh = freshness_estimate(s)
        return {
            "robot": self.name,
            "state": s.state,
            "pages": s.pages_fetched,
            "indexed": s.pages_indexed,
            "rate": round(rate, 2),
            "harvest": round(s.harvest_rate, 4),
            "recall_est": round(s.recall_estimate, 4),
            "freshness_est": None if fresh is None else round(fresh, 4),
            "frontier": s.frontier_size,
            "recrawl_queue": s.recrawl_size,
        }

    def log(self) -> dict[str, object] | None:
        """Log the progress line while the robot runs (and once when its state changes); the fields
        logged, or None."""
        f = self.fields()
        if f["state"] != "running" and f["state"] == self._last_state:
            return None
        self._last_state = str(f["state"])
        fresh = "-" if f["freshness_est"] is None else f"{f['freshness_est']:.3f}"
        logger.info(
            "progress %s: %s, %d pages (%.1f/s), %d indexed, harvest %.3f, R~%.3f, F~%s, frontier %d",
            f["robot"],
            f["state"],
            f["pages"],
            f["rate"],
            f["indexed"],
            f["harvest"],
            f["recall_est"],
            fresh,
            f["frontier"],
            extra={"fields": f},
        )
        return f

    def _run(self) -> None:
        self.fields()  # the baseline of the first interval's rate
        while not self._stop.wait(self.every):
            try:
                self.log()
            except Exception:  # the progress line must never take the robot down
                logger.warning("progress line failed", exc_info=True)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
