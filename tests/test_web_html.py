"""The HTML response processor parser: links, text, charsets, robustness."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oasis.runtime.html import (
    PARSERS,
    SNIFF_BYTES,
    Parser,
    collapse_whitespace,
    decode_html,
    looks_binary,
    parse_html,
    parse_refresh,
)
from oasis.runtime.urls import canonicalize

BASE = "http://Example.COM:80/docs/page.html"


def test_links_resolved_canonical_deduplicated_and_filtered() -> None:
    html = b"""<html><head><title> The   Title </title></head><body>
    <a href="a.html#sec">First</a>
    <a href="./a.html">Second</a>
    <a href="a.html">First</a>
    <a href="/root?b=2&a=1">Root</a>
    <a href="https://other.org/x/../y">Other</a>
    <a href="//cdn.example.net/z">Proto-relative</a>
    <a href="mailto:me@example.com">mail</a>
    <a href="javascript:void(0)">js</a>
    <a href="data:text/html,hi">data</a>
    <a href="ftp://files.example.com/f">ftp</a>
    <a href="http://[::1">broken</a>
    <a href="#top">frag only</a>
    <a>no href</a>
    <map><area href="map.html" title="Map area"></map>
    </body></html>"""
    page = parse_html(html, BASE)
    assert page.title == "The Title"
    assert [link.url for link in page.links] == [
        "http://example.com/docs/a.html",
        "http://example.com/root?a=1&b=2",
        "https://other.org/y",
        "http://cdn.example.net/z",
        "http://example.com/docs/map.html",
    ]
    assert page.links[0].anchor == "First Second"  # joined distinct anchors, first occurrence's position
    assert page.links[-1].anchor == "Map area"  # <area> falls back to its title
    for link in page.links:
        assert canonicalize(link.url) == link.url


def test_base_href_is_used_for_resolution() -> None:
    html = (
        '<head><base href="http://mirror.example.org/v2/"></head><a href="x/y.html">y</a><a href="/abs">a</a>'
    )
    page = parse_html(html, BASE)
    assert [link.url for link in page.links] == [
        "http://mirror.example.org/v2/x/y.html",
        "http://mirror.example.org/abs",
    ]


def test_visible_text_only_and_whitespace_collapsed() -> None:
    html = """<html><head><title>T</title><style>body { color: red }</style>
    <script>var secret = "script text";</script></head>
    <body><noscript>enable js</noscript><template><p>tmpl</p></template>
    <!-- a comment -->
    <h1>Heading</h1>\n\n<p>Some   <b>bold</b>\ttext.</p></body></html>"""
    page = parse_html(html, BASE)
    assert page.text == "Heading Some bold text."
    for hidden in ("secret", "color", "enable js", "tmpl", "comment"):
        assert hidden not in page.text


def test_robots_meta_and_canonical() -> None:
    html = """<head><meta name="ROBOTS" content="NoIndex, NOFOLLOW">
    <link rel="canonical" href="/docs/page.html?utm=1#frag"></head><body>x</body>"""
    page = parse_html(html, BASE)
    assert page.noindex and page.nofollow
    assert page.canonical == "http://example.com/docs/page.html?utm=1"
    none = parse_html('<meta name="robots" content="none">', BASE)
    assert none.noindex and none.nofollow
    plain = parse_html("<p>hi</p>", BASE)
    assert not plain.noindex and not plain.nofollow and plain.canonical is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("0; url=graphviz.html", (0.0, "graphviz.html")),
        ("1; URL='a b.html'", (1.0, "a b.html")),  # quoted: up to the closing quote
        ('  0 ; url = "q.html" trailing', (0.0, "q.html")),
        ("3, next.html", (3.0, "next.html")),  # a comma, and no "url="
        ("0 'b.html'", (0.0, "b.html")),
        ("1.5; url=x", (1.0, "x")),  # the fraction is read and ignored
        (".5;url=z", (0.0, "z")),
        ("0; urlfoo.html", (0.0, "foo.html")),  # "url" without "=": WHATWG's "skip quotes", as browsers do
        ("0;url", (0.0, "")),
        ("7", (7.0, "")),  # a reload of the page itself
        ("soon; url=x", None),  # no time
        ("5x;url=y", None),
        ("9" * 5000 + "; url=late.html", (float("inf"), "late.html")),  # a hostile time: never a redirect
        ("", None),
    ],
)
def test_meta_refresh_content_is_read_as_whatwgs_declarative_refresh(
    content: str, expected: tuple[float, str] | None
) -> None:
    assert parse_refresh(content) == expected


@pytest.mark.parametrize("parser", PARSERS)
def test_meta_refresh_target_is_resolved_and_never_a_link(parser: Parser) -> None:
    """A ``<meta http-equiv="refresh">`` was not read at all: a redirect stub (102 of the Debian documentation
    pages installed here, 54 of them dask's) was a page of no text and no links, its target never found. Its
    target is now resolved and canonical; it stays out of ``links`` (every corpus graph is what the markup
    links)."""
    stub = (
        '<html><head><meta http-equiv="Refresh" content="1; url=graphviz.html#top" />'
        '<script>window.location.href = "graphviz.html"</script></head></html>'
    )
    page = parse_html(stub, BASE, parser=parser)
    assert page.refresh == "http://example.com/docs/graphviz.html" and page.refresh_delay == 1.0
    assert page.redirect == page.refresh and page.links == ()
    later = parse_html(
        '<meta http-equiv="refresh" content="60; url=/next.html"><p>x</p>', BASE, parser=parser
    )
    assert later.refresh == "http://example.com/next.html" and later.refresh_delay == 60.0
    assert later.redirect is None  # a late refresh: the page is a page
    hostile = parse_html(
        f'<meta http-equiv="refresh" content="{"9" * 5000}; url=x.html"><a href="y.html">y</a>', BASE
    )
    assert [ln.url for ln in hostile.links] == ["http://example.com/docs/y.html"] and hostile.redirect is None
    for reload in ('content="30"', f'content="0; url={BASE}"', 'content="0; url=javascript:go()"'):
        same = parse_html(f"<meta http-equiv=refresh {reload}>", BASE, parser=parser)
        assert same.refresh is None and same.refresh_delay is None and same.redirect is None
    first = parse_html(
        '<meta http-equiv="refresh" content="0; url=a.html">'
        '<meta http-equiv="refresh" content="0; url=b.html">',
        BASE,
        parser=parser,
    )
    assert first.refresh == "http://example.com/docs/a.html"


@pytest.mark.parametrize(
    ("raw", "header", "expected_encoding"),
    [
        ('<meta charset="iso-8859-1"><p>caf\u00e9</p>'.encode("latin-1"), None, "iso8859-1"),
        (
            '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
            "<p>\u043f\u0440\u0438</p>".encode("cp1251"),
            None,
            "cp1251",
        ),
        ("\ufeff<p>caf\u00e9</p>".encode("utf-16-le"), None, "utf-16-le"),  # BOM
        ("<p>caf\u00e9</p>".encode("utf-8-sig"), None, "utf-8"),
        ("<p>caf\u00e9</p>".encode("latin-1"), "iso-8859-1", "iso8859-1"),  # HTTP header charset
        ("<p>caf\u00e9</p>".encode("latin-1"), None, "cp1252"),  # undeclared, not UTF-8: windows-1252
    ],
)
def test_charsets_detected(raw: bytes, header: str | None, expected_encoding: str) -> None:
    page = parse_html(raw, BASE, encoding=header)
    assert page.encoding == expected_encoding
    word = "\u043f\u0440\u0438" if expected_encoding == "cp1251" else "caf\u00e9"
    assert word in page.text


def test_wrong_header_charset_falls_back() -> None:
    text, used = decode_html("<p>\u00fcber</p>".encode(), "no-such-charset")
    assert used == "utf-8" and "\u00fcber" in text


def test_huge_input_is_truncated_not_raised() -> None:
    chunk = b'<p>word</p><a href="/p%d">l</a>'
    body = b"".join(chunk.replace(b"%d", str(i).encode()) for i in range(20000))
    page = parse_html(b"<html><body>" + body, BASE, max_bytes=10_000)
    assert page.truncated
    assert 0 < len(page.links) < 20000
    assert page.text.startswith("word l word")


def test_truncation_inside_a_multibyte_character_keeps_utf8() -> None:
    raw = ("<p>" + "\u00e9" * 100 + "</p>").encode()
    page = parse_html(raw, BASE, max_bytes=50)  # 50 bytes cuts an e-acute in half
    assert page.encoding == "utf-8"
    assert page.text.startswith("\u00e9\u00e9")


def test_malformed_and_binary_input() -> None:
    for junk in (
        b"\x00\xff\xfe\x89PNG\r\n\x1a\n" + bytes(range(256)) * 10,
        b"<a href='x.html'>unclosed <b><i><div></p></table><<<>>>",
        b"<html><head><title>never closed",
        b"<!DOCTYPE x [ <!ENTITY a 'b'> ]><?xml?><![CDATA[ x ]]><a href=y>z</a>",
        b"",
    ):
        page = parse_html(junk, BASE)
        for link in page.links:
            assert urlsplit(link.url).scheme in ("http", "https")
    assert parse_html(b"<a href='x.html'>unclosed <b>", BASE).links[0].url == "http://example.com/docs/x.html"


def test_invalid_base_url_keeps_absolute_links_only() -> None:
    page = parse_html('<a href="rel.html">r</a><a href="http://ok.org/">ok</a>', "not a url")
    assert [link.url for link in page.links] == ["http://ok.org/"]


def test_to_page() -> None:
    page = parse_html("<title>t</title><p>body</p>", BASE).to_page("http://example.com/docs/page.html")
    assert page.title == "t" and page.text == "body" and page.html is None


_html_fragments = st.lists(
    st.one_of(
        st.text(max_size=30),
        st.sampled_from(
            [
                "<a href='",
                "'>",
                "</a>",
                "<base href=",
                "<script>",
                "</script>",
                "<meta charset=",
                "<!--",
                "-->",
                "http://",
                "https://",
                "mailto:",
                "javascript:",
                "#",
                "../",
                "//",
                "[",
                "]",
                "%",
                "?",
                "&",
                ":",
                "\x00",
                "\ufeff",
                "<title>",
                "<",
                ">",
                '"',
                '<a href="',
                '">',
                " ",
            ]
        ),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    markup=_html_fragments,
    as_bytes=st.booleans(),
    charset=st.sampled_from([None, "utf-8", "latin-1", "bogus"]),
)
def test_fuzz_never_raises_and_links_are_canonical(markup: str, as_bytes: bool, charset: str | None) -> None:
    content: bytes | str = markup.encode("utf-8", errors="surrogatepass") if as_bytes else markup
    page = parse_html(content, "http://fuzz.example/a/b.html", encoding=charset, max_bytes=4096)
    urls = [link.url for link in page.links]
    assert len(urls) == len(set(urls))
    for url in urls:
        assert urlsplit(url).scheme in ("http", "https")
        assert "#" not in url
        assert canonicalize(url) == url
    assert "  " not in page.text and page.text == page.text.strip()


@settings(max_examples=60, deadline=None)
@given(raw=st.binary(max_size=2048))
def test_fuzz_binary_never_raises(raw: bytes) -> None:
    page = parse_html(raw, "https://fuzz.example/", max_bytes=1024)
    assert all(urlsplit(link.url).scheme in ("http", "https") for link in page.links)


_TEXT_CHARS = st.characters(
    blacklist_categories=("Cs",),
    blacklist_characters=[chr(i) for i in range(32) if i not in (9, 10, 12, 13, 27)],
)


@settings(max_examples=100, deadline=None)
@given(
    text=st.text(_TEXT_CHARS, max_size=600),
    junk=st.binary(max_size=64),
    codec=st.sampled_from(["utf-8", "utf-16", "utf-32"]),
)
def test_looks_binary_is_whatwgs_binary_data_byte_rule(text: str, junk: bytes, codec: str) -> None:
    """Text in any encoding is never binary (UTF-16/32 with their byte-order marks: Python's codecs write
    one); one binary data byte among the first 1,445 makes it binary, and only there."""
    assert not looks_binary(text.encode(codec))
    plain = text.encode("utf-8")
    assert looks_binary(plain + b"\x00" + junk) == (len(plain) < SNIFF_BYTES)
    assert looks_binary(plain + b"\x1a") == (len(plain) < SNIFF_BYTES)
    assert not looks_binary(("x" * SNIFF_BYTES).encode() + b"\x00" + junk)
    assert not looks_binary(text.encode("utf-16-le"), "UTF-16LE")  # no mark, but the charset says so


def test_collapse_whitespace_is_the_regex_definition_for_every_unicode_space() -> None:
    spaces = [chr(i) for i in range(0x110000) if chr(i).isspace()]
    text = "  a" + "".join(f"{s}b{s}{s}" for s in spaces) + "c\u200b\xa0 \n"
    assert collapse_whitespace(text) == re.sub(r"\s+", " ", text).strip()
    for s in spaces:
        assert collapse_whitespace(f"{s}x{s}{s}y{s}") == "x y"


@settings(max_examples=200, deadline=None)
@given(
    content=st.text(alphabet=st.sampled_from(list("0123456789.;, \t'\"urlURL=ab/\u00e9\x00")), max_size=40)
)
def test_fuzz_meta_refresh_never_raises_nor_costs_the_page_its_links(content: str) -> None:
    delay_and_url = parse_refresh(content)
    assert delay_and_url is None or delay_and_url[0] >= 0.0
    page = parse_html(f"<meta http-equiv='refresh' content=\"{content}\"><a href='x.html'>x</a>", BASE)
    assert [ln.url for ln in page.links] == ["http://example.com/docs/x.html"] or '"' in content
    assert page.redirect is None or (page.refresh_delay is not None and page.refresh_delay <= 5.0)
