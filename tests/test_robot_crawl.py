"""The live robot end to end: real HTTP hosts on 127.0.0.1, a real engine over gRPC, the real request
controller. Politeness and robots.txt are checked from the servers' own access logs."""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path

import pytest
from disk_testmounts import mount_skip_reason, tmpfs
from robot_testweb import (
    LocalEngine,
    LocalWeb,
    endless_chunked,
    gzip_bomb,
    html,
    page,
    raw,
    redirect,
    slowloris,
)

from oasis.robot import fetcher as f
from oasis.robot.config import RobotConfig
from oasis.robot.crawler import Crawler, CrawlStatus
from oasis.robot.engine_client import connect_engine
from oasis.robot.scheduling import Discovered, FetchOutcome, make_controller
from oasis.runtime.clients import EngineClient
from oasis.v1 import engine_pb2, engine_pb2_grpc

DELAY = 0.05


def min_gap(web: LocalWeb) -> float:
    times = sorted(a.t for a in web.log)
    return min((b - a for a, b in itertools.pairwise(times)), default=float("inf"))


def search(engine: LocalEngine, query: str) -> list[str]:
    import grpc

    with grpc.insecure_channel(engine.address) as ch:
        reply = engine_pb2_grpc.EngineStub(ch).Search(
            engine_pb2.SearchRequest(query=query, limit=10), timeout=10
        )
    return [h.url for h in reply.hits]


def crawl(crawler: Crawler, client: EngineClient, seed: str, timeout: float = 60.0) -> CrawlStatus:
    """Crawl from ``seed`` until done (or ``timeout``), then close the crawler and its engine client."""
    try:
        crawler.add_seeds([seed])
        return crawler.run(timeout=timeout)
    finally:
        crawler.close()
        client.close()


def make_crawler(engine: LocalEngine, tmp_path: Path, **overrides: object) -> tuple[Crawler, EngineClient]:
    cfg: dict[str, object] = {
        "min_delay": DELAY,
        "max_in_flight": 4,
        "read_timeout": 1.0,
        "total_timeout": 2.0,
        "connect_timeout": 1.0,
        "state_dir": tmp_path / "state",
        "checkpoint_interval": 5,
        "index_flush_seconds": 0.2,
        "max_bytes": 256 * 1024,
    }
    cfg.update(overrides)
    config = RobotConfig(**cfg)  # type: ignore[arg-type]
    client = connect_engine(engine.address, timeout=10)
    return Crawler(config, make_controller("whittle", rng=random.Random(1)), client), client


