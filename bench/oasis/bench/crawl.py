"""``oasis bench crawl``: pages/s of the live robot against a local replayed web, as ratios against a plain
``requests`` loop and against Scrapy, all crawling the same server in the same run.

The replayed web runs in its own process (``python -m oasis.web``, ``--web process``), so every crawler
reaches it across a process boundary, as crawlers of a real web do; ``--web inline`` serves it from threads
of the benchmark's own process, which the robot and the requests loop then share (not Scrapy).

Rows (each crawls breadth-first-ish from the corpus seed until ``--pages`` pages, robots.txt obeyed):

* requests: one ``requests.Session``, sequential: fetch, parse with :func:`oasis.runtime.html.parse_html`,
  queue new in-scope links (the baseline: what a ten-line crawler does);
* robot-null: our robot with politeness off, scoring and indexing replaced by a no-op in-process engine
  (the runtime's own cost: fetchers, fetcher controller, processor, request controller);
* robot: our robot with politeness off and a real engine (``python -m oasis.engine``) over gRPC: every page
  parsed, scored (Score RPC) and indexed in acknowledged batches (durable: in the engine's write-ahead log);
  the time ends when a read (Stats) has seen them all, so the engine's last Whoosh commit is counted;
* scrapy: Scrapy (installed only into a separate venv under ``~/.cache/oasis-bench``, never a project
  dependency) with the same concurrency, link extraction by its own selectors, no scoring or indexing;
  timed from spider opened to spider closed (building the crawler and stopping the reactor left out, like
  the robot's construction);
* whoosh: raw Whoosh indexing of the pages the requests loop fetched (already parsed; Whoosh's own
  ``StemmingAnalyzer`` schema, one writer, one commit, no fsync): the rate an index alone allows.

``--json-out`` writes ``{"rows": [{"mode", "pages_per_s", ...}]}``; each row's ``runs`` also hold the CPU
seconds of the processes involved in the timed window (``cpu_robot``, ``cpu_engine``, ``cpu_web``,
``cpu_scrapy``, ``cpu_whoosh``; Linux ``/proc``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from oasis.bench._stats import process_cpu_seconds
from oasis.replay.figures import write_figure
from oasis.runtime.files import write_json_atomic
from oasis.runtime.spawn import ServiceProcess, spawn_service

logger = logging.getLogger(__name__)

SCRAPY_VENV = Path.home() / ".cache" / "oasis-bench" / "scrapy-venv"
SCRAPY_VERSION = "scrapy>=2.11"

SPIDER = textwrap.dedent(
    """
    import json, sys, time
    import scrapy
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.linkextractors import LinkExtractor

    seed, host, out = sys.argv[1], sys.argv[2], sys.argv[5]
    pages, concurrency = int(sys.argv[3]), int(sys.argv[4])
    times = {}

    class Bench(scrapy.Spider):
        name = "bench"
        start_urls = [seed]
        extractor = LinkExtractor()

        @classmethod
        def from_crawler(cls, crawler, *args, **kwargs):
            spider = super().from_crawler(crawler, *args, **kwargs)
            crawler.signals.connect(spider.opened, signal=signals.spider_opened)
            crawler.signals.connect(spider.closed_at, signal=signals.spider_closed)
            return spider

        def opened(self, spider):
            times["opened"] = time.monotonic()

        def closed_at(self, spider, reason):
            times["closed"] = time.monotonic()

        def parse(self, response):
            times.setdefault("first", time.monotonic())
            times["last"] = time.monotonic()
            times["n"] = times.get("n", 0) + 1
            for link in self.extractor.extract_links(response):
                if link.url.split("/")[2] == host:
                    yield response.follow(link.url, self.parse)

    process = CrawlerProcess(settings={
        "LOG_LEVEL": "ERROR", "ROBOTSTXT_OBEY": True, "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency, "CONCURRENT_REQUESTS_PER_IP": 0,
        "DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_ENABLED": False, "CLOSESPIDER_PAGECOUNT": pages,
        "TELNETCONSOLE_ENABLED": False, "COOKIES_ENABLED": False, "RETRY_ENABLED": False,
        "DEPTH_PRIORITY": 1, "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    })
    start = time.monotonic()
    process.crawl(Bench)
    process.start()
    end = time.monotonic()
    json.dump({"pages": times.get("n", 0), "seconds": end - start,
               "first_to_last": times.get("last", 0) - times.get("first", 0),
               "setup": times.get("opened", start) - start,
               "open_to_close": times.get("closed", end) - times.get("opened", start),
               "teardown": end - times.get("closed", end)}, open(out, "w"))
    """
)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("crawl", help="robot pages/s vs a plain requests loop and Scrapy on a local web")
    p.add_argument(
        "--corpus", default=None, help="corpus spec (default debian:postgresql-doc-15, else synthetic)"
    )
    p.add_argument("--pages", type=int, default=400, help="pages per crawl")
    p.add_argument("--concurrency", type=int, default=8, help="requests in flight (robot max, Scrapy)")
    p.add_argument(
        "--repeats", type=int, default=1, help="alternate the rows this many times; report medians"
    )
    p.add_argument("--no-scrapy", action="store_true", help="skip Scrapy (no venv, no install)")
    p.add_argument(
        "--web",
        choices=("process", "inline"),
        default="process",
        help="serve the replayed web from its own process (python -m oasis.web; default), or from "
        "threads of this benchmark's process (the old set-up: in-process crawlers share its GIL)",
    )
    p.add_argument("--json-out", type=Path, default=None, help="write the results as JSON here")
    p.add_argument("--plot", type=Path, default=None, help="write a bar chart (PNG) here")
    p.set_defaults(func=run)


def _plain_loop(
    seed: str, host: str, pages: int, keep: list[tuple[str, str, str]] | None = None
) -> tuple[int, float]:
    import requests
    from protego import Protego

    from oasis.runtime.html import parse_html

    session = requests.Session()
    start = time.perf_counter()
    robots = Protego.parse(session.get(f"http://{host}/robots.txt", timeout=10).text)
    queue: deque[str] = deque([seed])
    seen = {seed}
    n = 0
    while queue and n < pages:
        url = queue.popleft()
        if not robots.can_fetch(url, "OasisRobot"):
            continue
        resp = session.get(url, timeout=10)
        n += 1
        if resp.status_code != 200 or "html" not in resp.headers.get("Content-Type", ""):
            continue
        page = parse_html(resp.content, url)
        if keep is not None:
            keep.append((url, page.title, page.text))
        for link in page.links:
            if link.url not in seen and link.url.split("/")[2] == host:
                seen.add(link.url)
                queue.append(link.url)
    return n, time.perf_counter() - start


def _raw_whoosh(pages: list[tuple[str, str, str]], directory: Path) -> tuple[int, float, float]:
    """Index ``(url, title, text)`` pages with Whoosh alone: the engine's fields, Whoosh's analyser.
    Returns pages, seconds, CPU seconds (this process; nothing else runs in it meanwhile)."""
    from whoosh import index as windex
    from whoosh.analysis import StemmingAnalyzer
    from whoosh.fields import ID, STORED, TEXT, Schema

    schema = Schema(
        url=ID(stored=True, unique=True),
        title=TEXT(stored=True, analyzer=StemmingAnalyzer(), field_boost=2.0),
        text=TEXT(stored=True, analyzer=StemmingAnalyzer()),
        fetch_time=STORED,
        relevance=STORED,
    )
    directory.mkdir(parents=True, exist_ok=True)
    cpu0 = time.process_time()
    start = time.perf_counter()
    ix = windex.create_in(str(directory), schema)
    writer = ix.writer(limitmb=256, procs=1)
    for url, title, text in pages:
        writer.add_document(url=url, title=title, text=text, fetch_time=0.0, relevance=0.0)
    writer.commit()
    ix.close()
    return len(pages), time.perf_counter() - start, time.process_time() - cpu0


class _NullEngine:
    """Scores 0 and acknowledges every batch without storing it: isolates the robot's own runtime cost."""

    def score(self, pages: Sequence[tuple[str, str]]) -> list[float]:
        return [0.0] * len(pages)

    def index(self, docs: Sequence[Any]) -> Any:
        from oasis.robot.engine_port import IndexResult

        return IndexResult(len(docs), len(docs), 0, 0, ())

    def close(self) -> None:
        return None


def _robot(
    seed: str,
    host: str,
    pages: int,
    concurrency: int,
    engine_address: str | None,
    pids: dict[str, int] | None = None,
) -> dict[str, Any]:
    """One crawl by the robot; ``pids``: processes whose CPU time in the timed window is reported."""
    from oasis.robot.config import RobotConfig
    from oasis.robot.crawler import Crawler
    from oasis.robot.engine_client import connect_engine
    from oasis.robot.engine_port import EngineLike
    from oasis.robot.scheduling import make_controller

    config = RobotConfig(
        name="bench", politeness=False, max_in_flight=concurrency, max_pages=pages,
        allowed_hosts=frozenset({host}), checkpoint_interval=10**9,
    )  # fmt: skip
    client = connect_engine(engine_address) if engine_address else None
    engine: EngineLike = client if client is not None else _NullEngine()
    crawler = Crawler(config, make_controller("bfs", rng=random.Random(0)), engine)
    try:
        crawler.add_seeds([seed])
        watched = {"robot": os.getpid(), **(pids or {})}
        cpu0 = {name: process_cpu_seconds(pid) for name, pid in watched.items()}
        start = time.perf_counter()
        status = crawler.run(timeout=600)
        crawled = time.perf_counter()
        if client is not None:  # every page searchable, not only durable: the engine commits for a read
            client.document_count(timeout=60)
        seconds = time.perf_counter() - start
        tail = seconds - (crawled - start)  # every page acknowledged (durable) -> every page searchable
        cpu = {
            f"cpu_{name}": round(process_cpu_seconds(pid) - cpu0[name], 2) for name, pid in watched.items()
        }
    finally:
        crawler.close()
        engine.close()
    fc = status.fetcher_controller
    return {
        "pages": status.pages_fetched,
        "seconds": seconds,
        "commit_tail_seconds": round(tail, 3),
        "indexed": status.pages_indexed,
        "starts_per_decision": fc.get("started", 0) / max(1.0, fc.get("decisions", 1)),
        "max_target_in_flight": fc.get("max_target_in_flight", 0),
        "service_rate_per_s": fc.get("service_rate_per_s", 0),
        **cpu,
    }


def _ensure_scrapy() -> Path | None:
    python = SCRAPY_VENV / "bin" / "python"
    if (
        python.exists()
        and subprocess.run([str(python), "-c", "import scrapy"], capture_output=True).returncode == 0
    ):
        return python
    print(f"installing Scrapy into {SCRAPY_VENV} (benchmark only) ...", file=sys.stderr)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(SCRAPY_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", SCRAPY_VERSION], check=True, timeout=900)
    except (subprocess.SubprocessError, OSError) as exc:
        logger.warning("could not install Scrapy: %s", exc)
        return None
    return python


def _scrapy(python: Path, seed: str, host: str, pages: int, concurrency: int) -> dict[str, Any]:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="oasis-scrapy-") as tmp:
        spider = Path(tmp) / "spider.py"
        out = Path(tmp) / "out.json"
        spider.write_text(SPIDER)
        subprocess.run(
            [str(python), str(spider), seed, host, str(pages), str(concurrency), str(out)],
            check=True, cwd=tmp, timeout=600,
        )  # fmt: skip
        data = json.loads(out.read_text())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # Scrapy's process, reaped by subprocess.run
    cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    return {
        "cpu_scrapy": round(cpu, 2),
        # timed like the robot (from its crawler's start to the end of its work): spider opened ->
        # spider closed; building the crawler (loading and importing its components) and stopping the
        # reactor are left out, as the robot's construction is
        "pages": data["pages"], "seconds": data["open_to_close"], "with_setup_seconds": data["seconds"],
        "setup": data["setup"], "teardown": data["teardown"], "crawl_seconds": data["first_to_last"],
    }  # fmt: skip


def _start_engine(workdir: Path) -> ServiceProcess:
    return spawn_service(
        [
            sys.executable, "-m", "oasis.engine", "--name", "bench", "--topic", "databases",
            "--keywords", "sql,query,index,transaction,table", "--index-dir", str(workdir / "index"),
            "--log-level", "WARNING",
        ],
        workdir / "engine.json",
        timeout=60,
        name="benchmark engine",
        cwd=workdir,
    )  # fmt: skip


@contextlib.contextmanager
def _replayed_web(spec: str, mode: str, workdir: Path) -> Iterator[tuple[list[str], int]]:
    """The replayed web the crawlers fetch from: its seed URLs and the pid that serves it.

    ``process``: ``python -m oasis.web`` started like the cluster launcher starts it, so the requests loop,
    the robot and Scrapy all cross the same process boundary to reach the web, as crawlers of a real web
    do. ``inline``: threads of this process (the robot and the requests loop then share one GIL with the
    server they crawl, Scrapy does not)."""
    if mode == "inline":
        from oasis.web.corpus import load_corpus
        from oasis.web.server import ReplayedWeb

        with ReplayedWeb(load_corpus(spec)) as inline:
            yield inline.seeds, os.getpid()
        return
    argv = [sys.executable, "-m", "oasis.web", "--corpus", spec, "--log-level", "WARNING"]
    web = spawn_service(
        argv, workdir / "web.json", timeout=300, name="replayed web", log=workdir / "web.log", cwd=workdir
    )
    try:
        yield [str(s) for s in web.info.get("seeds", [])], web.pid
    finally:
        web.stop(grace=10)


@contextlib.contextmanager
def _sigterm_exits() -> Iterator[None]:
    """SIGTERM raises SystemExit in the main thread while the benchmark runs, so every ``finally`` and
    ``with`` block on the way out runs: the web, engine and Scrapy processes it started are stopped with
    it. Python's default SIGTERM action ends the process at once, which left the web's process running,
    orphaned."""

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def run(args: argparse.Namespace) -> int:
    spec = args.corpus
    if spec is None:
        spec = "debian:postgresql-doc-15" if Path("/usr/share/doc/postgresql-doc-15/html").is_dir() else (
            "synthetic:pages=1500,hosts=1,topics=3,seed=1"
        )  # fmt: skip
    print(f"loading {spec} ...", file=sys.stderr)
    scrapy_python = None if args.no_scrapy else _ensure_scrapy()
    rows: dict[str, list[dict[str, Any]]] = {
        "requests": [], "robot-null": [], "robot": [], "scrapy": [], "whoosh": []
    }  # fmt: skip
    with (
        _sigterm_exits(),
        tempfile.TemporaryDirectory(prefix="oasis-bench-crawl-") as tmp,
        _replayed_web(spec, args.web, Path(tmp)) as (seeds, web_pid),
    ):
        seed = seeds[0]
        host = seed.split("/")[2]
        for r in range(args.repeats):
            print(f"round {r + 1}/{args.repeats}", file=sys.stderr)
            fetched: list[tuple[str, str, str]] = []
            n, s = _plain_loop(seed, host, args.pages, fetched)
            rows["requests"].append({"pages": n, "seconds": s})
            n, s, cpu = _raw_whoosh(fetched, Path(tmp) / f"whoosh{r}")
            rows["whoosh"].append({"pages": n, "seconds": s, "cpu_whoosh": round(cpu, 2)})
            web = {"web": web_pid} if web_pid != os.getpid() else {}
            rows["robot-null"].append(_robot(seed, host, args.pages, args.concurrency, None, web))
            engine_dir = Path(tmp) / f"engine{r}"
            engine_dir.mkdir()
            engine = _start_engine(engine_dir)
            try:
                pids = {**web, "engine": engine.pid}
                rows["robot"].append(_robot(seed, host, args.pages, args.concurrency, engine.address, pids))
            finally:
                engine.stop(grace=30)
            if scrapy_python is not None:
                web_cpu = process_cpu_seconds(web_pid)
                row = _scrapy(scrapy_python, seed, host, args.pages, args.concurrency)
                if web:
                    row["cpu_web"] = round(process_cpu_seconds(web_pid) - web_cpu, 2)
                rows["scrapy"].append(row)
    result: dict[str, Any] = {
        "corpus": spec,
        "pages": args.pages,
        "concurrency": args.concurrency,
        "repeats": args.repeats,
        "cpus": os.cpu_count(),
        "web": args.web,
        "web_pid": web_pid,
        "bench_pid": os.getpid(),
        "rows": [],
    }
    base = _median([x["pages"] / x["seconds"] for x in rows["requests"]])
    print(
        f"\ncrawl benchmark: {spec}, {args.pages} pages, concurrency {args.concurrency}, "
        f"{args.repeats} round(s); web served from "
        + ("its own process" if args.web == "process" else "this process (inline)")
    )
    print(f"{'mode':<12} {'pages':>6} {'seconds':>8} {'pages/s':>8} {'/requests':>9}  work per page")
    work = {
        "requests": "fetch + parse_html, sequential",
        "robot-null": "fetch + parse_html + controllers (no engine)",
        "robot": "fetch + parse_html + Score RPC + acked Index RPC",
        "scrapy": "fetch + Scrapy link extraction",
        "whoosh": "raw Whoosh indexing of the fetched pages (no fetch, no parse, no fsync)",
    }
    by_mode: dict[str, dict[str, Any]] = {}
    for name, runs in rows.items():
        if not runs:
            continue
        rate = _median([x["pages"] / x["seconds"] for x in runs])
        entry = {
            "mode": name,
            "pages_per_s": round(rate, 2),
            "ratio_vs_requests": round(rate / base, 3),
            "runs": runs,
            "work": work[name],
        }
        result["rows"].append(entry)
        by_mode[name] = entry
        pages = int(_median([x["pages"] for x in runs]))
        secs = _median([x["seconds"] for x in runs])
        print(f"{name:<12} {pages:>6} {secs:>8.2f} {rate:>8.1f} {rate / base:>8.2f}x  {work[name]}")
    if "scrapy" in by_mode:
        for name in ("robot", "robot-null"):
            by_mode[name]["ratio_vs_scrapy"] = round(
                by_mode[name]["pages_per_s"] / by_mode["scrapy"]["pages_per_s"], 3
            )
        print(
            f"robot / scrapy = {by_mode['robot']['ratio_vs_scrapy']:.2f}x, "
            f"robot-null / scrapy = {by_mode['robot-null']['ratio_vs_scrapy']:.2f}x"
        )
    by_mode["robot"]["ratio_vs_whoosh"] = round(
        by_mode["robot"]["pages_per_s"] / by_mode["whoosh"]["pages_per_s"], 3
    )
    print(f"robot / raw whoosh indexing = {by_mode['robot']['ratio_vs_whoosh']:.2f}x")
    if args.json_out is not None:
        write_json_atomic(args.json_out, result, indent=1)
    if args.plot is not None:
        _plot(result, args.plot)
    return 0


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [row["mode"] for row in result["rows"]]
    rates = [row["pages_per_s"] for row in result["rows"]]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    bars = ax.bar(names, rates, color=["#999999", "#6a9fd8", "#1f5fa8", "#d08c3c", "#6aa84f"][: len(names)])
    for bar, rate in zip(bars, rates, strict=True):
        ax.annotate(f"{rate:.0f}", (bar.get_x() + bar.get_width() / 2, rate), ha="center", va="bottom")
    ax.set_ylabel("pages / s (median)")
    ax.set_title(
        f"{result['corpus']}: {result['pages']} pages, concurrency {result['concurrency']}", fontsize=9
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_figure(fig, path, dpi=100)
