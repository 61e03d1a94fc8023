"""The robot PROCESS (``python -P -m oasis.robot``) against a hostile web served on 127.0.0.1, with a real
engine over gRPC: gzip bombs, 10 MB responses (declared and chunked), an endless chunked response, a
calendar link trap, redirect loops and redirects to ``file:``/``data:``/``mailto:``, pages in non-UTF-8
charsets, malformed HTML, a huge robots.txt and a malformed (binary) one, a host whose every page trickles
(slowloris). Its peak resident memory (``VmHWM``) is measured; robots.txt, the one-request-per-host rule and
the rest of the crawl are checked from the servers' own access logs. Also: ``--refuse-private``, and bad
gRPC input to the Robot service."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from robot_testweb import LocalEngine, LocalWeb, endless_chunked, gzip_bomb, html, page, redirect, send

from oasis.runtime.service import MAX_MESSAGE_BYTES
from oasis.runtime.spawn import spawn_service, stop_process
from oasis.v1 import engine_pb2, engine_pb2_grpc, robot_pb2, robot_pb2_grpc

MiB = 1024 * 1024
GOOD = 10  # on-topic pages per well-behaved part of each host
SLOW_PAGES = 3
SLOW_SECONDS = 1.5


def proc_status(pid: int, field: str) -> int:
    """A field of /proc/PID/status (``VmHWM``/``VmRSS`` in kB, ``Threads``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def start_robot(tmp_path: Path, engine: LocalEngine, *flags: str) -> tuple[subprocess.Popen[bytes], str]:
    cmd = [
        sys.executable, "-m", "oasis.robot", "--name", "hostile", "--engine", engine.address,
        "--state-dir", str(tmp_path / "state"), "--log-level", "ERROR", *flags,
    ]  # fmt: skip
    robot = spawn_service(cmd, tmp_path / "robot.json", timeout=30, name="robot", cwd=tmp_path)
    return robot.process, robot.address


def stop_robot(proc: subprocess.Popen[bytes]) -> None:
    stop_process(proc, grace=30)


def robot_status(address: str) -> robot_pb2.RobotStatus:
    with grpc.insecure_channel(address) as ch:
        return robot_pb2_grpc.RobotStub(ch).Status(robot_pb2.StatusRequest(), timeout=5)


def wait_until_done(address: str, *, seconds: float) -> robot_pb2.RobotStatus:
    """The robot's status once its crawl is done; fails the test with the last status after ``seconds``."""
    deadline = time.monotonic() + seconds
    while (status := robot_status(address)).state != "done":
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    return status


def search(engine: LocalEngine, query: str) -> list[engine_pb2.Hit]:
    with grpc.insecure_channel(engine.address) as ch:
        reply = engine_pb2_grpc.EngineStub(ch).Search(
            engine_pb2.SearchRequest(query=query, limit=50), timeout=10
        )
    return list(reply.hits)


def ten_mb_chunked(h: BaseHTTPRequestHandler) -> None:
    """10 MB of HTML in 64 KiB chunks, no Content-Length (a finite but huge page)."""
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    chunk = b"<p>" + b"sql " * 16384 + b"</p>"
    for _ in range(10 * MiB // len(chunk) + 1):
        h.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
    h.wfile.write(b"0\r\n\r\n")


def ten_mb_declared(h: BaseHTTPRequestHandler) -> None:
    send(h, 200, b"<p>" + b"x" * (10 * MiB) + b"</p>", "text/html")


def calendar(h: BaseHTTPRequestHandler) -> None:
    """/cal/YYYY-MM links to the previous and next month and the next year: an infinite link trap."""
    m = re.fullmatch(r"/cal/(\d+)-(\d+)", h.path)
    if m is None:
        send(h, 404, b"no", "text/plain")
        return
    y, mo = int(m.group(1)), int(m.group(2))
    nxt = (y + mo // 12, mo % 12 + 1)
    prv = (y - (mo == 1), (mo - 2) % 12 + 1)
    links = [f"/cal/{a}-{b:02d}|month" for a, b in (nxt, prv, (y + 1, mo))]
    page(html(f"Calendar {y}-{mo:02d}", "calendar events month", links))(h)


def charset_page(title: str, text: str, encoding: str, how: str) -> Callable[[BaseHTTPRequestHandler], None]:
    meta = f'<meta charset="{encoding}">' if how == "meta" else ""
    body = f"<html><head>{meta}<title>{title}</title></head><body><p>{text}</p></body></html>"
    ctype = f"text/html; charset={encoding}" if how == "header" else "text/html"
    data = body.encode(encoding)
    return lambda h: send(h, 200, data, ctype)


class Tracked:
    """A route wrapper that records how many requests to its host were being answered at once."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.spans: list[tuple[float, float]] = []
        self._lock = threading.Lock()

    def wrap(
        self, route: Callable[[BaseHTTPRequestHandler], None]
    ) -> Callable[[BaseHTTPRequestHandler], None]:
        def run(h: BaseHTTPRequestHandler) -> None:
            with self._lock:
                self.now += 1
                self.peak = max(self.peak, self.now)
            t0 = time.monotonic()
            try:
                route(h)
            finally:
                with self._lock:
                    self.now -= 1
                    self.spans.append((t0, time.monotonic()))

        return run


def trickle(seconds: float) -> Callable[[BaseHTTPRequestHandler], None]:
    """A slowloris page: one byte every 0.1 s for ``seconds``, then the connection closes."""

    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Connection", "close")
        h.end_headers()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.1)
        h.wfile.write(html("slow", "slow sql page").encode())

    return route


def build_hostile_web() -> tuple[dict[str, LocalWeb], Tracked]:
    main, bigrobots, badrobots, slow = (LocalWeb().start() for _ in range(4))
    bomb = gzip_bomb(64)
    main.routes.update(
        {
            "/robots.txt": page("User-agent: *\nDisallow: /private/\n", ctype="text/plain"),
            **{f"/bomb{i}": bomb for i in range(3)},
            "/ten-mb-chunked": ten_mb_chunked,
            "/ten-mb-declared": ten_mb_declared,
            "/endless": endless_chunked,
            "/loop1": redirect("/loop2"),
            "/loop2": redirect("/loop1"),
            "/to-file": redirect("file:///etc/passwd"),
            "/to-data": redirect("data:text/html,<p>hi</p>"),
            "/to-mailto": redirect("mailto:root@example.org"),
            "/latin1.html": charset_page("Café crème", "crème brûlée sql table", "windows-1252", "header"),
            "/koi8.html": charset_page("База данных", "база данных sql таблица", "koi8-r", "header"),
            "/sjis.html": charset_page("データベース", "データベース sql テーブル", "shift_jis", "meta"),
            "/malformed.html": page(
                "<html><body><p>unclosed sql <b><i><a href='/g1.html'>x<div><table><tr><td>table"
                "<a href=\"javascript:alert(1)\">j</a><a href='http://[::1'>bad</a><!-- never closed"
            ),
            "/private/secret.html": page(html("secret", "never fetch this sql")),
        }
    )
    main.prefixes["/cal/"] = calendar
    for i in range(GOOD):
        main.routes[f"/g{i}.html"] = page(html(f"good {i}", f"sql database table query index page{i}"))
    hostile = [
        "/bomb0", "/bomb1", "/bomb2", "/ten-mb-chunked", "/ten-mb-declared", "/endless", "/loop1",
        "/to-file", "/to-data", "/to-mailto", "/latin1.html", "/koi8.html", "/sjis.html", "/malformed.html",
        "/private/secret.html", "/cal/2026-01",
    ]  # fmt: skip
    links = [f"{p}|sql {p}" for p in hostile] + [f"/g{i}.html|sql page {i}" for i in range(GOOD)]
    links += [w.url("/") + "|sql other host" for w in (bigrobots, badrobots, slow)]
    main.routes["/"] = page(html("home", "sql database home", links))

    # a 2 MiB robots.txt: its first rule applies; what lies beyond the 512 KiB cut is ignored (as Google does)
    big = "User-agent: *\nDisallow: /private/\n" + "# padding padding padding padding\n" * (2 * MiB // 34)
    bigrobots.routes["/robots.txt"] = page(big + "Disallow: /late/\n", ctype="text/plain")
    # a binary, malformed robots.txt with one readable group inside
    garbage = bytes(range(256)) * 8
    bad = garbage + b"\nUser-agent: *\nDisallow: /nope/\n" + garbage + b"\nDisallow\n::::\nCrawl-delay: x\n"
    badrobots.routes["/robots.txt"] = lambda h: send(h, 200, bad, "text/plain")
    for w, tag in ((bigrobots, "big"), (badrobots, "bad")):
        links = [f"/{tag}{i}.html|sql {tag} {i}" for i in range(GOOD)] + [
            "/private/x.html|p",
            "/nope/x.html|n",
        ]
        w.routes["/"] = page(html(f"{tag} home", "sql database", links))
        for i in range(GOOD):
            w.routes[f"/{tag}{i}.html"] = page(html(f"{tag} {i}", f"sql table index {tag}{i}"))
        w.routes["/private/x.html"] = page(html("private", "sql"))
        w.routes["/nope/x.html"] = page(html("nope", "sql"))

    tracked = Tracked()
    slow.routes["/robots.txt"] = page("User-agent: *\nDisallow:\n", ctype="text/plain")
    slow.routes["/"] = tracked.wrap(
        page(html("slow home", "sql", [f"/s{i}.html|sql slow {i}" for i in range(SLOW_PAGES)]))
    )
    for i in range(SLOW_PAGES):
        slow.routes[f"/s{i}.html"] = tracked.wrap(trickle(SLOW_SECONDS))
    return {"main": main, "bigrobots": bigrobots, "badrobots": badrobots, "slow": slow}, tracked


def test_hostile_web_memory_robots_and_the_rest_of_the_crawl(tmp_path: Path, engine: LocalEngine) -> None:
    webs, tracked = build_hostile_web()
    main = webs["main"]
    hosts = [f for w in webs.values() for f in ("--allow-host", w.host)]
    proc, address = start_robot(
        tmp_path, engine, "--min-delay", "0.01", "--max-in-flight", "4", "--timeout", "2",
        "--max-pages", "150", "--checkpoint-interval", "20", *hosts,
    )  # fmt: skip
    try:
        idle_rss = proc_status(proc.pid, "VmRSS")
        with grpc.insecure_channel(address) as ch:
            robot_pb2_grpc.RobotStub(ch).Start(robot_pb2.StartRequest(seeds=[main.url("/")]), timeout=5)
        deadline = time.monotonic() + 80
        while (status := robot_status(address)).state != "done":
            assert proc.poll() is None, "the robot died"
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
        peak_rss = proc_status(proc.pid, "VmHWM")
    finally:
        stop_robot(proc)
        for w in webs.values():
            w.stop()
    assert proc.returncode == 0
    grown = (peak_rss - idle_rss) / 1024
    errors = dict(status.errors)
    print(
        f"\nrobot RSS idle {idle_rss / 1024:.0f} MiB, peak {peak_rss / 1024:.0f} MiB (+{grown:.0f} MiB); "
        f"fetched {status.pages_fetched}, indexed {status.pages_indexed}; errors {errors}; "
        f"calendar pages {sum(p.startswith('/cal/') for p in main.paths())}; slow host peak concurrency "
        f"{tracked.peak}"
    )
    # memory: three 64 MiB gzip bombs, two 10 MB pages and an endless response never sat in memory whole;
    # the growth stays well under one bomb (the documented worst case is RobotConfig.body_memory_bound)
    assert grown < 64, f"robot grew by {grown:.0f} MiB"
    assert errors.get("too_large", 0) >= 6  # 3 bombs, 2 x 10 MB, endless
    # the budget ended the calendar trap; the rest of every host was crawled meanwhile
    assert status.pages_fetched == 150
    assert {f"/g{i}.html" for i in range(GOOD)} <= set(main.paths())
    assert {f"/big{i}.html" for i in range(GOOD)} <= set(webs["bigrobots"].paths())
    assert {f"/bad{i}.html" for i in range(GOOD)} <= set(webs["badrobots"].paths())
    assert {f"/s{i}.html" for i in range(SLOW_PAGES)} <= set(webs["slow"].paths())
    # robots.txt never violated: the huge one's first rule and the malformed one's readable rule held
    assert "/private/secret.html" not in main.paths()
    assert "/private/x.html" not in webs["bigrobots"].paths()
    assert "/nope/x.html" not in webs["badrobots"].paths()
    for w in webs.values():
        assert w.paths()[0] == "/robots.txt" and w.paths().count("/robots.txt") == 1
    # redirects: the loop fetched each URL once, /loop2 (reached only through /loop1's redirect: no anchor of
    # its own) right after /loop1, though the calendar trap offers better-linked pages all along; no non-http
    # target was ever requested anywhere
    assert main.paths().count("/loop1") == 1 and main.paths().count("/loop2") == 1
    pages = [p for p in main.paths() if p != "/robots.txt"]
    # followed, not queued: 1 page apart here, under two busy-loop cores too (queued behind the trap it came
    # 49 pages later, or never within the budget); 25 leaves room for a slow processor on a loaded machine
    assert pages.index("/loop2") - pages.index("/loop1") < 25, pages
    assert errors.get("bad_redirect", 0) >= 3
    # one host never holds every fetcher: the slow host had one request at a time, and other hosts were
    # fetched while its pages trickled
    assert tracked.peak == 1
    others = [a.t for w in (main, webs["bigrobots"], webs["badrobots"]) for a in w.log]
    during = [t for t in others if any(a + 0.2 < t < b - 0.2 for a, b in tracked.spans if b - a > 1)]
    assert during, "no other host was fetched while the slow host trickled"
    # non-UTF-8 pages were decoded right and indexed with their real text (not mojibake)
    titles = {h.title for h in search(engine, "sql") if h.url.startswith(main.url("/"))}
    assert {"Café crème", "База данных", "データベース"} <= titles, titles
    assert [h.url for h in search(engine, "brûlée")] == [main.url("/latin1.html")]
    assert [h.url for h in search(engine, "таблица")] == [main.url("/koi8.html")]


def test_refuse_private_sends_nothing_to_loopback(tmp_path: Path, engine: LocalEngine) -> None:
    """``--refuse-private`` (for real crawls): a seed on 127.0.0.1 is refused without one request, not even
    robots.txt; the default (``--allow-private``, for the local replayed web) fetches it."""
    web = LocalWeb().start()
    web.routes["/robots.txt"] = page("User-agent: *\nDisallow:\n", ctype="text/plain")
    web.routes["/"] = page(html("home", "sql", ["/a.html|a"]))
    web.routes["/a.html"] = page(html("a", "sql table"))
    try:
        proc, address = start_robot(
            tmp_path,
            engine,
            "--refuse-private",
            "--autostart",
            "--min-delay",
            "0.01",
            "--seeds",
            web.url("/"),
        )
        try:
            status = wait_until_done(address, seconds=20)
        finally:
            stop_robot(proc)
        assert web.log == []
        assert status.errors["private_address"] >= 1 and status.pages_indexed == 0

        (tmp_path / "allowed").mkdir()
        proc, address = start_robot(
            tmp_path / "allowed", engine, "--autostart", "--min-delay", "0.01", "--seeds", web.url("/")
        )
        try:
            status = wait_until_done(address, seconds=20)
        finally:
            stop_robot(proc)
        assert set(web.paths()) == {"/robots.txt", "/", "/a.html"} and status.pages_indexed == 2
    finally:
        web.stop()


def test_bad_grpc_input_to_the_robot_service(tmp_path: Path, engine: LocalEngine) -> None:
    """Empty, huge, invalid-UTF-8, malformed and invalid requests to the Robot service get a clear status
    code and message; the process keeps serving and leaks no thread."""
    proc, address = start_robot(tmp_path, engine, "--min-delay", "0.01")
    try:
        method = "/oasis.v1.Robot/Start"
        before = proc_status(proc.pid, "Threads")
        invalid, exhausted = grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED
        start = robot_pb2.StartRequest
        huge = "x" * (MAX_MESSAGE_BYTES + 1)
        cases = [
            (start(seeds=["ftp://example.org/"]).SerializeToString(), invalid, "no valid http"),
            (start(seeds=["", "not a url", "javascript:x"]).SerializeToString(), invalid, "no valid"),
            (start(seeds=["http://a.test/"] * 10_001).SerializeToString(), invalid, "at most"),
            (start(max_pages=-1).SerializeToString(), invalid, "max_pages"),
            (start(seeds=[huge]).SerializeToString(), exhausted, "larger than max"),
            (b"\x0a\x02\xff\xfe", invalid, "utf-8"),
            (b"\x0a\x09ab", invalid, "malformed"),
        ]
        with grpc.insecure_channel(address) as channel:
            call = channel.unary_unary(method)
            for _ in range(3):
                for payload, code, words in cases:
                    with pytest.raises(grpc.RpcError) as info:
                        call(payload, timeout=10)
                    assert info.value.code() == code, (payload[:30], info.value.code(), info.value.details())
                    assert words in (info.value.details() or "").lower(), info.value.details()
            # an empty Status request is valid; the robot is still idle: no bad Start started a crawl
            status = robot_pb2.RobotStatus.FromString(
                channel.unary_unary("/oasis.v1.Robot/Status")(b"", timeout=5)
            )
            assert status.state == "idle" and status.pages_fetched == 0
            health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert health.status == health_pb2.HealthCheckResponse.SERVING
        assert proc_status(proc.pid, "Threads") <= before + 4
    finally:
        stop_robot(proc)
    assert proc.returncode == 0
