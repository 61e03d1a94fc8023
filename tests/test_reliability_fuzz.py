"""Fuzz (hypothesis, fixed budget) of the robot's response processor as a whole — not only ``parse_html``,
whose own fuzz is in tests/test_web_html.py — and of the canonicaliser on hostile URL shapes.

The processor takes batches of arbitrary fetch results (any kind, status, bytes, declared charset, redirect
target) and must never raise; each result gives exactly one ``Processed`` for its URL, relevance in [0, 1],
children canonical http(s) URLs in scope and at most ``max_links``, index operations only for pages.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from oasis.robot import fetcher as f
from oasis.robot.processor import ResponseProcessor
from oasis.robot.scheduling import DELETED, ERROR, MODIFIED, NEW, UNCHANGED
from oasis.runtime.urls import InvalidURL, canonicalize, host_of

BASE = "http://fuzz.test/a/"
KINDS = [f.OK, f.REDIRECT, f.NOT_FOUND, f.TOO_LARGE, f.TIMEOUT, f.BAD_REDIRECT, f.NON_HTML, f.HTTP_5XX]
CHARSETS = [None, "utf-8", "latin-1", "koi8-r", "shift_jis", "utf-16", "x-no-such-charset", "", "utf-8\x00"]
FRAGMENTS = [
    "<a href='{}'>{}</a>", "<base href='{}'>{}", "<meta name=robots content='{}'>{}", "<title>{}{}</title>",
    "<script>{}{}</script>", "<!--{}{}", "<a href=\"{}\">{}", "<meta charset='{}'>{}", "&#x{};{}", "<{}{}>",
]  # fmt: skip
HREFS = st.sampled_from(
    [
        "", "#", "/", "..", "../../..", "//other.test/x", "http://fuzz.test:80/b", "HTTP://FUZZ.TEST/C",
        "javascript:alert(1)", "mailto:x@y", "data:text/html,x", "file:///etc/passwd", "http://[::1",
        "http://xn--80ak6aa92e.com/", "http://a b/", "\x00", "?q=1&q=2#frag", "%zz", "noindex,nofollow",
        "http://fuzz.test/" + "x" * 5000, "http://user:pw@fuzz.test/", "http://fuzz.test:99999/",
        "https://fuzz.test/\u202e",
    ]
) | st.text(max_size=40)  # fmt: skip


@st.composite
def markup(draw: st.DrawFn) -> bytes:
    parts = []
    for _ in range(draw(st.integers(0, 12))):
        template = draw(st.sampled_from(FRAGMENTS))
        parts.append(template.format(draw(HREFS), draw(st.text(max_size=20))))
    text = "".join(parts)
    encoding = draw(st.sampled_from(["utf-8", "latin-1", "utf-16", "cp1251"]))
    raw = text.encode(encoding, errors="replace")
    if draw(st.booleans()):
        raw = raw[: draw(st.integers(0, len(raw)))] + draw(st.binary(max_size=64))
    return raw


@st.composite
def results(draw: st.DrawFn) -> f.FetchResult:
    path = draw(st.sampled_from(["p", "q", "r", "deep/s", "t?x=1"]))
    kind = draw(st.sampled_from(KINDS))
    target = draw(st.sampled_from([BASE + "q", BASE + "p", "http://elsewhere.test/", None]))
    return f.FetchResult(
        BASE + path,
        kind,
        status=draw(st.sampled_from([200, 301, 404, 410, 500, 0])),
        content=draw(markup()) if kind == f.OK else b"",
        charset=draw(st.sampled_from(CHARSETS)),
        redirect_to=target if kind == f.REDIRECT else None,
    )


def score(pages: Sequence[tuple[str, str]]) -> list[float]:
    return [min(1.0, (len(t) + len(x)) % 97 / 96) for t, x in pages]  # any value in [0, 1]


def in_scope(url: str) -> bool:
    return url.startswith("http://fuzz.test/")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(results(), min_size=1, max_size=6), min_size=1, max_size=3))
def test_processor_never_raises_and_keeps_its_invariants(batches: list[list[f.FetchResult]]) -> None:
    proc = ResponseProcessor(score, max_bytes=4096, in_scope=in_scope, max_links=20)
    for t, batch in enumerate(batches):
        out = proc.process(batch, float(t))
        assert [p.url for p in out] == [r.url for r in batch]
        for res, p in zip(batch, out, strict=True):
            assert p.kind in {NEW, MODIFIED, UNCHANGED, DELETED, ERROR}
            assert 0.0 <= p.relevance <= 1.0
            assert len(p.children) <= 20
            for child in p.children:
                assert in_scope(child.url) and canonicalize(child.url) == child.url
                assert 0.0 <= child.anchor_relevance <= 1.0
            if p.op is not None:
                assert p.op.delete or res.kind == f.OK  # only fetched pages are indexed
                assert p.op.url == res.url
            if res.kind not in (f.OK, f.REDIRECT, f.NOT_FOUND):
                assert p.op is None or p.op.delete


URL_PARTS = st.sampled_from(
    ["http://", "https://", "HTTP://", "ftp://", "//", "", "a", "A.B", "xn--", "[", "]", ":", "@", "%", "%41",
     "/", "/..", "/./", "?", "#", "&", "=", " ", "\t", "\u00e9", "\u202e", "\x00", "80", "443", "65536", ".",
     "..", "~", "\\"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(URL_PARTS, max_size=14).map("".join))
@example("http:// http://")  # found by this test: a host with a space was accepted as canonical
@example("http://[zz]/")
def test_canonicaliser_on_hostile_shapes(raw: str) -> None:
    """Assembled from the pieces that break URL parsers: the canonical form is idempotent, http(s), has no
    fragment, default port or whitespace, a lower-case host, and its host is what host_of returns."""
    try:
        url = canonicalize(raw)
    except InvalidURL:
        return
    assert canonicalize(url) == url
    scheme, _, rest = url.partition("://")
    assert scheme in {"http", "https"}
    assert "#" not in url and not any(c.isspace() for c in url) and "\x00" not in url
    host = host_of(url)
    assert host and host == host.lower() and rest.startswith(host)
    assert not host.endswith(":80") or scheme == "https"  # default ports are dropped
    assert not host.endswith(":443") or scheme == "http"
