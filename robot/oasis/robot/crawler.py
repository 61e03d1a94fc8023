"""The crawl loop of papers/004, Figure 2: request controller -> fetchers -> response queue -> response
processor -> (request controller, engine), with the fetcher controller deciding how many requests are in
flight.

Threads:

* the *dispatch* thread owns politeness and the fetcher controller. It waits for events (a response
  arrival from a fetcher, or a departure from the processor), updates the host's politeness slot, puts page
  responses in the response queue, and on every event decides how many new requests to start
  (:class:`~oasis.robot.fetcher_controller.FetcherController`), taking URLs from the request controller with
  ``next_batch(m, now, host_ready)`` -- after the redirect targets it has claimed from it (``claim``), which
  are fetched in their source's turn, as soon as their host is ready;
* ``max_in_flight`` *fetcher* threads (a pool) run :meth:`Fetcher.fetch`;
* the *processor* thread takes batches from the response queue, parses and scores them
  (:class:`~oasis.robot.processor.ResponseProcessor`), reports outcomes to the request controller, sends
  documents to the engine in acknowledged batches and checkpoints.

Checkpoints (every ``checkpoint_interval`` processed responses, and on stop) are written only after every
document reported so far has been acknowledged by the engine, atomically (temp file, fsync, rename). They hold
the request controller's state, the URLs handed out but not yet reported (re-queued on resume), the content
hashes for change detection and the counters. A robot killed with ``kill -9`` therefore refetches at most
the pages processed since the last checkpoint, and never forgets a page the engine acknowledged.

The request controller, politeness and the counters are guarded by one lock; parsing, scoring, fetching
and engine calls happen outside it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from oasis.robot import fetcher as f
from oasis.robot.config import RobotConfig
from oasis.robot.engine_port import EngineLike, IndexDoc, RobotEngineError
from oasis.robot.fetcher_controller import FetcherController, FetcherControllerConfig
from oasis.robot.politeness import Politeness, ip_literal
from oasis.robot.processor import Known, Parsed, Processed, ResponseProcessor
from oasis.robot.recall import FringeCalibration, recall_estimate
from oasis.robot.scheduling import FetchOutcome, RequestController
from oasis.robot.scheduling.recrawl import WhittleRecrawl
from oasis.runtime.files import write_json_atomic
from oasis.runtime.urls import InvalidURL, canonicalize, host_of

logger = logging.getLogger(__name__)

CHECKPOINT_FILE = "checkpoint.json"
CHECKPOINT_VERSION = 1
MAX_THROTTLE_RETRIES = 3  # 429 / 503 answers for one URL before it is given up
ROBOTS_IN_FLIGHT = 2  # robots.txt requests in flight, on top of page requests
RATE_WINDOW = 60.0  # seconds over which the status's fetch rate is measured

IDLE, RUNNING, STOPPING, STOPPED, DONE = "idle", "running", "stopping", "stopped", "done"


@dataclass(frozen=True, slots=True)
class _Task:
    url: str
    host: str
    dispatched: float
    robots: bool = False
    ip: str = ""  # the host's address, resolved by the robots.txt task


@dataclass(frozen=True, slots=True)
class _Scoring:
    """A parsed batch whose Score call is in flight (None: nothing to score)."""

    batch: list[f.FetchResult]
    parsed: Parsed
    future: Future[list[float]] | None
    started: float  # clock when its processing began
    wall: float  # wall time then: the fetch time its documents are indexed with


@dataclass
class CrawlStatus:
    state: str
    pages_fetched: int
    pages_indexed: int
    frontier_size: int
    recrawl_size: int
    in_flight: int
    concurrency: int
    response_queue: int
    errors: dict[str, int]
    harvest_rate: float
    recall_estimate: float
    policy: str
    elapsed: float
    pages_per_second: float
    fetcher_controller: dict[str, float] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    # maintaining the topic on a changing web
    recrawls: int = 0  # fetches of pages already retrieved (outcomes modified / unchanged / deleted)
    changes_seen: int = 0  # re-crawls that found the page modified or deleted
    not_modified: int = 0  # 304 answers to conditional GETs
    recent_pages_per_second: float = 0.0  # page fetches per second over the last RATE_WINDOW seconds
    freshness_estimate: float = 0.0  # the robot's own F estimate (oasis.robot.rates), no ground truth
    budget_per_second: float = 0.0
    # links on fetched pages not followed, by why: their path names no page (RobotConfig.skip_suffixes), or
    # they are longer than max_url_length
    links_skipped: dict[str, int] = field(default_factory=dict)


class Crawler:
    def __init__(
        self,
        config: RobotConfig,
        controller: RequestController,
        engine: EngineLike,
        *,
        fetcher: f.Fetcher | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        resolve: Callable[[str], list[str]] | None = None,
    ) -> None:
        self.config = config
        self._resolve = resolve if resolve is not None else f._resolve  # hostname -> addresses (a seam)
        self.controller = controller
        self.engine = engine
        self._clock = clock
        self._wall = wall
        self._fetcher = fetcher if fetcher is not None else f.Fetcher(config, clock=clock)
        self._own_fetcher = fetcher is None
        self.politeness = Politeness(config)
        self.fc = FetcherController(
            FetcherControllerConfig(
                max_in_flight=config.max_in_flight,
                target_queue=config.target_queue,
                initial_in_flight=min(2, config.max_in_flight),
            )
        )
        self.processor = ResponseProcessor(
            engine.score,
            max_bytes=config.max_bytes,
            in_scope=self.in_scope,
            known={},
            min_relevance=config.min_relevance,
            max_links=config.max_links,
            max_url_length=config.max_url_length,
            skip_suffixes=config.skip_suffixes,
        )
        self._lock = threading.RLock()
        self._events: queue.Queue[tuple[_Task, f.FetchResult] | None] = queue.Queue()
        self._responses: deque[f.FetchResult] = deque()
        self._responses_cv = threading.Condition(self._lock)
        self._throttled: Counter[str] = Counter()  # url -> 429/503 answers so far
        self._redirect_depth: dict[str, int] = {}
        self._in_flight_pages = 0
        self._in_flight_robots = 0
        self._processing = 0
        self._dispatched_pages = 0
        self._index_q: queue.Queue[IndexDoc | dict[str, Any] | None] = queue.Queue(
            maxsize=4 * config.index_batch
        )
        self._since_checkpoint = 0
        self._stop = threading.Event()
        self._hard_stop = (
            threading.Event()
        )  # stop(abandon_in_flight=True): do not wait for requests in flight
        self._next_checkpoint_at = 0.0  # checkpoint writes take at most ~10% of the time (issue 15)
        self._abandon = threading.Event()  # stop() timed out: give up retrying the engine
        self._dispatch_done = threading.Event()
        self._done = threading.Event()
        self._threads: list[threading.Thread] = []
        self._pool: ThreadPoolExecutor | None = None
        # the processor's Score calls, one at a time, while it parses the next batch
        self._scorer = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{config.name}-score")
        self._started_at: float | None = None
        self._started_wall = 0.0  # wall time of the crawl's start: the reference of first retrievals' past
        self._max_pages = config.max_pages
        self.state = IDLE
        # counters (checkpointed)
        self.pages_fetched = 0  # page requests completed (any answer, or none)
        self.pages_indexed = 0  # upserts acknowledged by the engine
        self.pages_ok = 0
        self.relevance_sum = 0.0
        self.errors: Counter[str] = Counter()
        self.kinds: Counter[str] = (
            Counter()
        )  # outcomes reported: new / modified / unchanged / deleted / error
        self.checkpoints = 0
        self.bytes_fetched = 0  # body bytes of page responses (not checkpointed: a metric since start)
        self._scheme: dict[str, str] = {}  # host -> scheme, for the robots.txt URL
        self._refused_hosts: set[str] = set()  # hosts resolving to private addresses (refuse_private)
        self._last_engine_error = ""
        self._starved = False  # the last next_batch with m > 0 returned nothing
        # redirect targets claimed from the request controller (in flight there), fetched before its next
        # choice as soon as their host is ready: a redirect is followed in its source's place
        self._follow: list[str] = []
        # a changing web: the re-crawl hook's change-rate estimates (saved with the Q-table), the page
        # budget per second (a token bucket), the recent fetch times for the fetch rate
        self.recrawl_hook: WhittleRecrawl | None = None
        # what first retrievals found against the fringe's estimate of them (the recall estimate's rho)
        self._fringe_cal = FringeCalibration(config.min_relevance)
        self.not_modified = 0
        self._fetch_times: deque[float] = deque()
        self._tokens = 1.0
        self._tokens_at: float | None = None

    # ------------------------------------------------------------------ scope and seeds
    def in_scope(self, url: str) -> bool:
        allowed = self.config.allowed_hosts
        return allowed is None or urlsplit(url).netloc in allowed

    def add_seeds(self, urls: Iterable[str]) -> list[str]:
        """Canonicalise and add seed URLs; invalid ones are counted under ``invalid_url`` and skipped."""
        good: list[str] = []
        for raw in urls:
            try:
                good.append(canonicalize(raw))
            except InvalidURL as exc:
                logger.warning("skipping seed: %s", exc)
                with self._lock:
                    self.errors[f.INVALID_URL] += 1
        with self._lock:
            for url in good:
                self._note_host(url)
            if good:
                self.controller.add_seeds(good)
        self._wake()
        return good

    def _note_host(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.netloc not in self._scheme:
            self._scheme[parts.netloc] = parts.scheme
            self.politeness.slot(parts.netloc, parts.scheme)

    def host_ready(self, host: str, now: float) -> bool:
        """May a page of ``host`` be requested at ``now``? Hosts given up are "ready": their URLs are handed
        out and recorded as ``robots_unavailable`` without a request."""
        if self.politeness.given_up(host):
            return True
        if not self.politeness.known(host):
            self.politeness.slot(host, self._scheme.get(host, "http"))  # its robots.txt is fetched first
            return False
        return self.politeness.host_ready(host, now)

    def _batch_ready(self, now: float) -> Callable[[str], bool]:
        """``host_ready`` for one ``next_batch`` call: each True answer claims one of the host's free
        request slots (the frontier pops one URL per True), so a batch never overbooks a host."""
        claims: Counter[str] = Counter()
        ip_claims: Counter[str] = Counter()  # and of its address's (per-IP politeness)
        limit = self.config.host_concurrency

        def ready(host: str) -> bool:
            if not self.host_ready(host, now):
                return False
            if self.politeness.given_up(host):
                return True
            if self.politeness.slot(host).in_flight + claims[host] >= limit:
                return False
            ip = self.politeness.ip_of(host)
            if ip and ip_claims[ip] >= self.politeness.ip_room(host, now):
                return False
            claims[host] += 1
            ip_claims[ip] += 1
            return True

        return ready

    # ------------------------------------------------------------------ lifecycle
    def start(self, max_pages: int | None = None) -> None:
        with self._lock:
            if self.state == RUNNING:
                return
            if max_pages is not None:
                self._max_pages = max_pages
            self._stop.clear()
            self._hard_stop.clear()
            self._fetcher.abort(False)
            self._abandon.clear()
            self._dispatch_done.clear()
            self._done.clear()
            self.state = RUNNING
            self._started_at = self._clock()
            self._started_wall = self._wall()
            self._dispatched_pages = 0
            self._starved = False
        if self._pool is not None:  # a previous run's pool (its threads have finished)
            self._pool.shutdown(wait=False)
        self._pool = ThreadPoolExecutor(
            max_workers=self.config.max_in_flight + ROBOTS_IN_FLIGHT,
            thread_name_prefix=f"{self.config.name}-fetch",
        )
        self._threads = [
            threading.Thread(target=self._dispatch_loop, name=f"{self.config.name}-dispatch", daemon=True),
            threading.Thread(target=self._process_loop, name=f"{self.config.name}-process", daemon=True),
            threading.Thread(target=self._index_loop, name=f"{self.config.name}-index", daemon=True),
        ]
        for t in self._threads:
            t.start()
        logger.info("robot %s started (max_pages=%s)", self.config.name, self._max_pages or "unlimited")

    def stop(self, timeout: float = 30.0, *, abandon_in_flight: bool = False) -> None:
        """Stop dispatching, let in-flight requests finish and be processed, flush, checkpoint.

        ``abandon_in_flight`` (a time limit): do not wait for requests in flight -- they are cut at their
        next read and fetched again after a resume -- only process what has arrived, flush and checkpoint."""
        with self._lock:
            if self.state not in (RUNNING, DONE):
                return
            if self.state == RUNNING:
                self.state = STOPPING
        if abandon_in_flight:
            self._hard_stop.set()
            self._fetcher.abort()
        self._stop.set()
        self._wake()
        deadline = self._clock() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - self._clock()))
        if any(t.is_alive() for t in self._threads):
            # the engine is down: stop retrying and keep the older checkpoint (those pages are refetched)
            logger.warning("robot %s: engine unreachable at stop", self.config.name)
            self._abandon.set()
            for t in self._threads:
                t.join(10.0)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._save_q()  # also when the engine was down and the final checkpoint was not written
        with self._lock:
            if self.state == STOPPING:
                self.state = STOPPED
        logger.info("robot %s stopped", self.config.name)

    def close(self) -> None:
        self.stop()
        self._scorer.shutdown(wait=False)
        if self._own_fetcher:
            self._fetcher.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the crawl is done (budget spent or nothing left to fetch)."""
        return self._done.wait(timeout)

    def run(self, max_pages: int | None = None, timeout: float | None = None) -> CrawlStatus:
        self.start(max_pages)
        self.wait(timeout)
        self.stop()
        return self.status()

    def _wake(self) -> None:
        self._events.put(None)

    # ------------------------------------------------------------------ status
    def _estimates(self) -> tuple[float, float]:
        """(recall, freshness): the robot's own estimates over the pages it indexed (r >= min_relevance),
        without ground truth (:mod:`oasis.robot.recall`, :func:`oasis.robot.rates.freshness_estimate`);
        freshness 0 when the robot does not re-crawl."""
        held = max(0.0, self.processor.held)  # (an incremental sum can end a rounding below 0)
        freshness = 0.0
        if self.recrawl_hook is not None:
            from oasis.robot.rates import freshness_estimate

            freshness = freshness_estimate(self.recrawl_hook, self.processor.held_pages(), self._wall())
        fringe = self._fringe_cal.ratio * self.controller.fringe_relevance()
        fresh = held * freshness if freshness > 0 else held  # (0: no page the estimates know yet)
        return recall_estimate(held, fresh, fringe), freshness

    def _recent_rate(self, now: float) -> float:
        while self._fetch_times and self._fetch_times[0] < now - RATE_WINDOW:
            self._fetch_times.popleft()
        if self._started_at is None:
            return 0.0
        span = min(RATE_WINDOW, now - self._started_at)
        return len(self._fetch_times) / span if span > 0 else 0.0

    def status(self) -> CrawlStatus:
        with self._lock:
            elapsed = self._clock() - self._started_at if self._started_at is not None else 0.0
            k = self.kinds
            recall, freshness = self._estimates()
            return CrawlStatus(
                state=self.state,
                pages_fetched=self.pages_fetched,
                pages_indexed=self.pages_indexed,
                frontier_size=self.controller.frontier_size(),
                recrawl_size=self.controller.recrawl_size(),
                in_flight=self._in_flight_pages + self._in_flight_robots,
                concurrency=self.fc.last_target,
                response_queue=len(self._responses),
                errors=dict(self.errors),
                harvest_rate=self.relevance_sum / self.pages_ok if self.pages_ok else 0.0,
                recall_estimate=recall,
                policy=self.config.policy,
                elapsed=elapsed,
                pages_per_second=self.pages_fetched / elapsed if elapsed > 0 else 0.0,
                fetcher_controller=self.fc.metrics(),
                kinds=dict(self.kinds),
                recrawls=k["modified"] + k["unchanged"] + k["deleted"],
                changes_seen=k["modified"] + k["deleted"],
                not_modified=self.not_modified,
                recent_pages_per_second=self._recent_rate(self._clock()),
                freshness_estimate=freshness,
                budget_per_second=self.config.pages_per_second,
                links_skipped={
                    reason: n
                    for reason, n in (
                        ("not_a_page", self.processor.not_pages),
                        ("too_long", self.processor.long_urls),
                    )
                    if n
                },
            )

    # ------------------------------------------------------------------ dispatch thread
    def _dispatch_loop(self) -> None:
        try:
            while True:
                timeout = self._dispatch_timeout()
                try:
                    event = self._events.get(timeout=timeout)
                except queue.Empty:
                    event = None
                events = [event]
                while True:
                    try:
                        events.append(self._events.get_nowait())
                    except queue.Empty:
                        break
                with self._lock:
                    for ev in events:
                        if ev is not None:
                            self._on_arrival(*ev)
                    now = self._clock()  # one instant for the decision and the end test (no race)
                    if not self._stop.is_set():
                        self._dispatch(now)
                    if self._finished(now):
                        break
        except Exception:
            logger.exception("dispatch thread failed")
            self.errors["internal"] += 1
        finally:
            with self._lock:
                for url in self._follow:  # not started: back to the controller's queue (in flight there)
                    self.controller.defer(url)
                self._follow.clear()
                self._dispatch_done.set()
                self._responses_cv.notify_all()

    def _dispatch_timeout(self) -> float:
        with self._lock:
            wake = self.politeness.next_wakeup(self._clock())
        if wake is None:
            return 0.05
        return min(0.05, max(0.0005, wake - self._clock()))

    def _finished(self, now: float) -> bool:
        """True when nothing is in flight or queued and nothing more can be dispatched."""
        if self._hard_stop.is_set():
            return True  # requests in flight are abandoned; the processor still takes what has arrived
        if self._in_flight_pages or self._in_flight_robots or self._responses or self._processing:
            return False
        if self._follow and not self._stop.is_set() and not self._budget_spent():
            return False
        if not self._events.empty():
            return False
        if self._stop.is_set():
            return True
        if self._budget_spent():
            return True
        if self.politeness.robots_due(now) or self.politeness.next_wakeup(now) is not None:
            return False
        if self.controller.recrawling():
            return False  # re-crawling: retrieved pages come due again as they age; run until stopped
        # nothing will become ready by waiting: done when the controller has nothing (ready) to hand out
        return self.controller.frontier_size() == 0 or self._starved

    def _budget_spent(self) -> bool:
        return bool(self._max_pages) and self._dispatched_pages >= self._max_pages

    def _on_arrival(self, task: _Task, res: f.FetchResult) -> None:
        throttled = res.kind == f.TOO_MANY_REQUESTS
        if task.robots:  # record robots.txt first, so its Crawl-delay already spaces the next request
            self._in_flight_robots -= 1
            if res.kind == f.PRIVATE_ADDRESS:  # --refuse-private: the whole host is refused, not retried
                self._refused_hosts.add(task.host)
                self.politeness.give_up(task.host)
            elif res.kind == f.REDIRECT and res.redirect_to:
                self.politeness.robots_redirect(task.host, res.redirect_to)
            else:
                status = 200 if res.kind == f.OK else res.status
                self.politeness.set_robots(
                    task.host, status, res.content, self._clock(), res.headers.get("cache-control")
                )
            self.politeness.on_finish(
                task.host, res.finished, throttled=throttled, retry_after=res.retry_after
            )
            self.politeness.set_ip(task.host, task.ip)  # after on_finish: this request was not counted
            return
        self.politeness.on_finish(task.host, res.finished, throttled=throttled, retry_after=res.retry_after)
        self._in_flight_pages -= 1
        self.pages_fetched += 1
        self.bytes_fetched += len(res.content)
        self._fetch_times.append(res.finished)
        self.fc.observe_fetch(res.finished - task.dispatched)
        if throttled:
            self._throttled[res.url] += 1
            if self._throttled[res.url] <= MAX_THROTTLE_RETRIES:
                self.controller.defer(res.url)  # back in the queue; its host is backing off
                self.errors[f.TOO_MANY_REQUESTS] += 1
                return
            res = f.FetchResult(res.url, f.THROTTLED_GIVE_UP, status=res.status)
        self._throttled.pop(res.url, None)
        self._enqueue_response(res)

    def _enqueue_response(self, res: f.FetchResult) -> None:
        self._responses.append(res)
        self._responses_cv.notify_all()

    def _dispatch(self, now: float) -> None:
        for slot in self.politeness.robots_due(now):
            if self._in_flight_robots >= ROBOTS_IN_FLIGHT:
                break
            if self.politeness.ip_room(slot.host, now) < 1:  # an earlier one of this list took the address
                continue
            self._submit(_Task(slot.robots_url, slot.host, now, robots=True))
        m = self.fc.decide(self._in_flight_pages, len(self._responses))
        m = min(m, self.config.max_response_queue - len(self._responses) - self._in_flight_pages)
        if self._max_pages:
            m = min(m, self._max_pages - self._dispatched_pages)
        if self.config.pages_per_second > 0:
            m = min(m, self._budget_tokens(now))
        if m <= 0:
            return
        # the controller's clock is wall time (its re-crawl ages survive a restart); politeness uses monotonic
        ready = self._batch_ready(now)
        batch = self._take_follow(m, ready)
        if len(batch) < m:
            batch += self.controller.next_batch(m - len(batch), self._wall(), ready)
        self._starved = not batch
        if self.config.pages_per_second > 0:
            self._tokens -= len(batch)
        for url in batch:
            host = host_of(url)
            if self.host_ready(host, now):
                self._start_page(url, now)
            else:  # cannot happen with _batch_ready; be safe rather than impolite
                self.controller.defer(url)

    def _take_follow(self, m: int, ready: Callable[[str], bool]) -> list[str]:
        """Up to ``m`` of the claimed redirect targets whose host is ready (in the order claimed)."""
        if not self._follow:
            return []
        taken: list[str] = []
        waiting: list[str] = []
        for url in self._follow:
            (taken if len(taken) < m and ready(host_of(url)) else waiting).append(url)
        self._follow = waiting
        return taken

    def _budget_tokens(self, now: float) -> int:
        """The page budget per second as a token bucket: tokens accrue at ``pages_per_second`` up to one
        second's worth (at least one page), so the robot never fetches faster than its budget."""
        rate = self.config.pages_per_second
        if self._tokens_at is not None:
            self._tokens = min(max(1.0, rate), self._tokens + (now - self._tokens_at) * rate)
        self._tokens_at = now
        return int(self._tokens)

    def _start_page(self, url: str, now: float) -> int:
        """Start a request for ``url`` or record why not; returns the number of requests started (0 / 1)."""
        host = host_of(url)
        kind = None
        if not self.in_scope(url):
            kind = f.OUT_OF_SCOPE
        elif host in self._refused_hosts:
            kind = f.PRIVATE_ADDRESS
        elif self.politeness.given_up(host):
            kind = f.ROBOTS_UNAVAILABLE
        elif not self.politeness.can_fetch(url):
            kind = f.ROBOTS_DISALLOWED
        elif self._redirect_depth.get(url, 0) > self.config.max_redirects:
            kind = f.TOO_MANY_REDIRECTS
        if kind is not None:
            self._enqueue_response(f.FetchResult(url, kind, started=now, finished=now))
            return 0
        self._dispatched_pages += 1
        self._submit(_Task(url, host, now))
        return 1

    def _submit(self, task: _Task) -> None:
        assert self._pool is not None
        self.politeness.on_dispatch(task.host, task.dispatched, robots=task.robots)
        if task.robots:
            self._in_flight_robots += 1
        else:
            self._in_flight_pages += 1
        self._pool.submit(self._fetch_task, task)

    def _ip_of(self, host: str) -> str:
        """The address ``host`` (``name[:port]``) resolves to, "" if it does not (per-host limits only)."""
        literal = ip_literal(host)
        if literal:
            return literal
        name = host.rsplit(":", 1)[0]  # not an IP literal, so no [v6] brackets
        try:
            addrs = self._resolve(name)
        except (OSError, ValueError):
            return ""
        return addrs[0] if addrs else ""

    def _fetch_task(self, task: _Task) -> None:
        try:
            if task.robots:
                task = dataclasses.replace(task, ip=self._ip_of(task.host))
                # robots.txt over the cap: parse what fits (RFC 9309 2.5)
                res = self._fetcher.fetch(
                    task.url, max_bytes=self.config.max_robots_bytes, html_only=False, truncate=True
                )
            else:
                known = self.processor.known.get(task.url)  # held copy: a conditional GET
                res = self._fetcher.fetch(task.url, validators=known.validators() if known else None)
        except Exception as exc:  # never lose the event: the slot must be released
            logger.warning("fetch of %s failed unexpectedly", task.url[:200], exc_info=True)
            now = self._clock()
            res = f.FetchResult(
                task.url, f.ERROR, started=task.dispatched, finished=now, message=repr(exc)[:300]
            )
        self._events.put((task, res))

    # ------------------------------------------------------------------ processor thread
    def _process_loop(self) -> None:
        """Parse a batch and start its Score call, then finish the batch before it (whose Score call ran
        meanwhile): parsing in this process overlaps the engine's scoring (papers/004's processor, in two
        stages). A batch is only held back while another one is waiting to be parsed."""
        scoring: _Scoring | None = None  # parsed, its Score call in flight
        try:
            while True:
                with self._lock:
                    while not self._responses and not self._dispatch_done.is_set() and scoring is None:
                        self._responses_cv.wait(timeout=0.1)
                    if not self._responses and scoring is None:
                        break  # the dispatcher is done and everything is processed
                    n = min(self.config.process_batch, len(self._responses))
                    batch = [self._responses.popleft() for _ in range(n)]
                    self._processing += len(batch)
                try:
                    started = self._start_batch(batch) if batch else None
                    if scoring is not None:
                        self._finish_batch(scoring)
                    scoring = started
                    if (
                        self._since_checkpoint >= self.config.checkpoint_interval
                        and self._clock() >= self._next_checkpoint_at
                    ):
                        self._index_q.put(self._snapshot())
                finally:
                    with self._lock:
                        self._processing = len(scoring.batch) if scoring is not None else 0
                    self._wake()  # a departure event for the fetcher controller
        except Exception:
            logger.exception("processor thread failed")
            with self._lock:
                self.errors["internal"] += 1
                self._processing = 0
        finally:
            try:
                self._index_q.put(self._snapshot())  # the final checkpoint, once everything is acknowledged
            except Exception:
                logger.exception("final snapshot failed")
            self._index_q.put(None)

    def _start_batch(self, batch: list[f.FetchResult]) -> _Scoring:
        """Parse ``batch`` and start its Score call on the scoring thread."""
        started, wall = self._clock(), self._wall()
        parsed = self.processor.parse(batch)
        future = self._scorer.submit(self.processor.score, parsed) if parsed.texts else None
        return _Scoring(batch, parsed, future, started, wall)

    def _finish_batch(self, scoring: _Scoring) -> None:
        """Wait for the batch's scores (retrying a failed Score call), report it, queue its documents."""
        batch = scoring.batch
        scores: list[float] | None = []
        if scoring.future is not None:
            try:
                scores = scoring.future.result()
            except RobotEngineError as exc:
                with self._lock:
                    self.errors["engine"] += 1
                    self._last_engine_error = str(exc)
                logger.warning("engine call failed (retrying): %s", exc)
                scores = self._with_engine_retry(lambda: self.processor.score(scoring.parsed))
        if scores is None:  # stopped while the engine is down: these URLs are fetched again on resume
            return
        processed = self.processor.finish(scoring.parsed, scores, scoring.wall)
        now = self._wall()  # the request controller's clock
        with self._lock:
            for res, p in zip(batch, processed, strict=True):
                self._report(res, p, now)
            if self.controller.frontier_size() > self.config.max_frontier:
                # forget the least valuable tenth at once (one O(n log n) sweep per max_frontier / 10 links)
                evicted = self.controller.evict_fringe(self.config.max_frontier * 9 // 10)
                self.errors["frontier_evicted"] += evicted
                logger.info(
                    "frontier over %d: forgot the %d least valuable URLs", self.config.max_frontier, evicted
                )
        for p in processed:
            if p.op is not None:
                self._index_q.put(p.op)  # blocks when the engine falls behind (bounded queue)
        self.fc.observe_service(self._clock() - scoring.started, len(batch))

    def _report(self, res: f.FetchResult, p: Processed, now: float) -> None:
        if p.error is not None:
            self.errors[p.error] += 1
        if res.kind == f.NOT_MODIFIED:
            self.not_modified += 1
        self.kinds[p.kind] += 1
        if p.error is None and p.kind in ("new", "modified", "unchanged"):
            self.pages_ok += 1
            self.relevance_sum += p.relevance
        depth = self._redirect_depth.pop(p.url, 0)
        for c in p.children:
            if p.error == f.REDIRECT:
                self._redirect_depth[c.url] = depth + 1
            self._note_host(c.url)
        if p.kind == "new" and p.error is None:
            estimate = self.controller.estimated_relevance(p.url)
            if estimate is not None:
                self._fringe_cal.observe(estimate, p.relevance)
        hook = self.recrawl_hook
        if hook is not None and p.error is None and self.config.last_modified:
            if p.kind == "new":
                # the page's past, from its Last-Modified: a change-rate observation before any re-crawl
                ago = f.modified_ago(res.headers)
                if ago is not None:
                    hook.observe_history(p.url, now - self._started_wall, ago)
            elif p.kind in ("modified", "unchanged"):  # a re-crawl: when the change it found was made
                changed = p.kind == "modified"
                hook.observe_recrawl(p.url, now, changed, f.modified_ago(res.headers) if changed else None)
        self.controller.report(FetchOutcome(p.url, p.kind, p.relevance, p.children), now)
        if p.seed is not None:  # a redirect of a page we had indexed: its target is a new root
            self.controller.add_seeds([p.seed])
        if p.error == f.REDIRECT:
            # follow it now, as a browser would: the target takes its source's turn (queued, it would wait
            # behind every page with evidence of its own, having none: no anchor, a parent of no content)
            target = p.seed if p.seed is not None else p.children[0].url if p.children else None
            if target is not None and self.controller.claim(target):
                self._follow.append(target)
        self._since_checkpoint += 1

    def _with_engine_retry(self, call: Callable[[], Any]) -> Any:
        """Retry an engine call with capped back-off until it succeeds; None if the robot is stopping."""
        delay = 0.2
        while True:
            try:
                return call()
            except RobotEngineError as exc:
                with self._lock:
                    self.errors["engine"] += 1
                    self._last_engine_error = str(exc)
                logger.warning("engine call failed (retrying in %.1f s): %s", delay, exc)
                if self._stop.wait(delay) and self._abandon.is_set():
                    return None
                delay = min(delay * 2, 5.0)

    # ------------------------------------------------------------------ indexer thread
    def _index_loop(self) -> None:
        """Send documents to the engine in acknowledged batches; write a checkpoint snapshot once every
        document reported before it has been acknowledged (the queue keeps their order)."""
        pending: list[IndexDoc] = []
        try:
            while True:
                item = self._index_q.get()
                items = [item]
                while len(pending) + len(items) < self.config.index_batch * 4:
                    try:
                        items.append(self._index_q.get_nowait())
                    except queue.Empty:
                        break
                for it in items:
                    if isinstance(it, IndexDoc):
                        pending.append(it)
                        continue
                    if not self._send(pending):
                        return  # stopping with the engine down: keep the older, consistent checkpoint
                    pending = []
                    if it is None:
                        return
                    try:
                        self._write_snapshot(it)
                    except OSError as exc:
                        # a full or read-only disk: the crawl goes on, the older checkpoint (whole: atomic
                        # writes) stays; counted, and tried again at the next one
                        with self._lock:
                            self.errors["checkpoint_write"] += 1
                            first = self.errors["checkpoint_write"] == 1
                        (logger.warning if first else logger.debug)("checkpoint not written: %s", exc)
                if len(pending) >= self.config.index_batch or (pending and self._index_q.empty()):
                    if not self._send(pending):
                        return
                    pending = []
        except Exception:
            logger.exception("indexer thread failed")
            with self._lock:
                self.errors["internal"] += 1
        finally:
            with self._lock:
                if self.state == RUNNING:
                    self.state = DONE
            self._done.set()

    def _send(self, docs: list[IndexDoc]) -> bool:
        if not docs:
            return True
        result = self._with_engine_retry(functools.partial(self.engine.index, docs))
        if result is None:
            return False
        with self._lock:
            self.pages_indexed += result.added + result.replaced
            for url, reason in result.rejected:
                logger.info("engine rejected %s: %s", url[:200], reason)
                self.errors["engine_rejected"] += 1
        return True

    # ------------------------------------------------------------------ checkpoint / resume
    @property
    def checkpoint_path(self) -> Path | None:
        d = self.config.state_dir
        return d / CHECKPOINT_FILE if d is not None else None

    def _snapshot(self) -> dict[str, Any]:
        """The crawl state now (consistent: taken under the lock). Written only after the engine has
        acknowledged every document queued before it. URLs handed out but not yet reported are fringe
        documents again in the controller's state, so a resumed robot fetches them again."""
        with self._lock:
            self._since_checkpoint = 0
            return {
                "version": CHECKPOINT_VERSION,
                "name": self.config.name,
                "written": self._wall(),
                "controller": self.controller.state_dict(),
                "known": {
                    u: [k.hash, k.relevance, k.etag, k.last_modified] for u, k in self.processor.known.items()
                },
                "redirect_depth": dict(self._redirect_depth),
                "schemes": dict(self._scheme),
                "counters": {
                    "pages_fetched": self.pages_fetched,
                    "pages_ok": self.pages_ok,
                    "relevance_sum": self.relevance_sum,
                    "errors": dict(self.errors),
                },
            }

    def _save_q(self) -> None:
        """Write the request controller's Q-table to ``config.q_table`` and the change-rate estimates to
        ``config.rates`` (each atomically: temp file + rename)."""
        if self.recrawl_hook is not None and self.config.rates is not None:
            from oasis.robot.rates import save_rates

            with self._lock:  # the processor thread updates the estimates under this lock
                save_rates(self.recrawl_hook, self.config.rates)
        path = self.config.q_table
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:  # the processor thread updates the table under this lock
            self.controller.save_q(path)

    def _write_snapshot(self, state: dict[str, Any]) -> None:
        self._save_q()
        path = self.checkpoint_path
        if path is None:
            return
        with self._lock:
            state["counters"]["pages_indexed"] = self.pages_indexed
        t0 = self._clock()
        write_json_atomic(path, state, compact=True)
        took = self._clock() - t0
        self._next_checkpoint_at = self._clock() + 9 * took  # writing checkpoints: at most ~10% of the time
        self.checkpoints += 1
        logger.debug("checkpoint %d written to %s", self.checkpoints, path)

    def checkpoint(self) -> bool:
        """Write a checkpoint now; only while the robot is not running (the indexer writes them then)."""
        if self.state == RUNNING or self.checkpoint_path is None:
            return False
        self._write_snapshot(self._snapshot())
        return True

    def resume(self) -> bool:
        """Load the last checkpoint, if any; URLs in flight at the crash are re-queued. Before start()."""
        path = self.checkpoint_path
        if path is None or not path.exists():
            return False
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RuntimeError(
                f"cannot read checkpoint {path}: {exc}: move it aside to start the crawl afresh"
            ) from exc
        if not isinstance(state, dict):
            raise RuntimeError(
                f"checkpoint {path} is not a checkpoint (a JSON {type(state).__name__}, not an object): "
                f"move it aside to start the crawl afresh"
            )
        if state.get("version") != CHECKPOINT_VERSION:
            raise RuntimeError(
                f"checkpoint {path} has version {state.get('version')}, expected {CHECKPOINT_VERSION}"
            )
        if "controller" not in state:
            raise RuntimeError(
                f"checkpoint {path} has no 'controller' section (the request controller's state): it cannot "
                f"be resumed; move it aside to start the crawl afresh"
            )
        try:
            self._load_checkpoint(state)
        except (KeyError, TypeError, ValueError) as exc:
            missing = isinstance(exc, KeyError)
            what = f"is missing section {exc.args[0]!r}" if missing else f"is invalid: {exc}"
            raise RuntimeError(
                f"checkpoint {path} {what}: it cannot be resumed; move it aside to start the crawl afresh"
            ) from exc
        logger.info("resumed %s from %s: %d pages fetched", self.config.name, path, self.pages_fetched)
        return True

    def _load_checkpoint(self, state: dict[str, Any]) -> None:
        with self._lock:
            self.controller.load_state(state["controller"])
            self.processor.known = {
                u: Known(k[0], float(k[1]), *k[2:4]) for u, k in state.get("known", {}).items()
            }
            self._redirect_depth = {u: int(d) for u, d in state.get("redirect_depth", {}).items()}
            for host, scheme in state.get("schemes", {}).items():
                self._scheme[host] = scheme
                self.politeness.slot(host, scheme)
            c = state.get("counters", {})
            self.pages_fetched = int(c.get("pages_fetched", 0))
            self.pages_indexed = int(c.get("pages_indexed", 0))
            self.pages_ok = int(c.get("pages_ok", 0))
            self.relevance_sum = float(c.get("relevance_sum", 0.0))
            self.errors = Counter({k: int(v) for k, v in c.get("errors", {}).items()})