def test_crawl_two_hosts_hostile_pages_polite_and_robots(engine: LocalEngine, tmp_path: Path) -> None:
    a, b = LocalWeb().start(), LocalWeb().start()
    try:
        a.routes.update(
            {
                "/robots.txt": page(
                    "User-agent: *\nDisallow: /private/\nCrawl-delay: 0.1\n", ctype="text/plain"
                ),
                "/": page(
                    html(
                        "Database home",
                        "SQL databases and query planning",
                        [
                            "/sql.html|SQL query language",
                            "/private/secret.html|secret",
                            "/moved|moved",
                            "/loop1|loop",
                            "/refresh|refresh",
                            "/rloop1|refresh loop",
                            "/c0|refresh chain",
                            "/_images/logo.png|logo",
                            "/_sources/sql.rst.txt|sql source",
                            "/bomb|bomb",
                            "/chunked|chunked",
                            "/slow|slow",
                            "/pdf|pdf",
                            "/binary|binary",
                            "/gone|gone",
                            "/boom|boom",
                            "/ftp|ftp",
                            "mailto:x@example.org|mail",
                            "ftp://example.org/file|ftp link",
                            b.url("/") + "|other host",
                            "http://outside.invalid/|outside",
                        ],
                    )
                ),
                "/sql.html": page(html("SQL", "SQL query transaction index table database", ["/|home"])),
                "/private/secret.html": page(html("Secret", "never fetch me")),
                "/moved": redirect("/target.html", 301),
                "/target.html": page(html("Target", "database transaction isolation levels")),
                "/loop1": redirect("/loop2"),
                "/loop2": redirect("/loop1"),
                # meta refresh: a stub whose target is followed (as a 3xx), and a loop of two stubs
                "/refresh": page('<meta http-equiv="refresh" content="0; url=/refreshed.html"><p>moved</p>'),
                "/refreshed.html": page(html("Refreshed", "serializable snapshot isolation database sql")),
                "/rloop1": page('<meta http-equiv="refresh" content="1; url=/rloop2">'),
                "/rloop2": page('<meta http-equiv="refresh" content="1; URL=\'/rloop1\'">'),
                **{
                    f"/c{i}": page(f'<meta http-equiv="refresh" content="0; url=/c{i + 1}">')
                    for i in range(7)
                },
                "/c7": page(html("Chain end", "chain end database")),
                "/bomb": gzip_bomb(32),
                "/chunked": endless_chunked,
                "/slow": slowloris(10.0, 0.3),
                "/pdf": page("%PDF-1.4 ...", ctype="application/pdf"),
                "/binary": raw(bytes(range(256)) * 64),
                "/gone": page("gone", status=410),
                "/boom": page("server error", status=500),
                "/ftp": redirect("ftp://example.org/file"),
            }
        )
        b.routes.update(
            {
                "/robots.txt": page("not found", status=404, ctype="text/plain"),
                "/": page(
                    html(
                        "B home", "index scans and btree indexes", ["/b1.html|btree index", "/hash.html|hash"]
                    )
                ),
                "/hash.html": page(html("Hash", "hash index database table sql"), X_Robots_Tag="noindex"),
                "/b1.html": page(
                    html("Btree", "btree index database table sql", ["/b2.html|more", "/b3.html|other"]),
                    X_Robots_Tag="nofollow",  # its links are not followed: b2 is never requested
                ),
                "/b2.html": page(html("Gin", "gin index database table sql")),
                "/b3.html": page(html("Brin", "brin index database table sql")),
            }
        )
        crawler, client = make_crawler(engine, tmp_path, allowed_hosts=frozenset({a.host, b.host}))
        try:
            crawler.add_seeds([a.url("/")])
            status = crawler.run(timeout=60)
        finally:
            crawler.close()
            client.close()

        assert status.state == "done"
        # robots.txt obeyed, fetched first on each host
        assert "/private/secret.html" not in a.paths()
        assert a.paths()[0] == "/robots.txt" and b.paths()[0] == "/robots.txt"
        assert status.errors[f.ROBOTS_DISALLOWED] == 1
        # politeness: Crawl-delay 0.1 on a, min_delay on b, measured by the servers
        assert min_gap(a) >= 0.1
        assert min_gap(b) >= DELAY
        # every hostile page recorded by kind, none stopped the crawl
        for kind in (f.TOO_LARGE, f.TIMEOUT, f.NON_HTML, f.HTTP_5XX, f.BAD_REDIRECT, f.REDIRECT):
            assert status.errors.get(kind, 0) >= 1, (kind, status.errors)
        assert status.errors[f.TOO_LARGE] >= 2  # gzip bomb and endless chunked
        assert status.errors[f.NON_HTML] >= 2  # the PDF, and the binary data served as text/html
        # redirect target crawled; the loop ended (each URL fetched once)
        assert a.paths().count("/target.html") == 1
        assert a.paths().count("/loop1") == 1 and a.paths().count("/loop2") == 1
        # a meta refresh stub is a redirect: its target crawled and indexed, the stub not; the loop ended
        assert a.paths().count("/refreshed.html") == 1
        assert a.paths().count("/rloop1") == 1 and a.paths().count("/rloop2") == 1
        # a chain of stubs ends at max_redirects (5) hops, as a chain of 3xx does
        assert [f"/c{i}" in a.paths() for i in range(8)] == [True] * 6 + [False] * 2
        assert status.errors[f.TOO_MANY_REDIRECTS] >= 1
        # links whose suffix names no page (an image, a Sphinx source) are never requested
        assert not {"/_images/logo.png", "/_sources/sql.rst.txt"} & set(a.paths())
        assert status.links_skipped["not_a_page"] >= 2  # counted, and shown in oasis crawl's summary
        assert "outside.invalid" not in " ".join(x.host for x in a.log + b.log)
        # the engine answers with the right pages
        assert a.url("/sql.html") in search(engine, "transaction")
        assert b.url("/b1.html") in search(engine, "btree")
        # X-Robots-Tag as the meta tag: fetched but not indexed (noindex), links not followed (nofollow)
        assert "/hash.html" in b.paths() and b.url("/hash.html") not in search(engine, "hash")
        assert "/b2.html" not in b.paths() and "/b3.html" not in b.paths()
        assert a.url("/target.html") in search(engine, "isolation")
        assert search(engine, "serializable") == [a.url("/refreshed.html")]
        assert a.url("/refresh") not in search(engine, "moved")
        assert status.pages_indexed >= 5
    finally:
        a.stop()
        b.stop()


