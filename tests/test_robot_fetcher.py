"""Fetchers against a real HTTP server on 127.0.0.1: every hostile answer becomes a clear result kind."""

from __future__ import annotations

import codecs
import gzip
import time
import tracemalloc
from collections.abc import Iterator

import pytest
from robot_testweb import LocalWeb, endless_chunked, gzip_bomb, page, raw, redirect, slowloris

from oasis.robot import fetcher as f
from oasis.robot.config import RobotConfig


@pytest.fixture(scope="module")
def web() -> Iterator[LocalWeb]:
    w = LocalWeb().start()
    w.routes.update(
        {
            "/ok": page("<title>T</title>ok", ctype="text/html; charset=ISO-8859-1"),
            "/xhtml": page("<p>x</p>", ctype="application/xhtml+xml"),
            "/gone": page("gone", status=410),
            "/missing": page("missing", status=404),
            "/forbidden": page("no", status=403),
            "/error": page("oops", status=502),
            "/busy": page("slow down", status=429, Retry_After="7"),
            "/unavailable": page("down", status=503),
            "/pdf": page("%PDF", ctype="application/pdf"),
            "/big": raw(b"<p>" + b"a" * 300_000 + b"</p>"),
            "/binary": raw(bytes(range(256)) * 64),
            "/tiny-binary": raw(b"\x00\x01"),  # under the sniffed 1,445 bytes: looked at when it ends
            "/packed": raw(gzip.compress(b"<title>P</title>" + b"<p>page</p>" * 500)),  # no Content-Encoding
            "/utf16": raw("<title>U</title>page".encode("utf-16-le"), ctype="text/html; charset=UTF-16LE"),
            "/utf16-bom": raw(codecs.BOM_UTF16_LE + "<title>U</title>page".encode("utf-16-le")),
            "/bomb": gzip_bomb(64),
            "/chunked": endless_chunked,
            "/slow": slowloris(20.0, 0.2),
            "/moved": redirect("/ok", 301),
            "/relative": redirect("../ok#frag"),
            "/to-ftp": redirect("ftp://example.org/x"),
            "/to-js": redirect("javascript:alert(1)"),
            "/no-location": lambda h: (
                h.send_response(302),
                h.send_header("Content-Length", "0"),
                h.end_headers(),
            ),
        }
    )
    yield w
    w.stop()


@pytest.fixture(scope="module")
def fetcher() -> Iterator[f.Fetcher]:
    cfg = RobotConfig(read_timeout=1.0, total_timeout=1.5, connect_timeout=1.0, max_bytes=100_000)
    fx = f.Fetcher(cfg)
    yield fx
    fx.close()


@pytest.mark.parametrize(
    ("path", "kind", "status"),
    [
        ("/gone", f.NOT_FOUND, 410),
        ("/missing", f.NOT_FOUND, 404),
        ("/forbidden", f.HTTP_4XX, 403),
        ("/error", f.HTTP_5XX, 502),
        ("/unavailable", f.TOO_MANY_REQUESTS, 503),
        ("/pdf", f.NON_HTML, 200),
        ("/big", f.TOO_LARGE, 200),
        ("/to-ftp", f.BAD_REDIRECT, 302),
        ("/to-js", f.BAD_REDIRECT, 302),
        ("/no-location", f.BAD_REDIRECT, 302),
    ],
)
def test_error_kinds(web: LocalWeb, fetcher: f.Fetcher, path: str, kind: str, status: int) -> None:
    res = fetcher.fetch(web.url(path))
    assert (res.kind, res.status) == (kind, status)
    assert res.content == b""


def test_ok_with_charset_and_xhtml(web: LocalWeb, fetcher: f.Fetcher) -> None:
    res = fetcher.fetch(web.url("/ok"))
    assert res.kind == f.OK and res.charset == "ISO-8859-1" and b"ok" in res.content
    assert res.finished >= res.started
    assert fetcher.fetch(web.url("/xhtml")).kind == f.OK
    assert web.log[-1].user_agent.startswith("OasisRobot/")


def test_binary_data_served_as_html_is_no_page(web: LocalWeb, fetcher: f.Fetcher) -> None:
    """A PNG, archive or gzipped page served as text/html was fetched as a page and indexed as replacement
    characters; now it is NON_HTML, like a PDF. UTF-16 pages hold NUL bytes and are still pages."""
    for path in ("/binary", "/tiny-binary", "/packed"):
        res = fetcher.fetch(web.url(path))
        assert (res.kind, res.status, res.content) == (f.NON_HTML, 200, b""), path
        assert res.message == "binary data served as text/html"
    for path in ("/utf16", "/utf16-bom"):
        res = fetcher.fetch(web.url(path))
        assert res.kind == f.OK and "page".encode("utf-16-le") in res.content, path


def test_retry_after_is_read(web: LocalWeb, fetcher: f.Fetcher) -> None:
    res = fetcher.fetch(web.url("/busy"))
    assert res.kind == f.TOO_MANY_REQUESTS and res.retry_after == 7.0


def test_redirects_are_not_followed_inline(web: LocalWeb, fetcher: f.Fetcher) -> None:
    before = len(web.log)
    res = fetcher.fetch(web.url("/moved"))
    assert res.kind == f.REDIRECT and res.redirect_to == web.url("/ok")
    assert len(web.log) == before + 1  # the target was not requested
    res = fetcher.fetch(web.url("/relative"))
    assert res.redirect_to == web.url("/ok")  # resolved, canonical, fragment dropped


def test_gzip_bomb_capped_on_decoded_bytes_within_memory(web: LocalWeb, fetcher: f.Fetcher) -> None:
    tracemalloc.start()
    try:
        res = fetcher.fetch(web.url("/bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.kind == f.TOO_LARGE
    assert peak < 16 * 1024 * 1024  # 64 MiB decoded never sat in memory


def test_endless_chunked_response_cut(web: LocalWeb, fetcher: f.Fetcher) -> None:
    t0 = time.monotonic()
    assert fetcher.fetch(web.url("/chunked")).kind == f.TOO_LARGE
    assert time.monotonic() - t0 < 5


def test_slowloris_bounded_by_total_timeout(web: LocalWeb, fetcher: f.Fetcher) -> None:
    t0 = time.monotonic()
    res = fetcher.fetch(web.url("/slow"))
    assert res.kind == f.TIMEOUT
    assert time.monotonic() - t0 < 1.5 + 1.0 + 0.5  # total_timeout + read_timeout + slack


def test_invalid_urls_and_dead_ports(fetcher: f.Fetcher) -> None:
    assert fetcher.fetch("ftp://example.org/").kind == f.INVALID_URL
    assert fetcher.fetch("http://").kind == f.INVALID_URL
    assert fetcher.fetch("http://127.0.0.1:1/").kind == f.CONNECTION


def test_truncate_keeps_prefix(web: LocalWeb, fetcher: f.Fetcher) -> None:
    res = fetcher.fetch(web.url("/big"), max_bytes=1000, html_only=False, truncate=True)
    assert res.kind == f.OK and len(res.content) == 1000


def test_refuse_private_addresses(web: LocalWeb) -> None:
    fx = f.Fetcher(RobotConfig(refuse_private=True))
    try:
        before = len(web.log)
        assert fx.fetch(web.url("/ok")).kind == f.PRIVATE_ADDRESS
        assert len(web.log) == before
    finally:
        fx.close()
    assert not f.is_public_host("10.1.2.3", resolve=lambda h: [h])
    assert not f.is_public_host("[::1]:80", resolve=lambda h: [h])
    assert f.is_public_host("example.org", resolve=lambda h: ["93.184.216.34"])
