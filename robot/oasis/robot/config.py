"""The robot's one configuration object (frozen, keyword-only, validated)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from oasis.robot.scheduling import SHIPPED, ControllerConfig

# Links whose URL path ends with one of these (any case) name no HTML page and are never requested: images,
# styles, scripts, fonts, media, archives and binaries (Nutch's default suffix-urlfilter, widened), documents
# and data the robot cannot index (PDF, office files, JSON, XML feeds), and source text (a Sphinx site's
# ``_sources/*.rst.txt``, ``.py`` and ``.ipynb`` downloads: on the dask docs 1,009 of 2,092 requests were
# for these). The query is not part of the path: ``/get.php?f=a.png`` is requested, ``/a.png?v=2`` is not.
NOT_PAGE_SUFFIXES: tuple[str, ...] = (
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".svg", ".svgz", ".webp", ".tif", ".tiff", ".eps",
    ".psd", ".wmf", ".css", ".js", ".mjs", ".map", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp3",
    ".mp4", ".m4a", ".m4v", ".avi", ".mov", ".mpg", ".mpeg", ".wav", ".ogg", ".oga", ".ogv", ".webm",
    ".flac", ".wmv", ".swf", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".tar", ".jar", ".whl",
    ".egg", ".deb", ".rpm", ".exe", ".dmg", ".iso", ".bin", ".msi", ".apk", ".so", ".dll", ".pdf", ".ps",
    ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".rtf", ".epub", ".csv",
    ".json", ".xml", ".rss", ".atom", ".txt", ".py", ".ipynb",
)  # fmt: skip

DEFAULT_USER_AGENT = "OasisRobot/0.1 (+https://example.invalid/oasis; topic-specific research crawler)"
ROBOTS_AGENT = "OasisRobot"  # the product token matched against robots.txt User-agent lines
LEARNING_POLICY = "whittle"  # the one request controller that learns a Q-table (save_q / load_q)


@dataclass(frozen=True, kw_only=True)
class RobotConfig:
    """Everything the live robot needs besides its collaborators (engine client, clock, RNG).

    Politeness: at most one request in flight per host, and the next request to a host starts no sooner than
    ``max(min_delay, Crawl-delay)`` seconds after the previous one to that host *finished* (so the gap
    between two requests as the server sees them is never below the delay). ``politeness=False`` drops the
    delay and the per-host limit (benchmarks against a local server only); robots.txt is still obeyed.

    Learning (policy ``whittle`` only): ``controller`` holds the request controller's parameters;
    ``q_table`` is the robot's own Q-table file, loaded at start when it exists and written atomically at
    every checkpoint and on stop; ``initial_q_table`` (a shipped or offline-trained table, e.g. from
    ``oasis replay --save-q``) is the starting table of a robot that has no table of its own yet.
    """

    name: str = "robot"
    user_agent: str = DEFAULT_USER_AGENT
    robots_agent: str = ROBOTS_AGENT
    policy: str = "whittle"
    politeness: bool = True
    min_delay: float = 1.0  # seconds between requests to one host
    max_crawl_delay: float = 30.0  # a robots.txt Crawl-delay above this is clamped to it
    max_in_flight: int = 8  # upper bound of the fetcher controller's target
    per_host_in_flight: int = 1  # with politeness on
    connect_timeout: float = 5.0
    read_timeout: float = 10.0  # between two bytes
    total_timeout: float = 30.0  # whole response, so a slowloris server cannot hold a fetcher forever
    max_bytes: int = 2 * 1024 * 1024  # DECODED body bytes kept per response; longer bodies are cut
    max_robots_bytes: int = 512 * 1024  # robots.txt beyond this is cut (as Google does at 500 KiB)
    max_redirects: int = 5  # redirect hops followed from one requested URL
    robots_retry: float = 60.0  # robots.txt unavailable (5xx, timeout): retry the host after this
    robots_max_failures: int = 3  # then give the host up
    max_backoff: float = 600.0  # cap of one back-off after 429/503
    refuse_private: bool = False  # refuse hosts resolving to private/loopback addresses
    allowed_hosts: frozenset[str] | None = None  # host[:port] in scope; None = any host
    min_relevance: float = 0.0  # pages scored below this are not indexed (still reported to the controller)
    # a first retrieval's Last-Modified is a change-rate observation (WhittleRecrawl.observe_history); off
    # for servers whose dates say nothing of their pages
    last_modified: bool = True
    content_types: tuple[str, ...] = ("text/html", "application/xhtml+xml")
    # links to URLs whose path ends with one of these are not followed (NOT_PAGE_SUFFIXES; () follows all)
    skip_suffixes: tuple[str, ...] = NOT_PAGE_SUFFIXES
    max_pages: int = 0  # 0 = no limit
    # memory and disk bounds (issue 15: hostile webs)
    max_url_length: int = 2048  # links longer than this are dropped
    max_links: int = 1000  # links taken from one page (the rest are not even resolved)
    max_frontier: int = 200_000  # located, unfetched URLs kept; beyond it the least valuable are forgotten
    per_ip_in_flight: int = 2  # requests in flight to one IP address, over all its hosts (with politeness)
    ip_interval: float | None = None  # seconds between request starts to one IP; None: min_delay / 2
    robots_ttl: float = 86400.0  # robots.txt is fetched again after this (RFC 9309 2.4: 24 h) ...
    robots_min_ttl: float = 60.0  # ... or after its Cache-Control max-age, but never sooner than this
    pages_per_second: float = 0.0  # the page budget per time unit (0 = no budget beyond politeness)
    checkpoint_interval: int = 100  # pages processed between checkpoints
    index_batch: int = 32  # documents per acknowledged Index batch
    index_flush_seconds: float = 2.0  # ... or sooner when the oldest unsent document is this old
    max_response_queue: int = 32  # responses in flight + waiting for the processor (memory bound)
    target_queue: int = 2  # the fetcher controller's target response-queue length
    process_batch: int = 16  # responses the processor takes at once (one Score call)
    engine_timeout: float = 30.0
    state_dir: Path | None = None
    controller: ControllerConfig = field(default_factory=lambda: SHIPPED)  # the robot as shipped
    q_table: Path | None = None  # the robot's own Q-table: loaded if present, saved as it learns
    initial_q_table: Path | None = None  # the table to start from while q_table does not exist yet
    rates: Path | None = None  # the re-crawl change-rate estimates: loaded if present, saved with q_table
    initial_rates: Path | None = None  # estimates to start from while ``rates`` does not exist yet
    extra: dict[str, float] = field(default_factory=dict)  # controller config passthrough

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("name must not be empty")
        if not self.user_agent or not self.robots_agent:
            raise ValueError("user_agent and robots_agent must not be empty")
        for attr in ("min_delay", "max_crawl_delay", "robots_retry", "max_backoff", "robots_min_ttl"):
            if getattr(self, attr) < 0:
                raise ValueError(f"{attr} must be >= 0, got {getattr(self, attr)}")
        for attr in (
            "connect_timeout",
            "read_timeout",
            "total_timeout",
            "index_flush_seconds",
            "engine_timeout",
            "robots_ttl",
        ):
            if getattr(self, attr) <= 0:
                raise ValueError(f"{attr} must be > 0, got {getattr(self, attr)}")
        for attr in (
            "max_in_flight",
            "per_host_in_flight",
            "max_bytes",
            "max_robots_bytes",
            "robots_max_failures",
            "checkpoint_interval",
            "index_batch",
            "max_response_queue",
            "process_batch",
            "max_url_length",
            "max_links",
            "max_frontier",
            "per_ip_in_flight",
        ):
            if getattr(self, attr) < 1:
                raise ValueError(f"{attr} must be >= 1, got {getattr(self, attr)}")
        if self.ip_interval is not None and self.ip_interval < 0:
            raise ValueError(f"ip_interval must be >= 0, got {self.ip_interval}")
        if not (self.pages_per_second >= 0 and self.pages_per_second < float("inf")):
            raise ValueError(f"pages_per_second must be finite and >= 0, got {self.pages_per_second}")
        if self.max_redirects < 0 or self.max_pages < 0 or self.target_queue < 0:
            raise ValueError("max_redirects, max_pages and target_queue must be >= 0")
        if not 0.0 <= self.min_relevance <= 1.0:
            raise ValueError("min_relevance must be in [0, 1]")
        if self.max_response_queue < self.max_in_flight:
            raise ValueError("max_response_queue must be >= max_in_flight")
        if not self.content_types:
            raise ValueError("content_types must not be empty")
        if any(not s.startswith(".") or s != s.lower() for s in self.skip_suffixes):
            raise ValueError("skip_suffixes must be lower-case suffixes starting with '.', e.g. '.png'")
        if self.policy != LEARNING_POLICY and (self.q_table is not None or self.initial_q_table is not None):
            raise ValueError(
                f"policy {self.policy!r} learns no Q-table; q_table and initial_q_table need policy "
                f"{LEARNING_POLICY!r}"
            )

    @property
    def body_memory_bound(self) -> int:
        """Worst-case bytes of response bodies held at once: requests in flight plus queued responses never
        exceed ``max_response_queue``, the processor holds one batch, robots.txt requests hold their cap."""
        return (self.max_response_queue + self.process_batch) * self.max_bytes + 2 * self.max_robots_bytes

    @property
    def host_concurrency(self) -> int:
        return self.per_host_in_flight if self.politeness else self.max_in_flight

    @property
    def ip_concurrency(self) -> int:
        return self.per_ip_in_flight if self.politeness else self.max_in_flight

    @property
    def ip_gap(self) -> float:
        """Seconds between the starts of two requests to one IP address (0 without politeness)."""
        if not self.politeness:
            return 0.0
        return self.min_delay / 2 if self.ip_interval is None else self.ip_interval

    @property
    def delay(self) -> float:
        return self.min_delay if self.politeness else 0.0