def test_429_storm_trap_and_slow_host_do_not_stop_the_rest(engine: LocalEngine, tmp_path: Path) -> None:
    """One host answers 429 to everything, one is a link trap, one is a slowloris; the good host is crawled
    completely meanwhile, the throttled host is backed off by its Retry-After, the trap ends at the budget."""
    storm, trap, slow, good = (LocalWeb().start() for _ in range(4))
    try:
        for w in (storm, trap, slow, good):
            w.routes["/robots.txt"] = page("User-agent: *\nDisallow:\n", ctype="text/plain")
        storm.routes["/"] = page(html("storm", "sql", ["/a|a", "/b|b"]))
        storm.prefixes["/"] = page("slow down", status=429, Retry_After="1")
        trap.prefixes["/t"] = lambda h: page(
            html("trap", "sql table", [f"{h.path}x|deeper", f"{h.path}y|wider"])
        )(h)
        slow.prefixes["/"] = slowloris(30.0, 0.3)
        links = [storm.url("/") + "|storm", trap.url("/t") + "|trap", slow.url("/") + "|slow"]
        links += [f"/g{i}.html|sql page {i}" for i in range(12)]
        good.routes["/"] = page(html("good", "sql database", links))
        for i in range(12):
            good.routes[f"/g{i}.html"] = page(html(f"g{i}", f"sql database table {i}"))
        hosts = frozenset(w.host for w in (storm, trap, slow, good))
        crawler, client = make_crawler(
            engine,
            tmp_path,
            allowed_hosts=hosts,
            max_pages=60,
            max_in_flight=4,
            per_ip_in_flight=4,  # four hosts on 127.0.0.1: this test is about each host on its own
            total_timeout=5.0,
            read_timeout=1.0,
        )
        try:
            crawler.add_seeds([good.url("/")])
            status = crawler.run(timeout=90)
        finally:
            crawler.close()
            client.close()
        assert status.state == "done"
        # the good host was crawled completely
        assert {f"/g{i}.html" for i in range(12)} <= set(good.paths())
        # the storm host: each 429 pushed the next request back by Retry-After (1 s)
        storm_times = [a.t for a in storm.log if a.path not in ("/robots.txt", "/")]  # all answered 429
        gaps = [b - a for a, b in itertools.pairwise(storm_times)]
        assert gaps and min(gaps) >= 1.0
        assert status.errors.get(f.TOO_MANY_REQUESTS, 0) >= 2
        # the trap was cut by the page budget, the slowloris by the total timeout
        assert status.pages_fetched == 60
        assert status.errors.get(f.TIMEOUT, 0) >= 1
    finally:
        for w in (storm, trap, slow, good):
            w.stop()


def test_recrawl_detects_modifications_and_updates_the_engine(engine: LocalEngine, tmp_path: Path) -> None:
    """With the ephemeral-content Whittle index as the re-crawl hook, retrieved pages come due again; a page
    that changes is reported ``modified`` and re-indexed, an unchanged one ``unchanged``."""
    from oasis.robot.scheduling.recrawl import WhittleRecrawl

    web = LocalWeb().start()
    version = itertools.count()
    try:
        web.routes["/robots.txt"] = page("User-agent: *\nDisallow:\n", ctype="text/plain")
        web.routes["/"] = page(
            html("home", "sql database", ["/news.html|sql news", "/static.html|sql static"])
        )
        web.routes["/news.html"] = lambda h: page(html("news", f"sql transaction edition{next(version)}"))(h)
        web.routes["/static.html"] = page(html("static", "sql table index"))
        config = RobotConfig(min_delay=DELAY, max_pages=14, allowed_hosts=frozenset({web.host}))
        client = connect_engine(engine.address, timeout=10)
        controller = make_controller(
            "whittle", rng=random.Random(3), recrawl_index=WhittleRecrawl(period=0.05)
        )
        crawler = Crawler(config, controller, client)
        status = crawl(crawler, client, web.url("/"))
        assert status.pages_fetched == 14
        assert status.kinds["modified"] >= 1 and status.kinds["unchanged"] >= 1
        news = web.paths().count("/news.html")
        assert news >= 2
        # the engine holds the latest edition the robot fetched
        assert search(engine, f"edition{news - 1}") == [web.url("/news.html")]
        assert search(engine, "edition0") == []  # the first edition was replaced
    finally:
        web.stop()


def test_recall_estimate_comes_from_the_controller_and_old_estimates_are_ignored(
    engine: LocalEngine, tmp_path: Path
) -> None:
    """status().recall_estimate is the held pages' relevance / (that + the controller's fringe_relevance()
    times the calibration, 1 before any first retrieval: oasis.robot.recall); checkpoints no longer carry the
    crawler's own "estimates", and an old checkpoint's are ignored."""
    ctl = make_controller("whittle", rng=random.Random(1))
    ctl.add_seeds(["http://a.test/"])
    (url,) = ctl.next_batch(1, 0.0)
    ctl.report(
        FetchOutcome(url, "new", 0.5, [Discovered("http://a.test/x"), Discovered("http://a.test/y")]), 0.0
    )
    assert ctl.fringe_relevance() == pytest.approx(1.0)  # two documents, each estimated at its parent's 0.5
    old = {
        "version": 1,
        "name": "robot",
        "controller": ctl.state_dict(),
        "known": {url: ["h", 0.5, "", ""]},
        "estimates": {"http://a.test/x": 0.5, "http://a.test/y": 0.5, "http://stale.test/": 7.0},
        "counters": {"pages_fetched": 1, "pages_ok": 1, "relevance_sum": 0.5, "errors": {}},
    }
    crawler, client = make_crawler(engine, tmp_path)
    try:
        assert crawler.checkpoint_path is not None
        crawler.checkpoint_path.parent.mkdir(parents=True)
        crawler.checkpoint_path.write_text(json.dumps(old), encoding="utf-8")
        assert crawler.resume()
        status = crawler.status()
        assert status.frontier_size == 2
        assert status.recall_estimate == pytest.approx(0.5 / (0.5 + 1.0))
        assert crawler.checkpoint()
        written = json.loads(crawler.checkpoint_path.read_text(encoding="utf-8"))
        assert "estimates" not in written
        assert [d[:2] for d in written["controller"]["docs"]] == [d[:2] for d in old["controller"]["docs"]]
    finally:
        client.close()


def test_every_first_retrieval_calibrates_the_recall_estimate(engine: LocalEngine, tmp_path: Path) -> None:
    web = LocalWeb().start()
    try:
        links = [f"/p{i}.html|page {i}" for i in range(6)]
        web.routes["/"] = page(html("Databases", "sql query index transaction database", links))
        for i in range(6):
            text = "gardening tomatoes soil" if i else "sql index"
            web.routes[f"/p{i}.html"] = page(html(f"Page {i}", text))
        crawler, client = make_crawler(engine, tmp_path)
        status = crawl(crawler, client, web.url("/"))
    finally:
        web.stop()
    assert status.kinds.get("new") == 7
    # each located page, the seed too, told the calibration what it was estimated at and what it held
    assert crawler._fringe_cal.observed == 7
    assert crawler._fringe_cal.ratio < 1.0  # five of the six children of a relevant page are not relevant
    assert status.frontier_size == 0 and status.recall_estimate == pytest.approx(1.0)


@pytest.mark.skipif(mount_skip_reason() is not None, reason=str(mount_skip_reason()))
def test_a_full_disk_under_the_state_folder_does_not_stop_the_crawl(
    engine: LocalEngine, tmp_path: Path
) -> None:
    """Before: the first checkpoint that hit a full disk ended the indexer thread ("indexer thread failed"),
    the crawl stopped and nothing after it reached the engine. Now: the checkpoint is counted as not written
    (``checkpoint_write``), the crawl goes on and every fetched page is indexed; the state folder holds no
    half-written file (real tmpfs, 64 KiB filled to its last page)."""
    web = LocalWeb().start()
    try:
        web.routes["/robots.txt"] = page("User-agent: *\nDisallow:\n", ctype="text/plain")
        links = [f"/p{i}.html|sql page {i}" for i in range(24)]
        web.routes["/"] = page(html("home", "sql database", links))
        for i in range(24):
            web.routes[f"/p{i}.html"] = page(html(f"page {i}", f"sql table index number{i}"))
        with tmpfs(tmp_path / "disk", "size=64k") as disk:
            state = disk / "state"
            state.mkdir()
            stat = os.statvfs(disk)
            (disk / "filler").write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize - 4096))
            crawler, client = make_crawler(
                engine, tmp_path, state_dir=state, checkpoint_interval=3, allowed_hosts=frozenset({web.host})
            )
            status = crawl(crawler, client, web.url("/"))
            assert status.pages_fetched == 25
            assert status.errors.get("checkpoint_write", 0) >= 1
            assert status.errors.get("internal", 0) == 0
            assert crawler.pages_indexed == 25  # every page reached the engine after the failed checkpoints
            leftovers = [p.name for p in state.iterdir()]
            assert all(not name.startswith(".") for name in leftovers), leftovers  # no temp file left
        assert search(engine, "number23") == [web.url("/p23.html")]
    finally:
        web.stop()
