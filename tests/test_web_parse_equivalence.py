"""parse_html's tree builders agree: libxml2 (``lxml``, the default) vs bs4 + ``html.parser`` (the original).

Real documentation pages and tricky snippets must give the same title, links (URLs and anchors), visible text
(modulo whitespace), canonical link and robots directives. Where HTML5 tokenisation (libxml2 >= 2.14)
deliberately differs from Python's ``html.parser`` on malformed markup, both answers are pinned below.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from urllib.parse import urljoin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.runtime import html
from oasis.runtime.html import ParsedPage, parse_html, resolve_link
from oasis.runtime.urls import InvalidURL, canonicalize

CORPORA = {
    "postgresql-doc-15": Path("/usr/share/doc/postgresql-doc-15/html"),
    "python3.11-doc": Path("/usr/share/doc/python3.11-doc/html"),
    "python-django-doc": Path("/usr/share/doc/python-django-doc/html"),
}
BASE = "http://example.com/docs/page.html"


def _nows(text: str) -> str:
    return "".join(text.split())


def assert_same(old: ParsedPage, new: ParsedPage) -> None:
    assert new.title == old.title
    assert [link.url for link in new.links] == [link.url for link in old.links]
    assert [_nows(link.anchor) for link in new.links] == [_nows(link.anchor) for link in old.links]
    assert _nows(new.text) == _nows(old.text)
    assert (new.canonical, new.noindex, new.nofollow) == (old.canonical, old.noindex, old.nofollow)
    assert (new.encoding, new.truncated) == (old.encoding, old.truncated)


def _sample(root: Path, n: int) -> list[Path]:
    files = sorted(root.rglob("*.html"))
    return random.Random(7).sample(files, min(n, len(files)))


@pytest.mark.corpus
@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_real_pages_parse_the_same(corpus: str) -> None:
    root = CORPORA[corpus]
    if not root.is_dir():
        pytest.skip(f"{root} not installed (apt-get install {corpus})")
    pages = _sample(root, 25)
    total_links = 0
    for path in pages:
        content = path.read_bytes()
        url = f"http://{corpus}.local/{path.relative_to(root).as_posix()}"
        old = parse_html(content, url, parser="html.parser")
        new = parse_html(content, url)
        assert_same(old, new)
        assert_same(old, parse_html(content, url, parser="bs4-lxml"))
        total_links += len(new.links)
    assert total_links > 3 * len(pages)  # the comparison saw real link lists, not empty pages


TRICKY = {
    "entities": "<title>A &amp; B &lt;C&gt;</title><p>caf&eacute; &nbsp;&#233;&#x41; &copy; 1&lt;2</p>",
    "inline markup splits strings": "<p>fo<b>o</b>bar<i>baz</i> <a href=x.html>an<em>ch</em>or</a>qux</p>",
    "hidden elements": (
        "<head><title>T</title><style>s{}</style><script>var x='<a href=no.html>'</script></head>"
        "<body><noscript><a href=ns.html>ns</a></noscript><template><a href=t.html>t</a></template>"
        "<!-- <a href=c.html>c</a> --><p>shown<script>hidden</script>tail</p></body>"
    ),
    "anchor text rules": (
        "<a href=a.html>x<script>s</script><style>y</style>z<!--c--></a>"
        "<a href=b.html><img alt=pic></a><a href=c.html title=' Titled  link '></a>"
        "<a href=a.html>again</a><a href='a.html#frag'>x z</a>"
        "<a href=r.html>ru<ruby>by<rt>rt</rt><rp>(</rp></ruby></a>"
        "<ruby><rt><a href=inrt.html title=fallback>in rt</a></rt></ruby>"
    ),
    "first non-empty title wins": "<title>  </title><p>x</p><title>Second</title><title>Third</title>",
    "base, canonical, robots": (
        "<head><base href='http://mirror.example.org/v2/'><base href='http://ignored.example/'>"
        "<link rel='Canonical' href='/canon?b=2&a=1#x'><link rel=canonical href=/second>"
        "<meta name=robots content='noindex'><meta name=OASIS content='nofollow'></head>"
        "<a href=rel.html>r</a><a href=/abs>a</a><area href=map.html alt=m>"
    ),
    "unclosed and misnested": (
        "<div><p>one<p>two<b>bold<i>both</b>italic</i><li>item<table><tr><td>cell<td>c2</table>"
        "<a href=u.html>unclosed <b>bold"
    ),
    "forms and lists": "<ul><li>a<li>b</ul><select><option>o1<option>o2</select><textarea></textarea>",
    "svg and math": "<svg><title>svg title</title><text>drawn</text></svg><math><mi>x</mi></math><p>after",
    "whitespace": "<p>\n\t a \r\n b\u00a0\u2003c </p><pre>  pre\n  formatted </pre>",
    "links filtered": (
        "<a href='mailto:x@y'>m</a><a href='javascript:1'>j</a><a href='#top'>f</a><a href=''>e</a>"
        "<a href='http://[::1'>bad</a><a href=' //cdn.example.net/z '>cdn</a><a>none</a>"
    ),
    "doctype, pi, comments at top": (
        "<!DOCTYPE html><!-- top --><?php echo 1 ?><html><p>body</p></html><!-- end -->"
    ),
    "content after </html>": "<html><body><p>in</p></body></html><p>after</p><a href=late.html>late</a>",
    "attributes without quotes and case": "<A HREF=Up.HTML TITLE=t>UP</A><META NAME=Robots CONTENT=NONE>",
    "non-utf8 declared": '<meta charset="koi8-r"><title>\u0442\u0435\u0441\u0442</title>',
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_snippets_parse_the_same(name: str) -> None:
    markup = TRICKY[name]
    content = markup.encode("koi8-r") if name == "non-utf8 declared" else markup.encode()
    old = parse_html(content, BASE, parser="html.parser")
    new = parse_html(content, BASE)
    assert_same(old, new)
    assert_same(old, parse_html(content, BASE, parser="bs4-lxml"))


def test_tricky_snippets_are_parsed_as_expected() -> None:
    """Spot checks that the agreement above is on the right answers, not on two empty pages."""
    page = parse_html(TRICKY["anchor text rules"], BASE)
    anchors = {link.url.rsplit("/", 1)[1]: link.anchor for link in page.links}
    assert anchors == {
        "a.html": "x z again",  # script/style/comment skipped, distinct anchors joined, #frag deduplicated
        "b.html": "",
        "c.html": "Titled link",
        "r.html": "ru by",  # <rt>/<rp> are not anchor text (bs4's get_text rule)
        "inrt.html": "fallback",
    }
    hidden = parse_html(TRICKY["hidden elements"], BASE)
    assert hidden.text == "shown tail" and hidden.title == "T" and hidden.links == ()
    meta = parse_html(TRICKY["base, canonical, robots"], BASE)
    assert [link.url for link in meta.links] == [
        "http://mirror.example.org/v2/rel.html",
        "http://mirror.example.org/abs",
        "http://mirror.example.org/v2/map.html",
    ]
    assert meta.canonical == "http://mirror.example.org/canon?a=1&b=2" and meta.noindex and meta.nofollow
    late = parse_html(TRICKY["content after </html>"], BASE)
    assert late.text == "in after late" and late.links[0].url == "http://example.com/docs/late.html"
    assert parse_html(TRICKY["first non-empty title wins"], BASE).title == "Second"
    koi = parse_html(TRICKY["non-utf8 declared"].encode("koi8-r"), BASE)
    assert koi.encoding == "koi8-r" and koi.title == "\u0442\u0435\u0441\u0442"


# (markup, what html.parser says, what libxml2 says): HTML5 tokenisation, as browsers do it.
DIVERGENCES = [
    pytest.param("<title>a <b>b</b></title>", "title", "a b", "a <b>b</b>", id="title-is-raw-text"),
    pytest.param(
        "<a href=1.html>one<a href=2.html>two</a>", "anchor", "one two", "one", id="second-a-closes-first"
    ),
    pytest.param("<a href=1.html href=2.html>x</a>", "url", "2.html", "1.html", id="first-duplicate-attr"),
    pytest.param(
        "<p>x<iframe><a href=i.html>in</a></iframe>y", "text", "x in y", "x y", id="iframe-not-visible"
    ),
    pytest.param("<p>a<![CDATA[ b ]]>c</p>", "text", "a b c", "a c", id="cdata-is-a-comment"),
]


@pytest.mark.parametrize(("markup", "field", "old_answer", "new_answer"), DIVERGENCES)
def test_known_divergences_follow_html5(markup: str, field: str, old_answer: str, new_answer: str) -> None:
    def pick(page: ParsedPage) -> str:
        if field == "url":
            return page.links[0].url.rsplit("/", 1)[1]
        if field == "anchor":
            return page.links[0].anchor
        return str(getattr(page, field))

    assert pick(parse_html(markup, BASE, parser="html.parser")) == old_answer
    assert pick(parse_html(markup, BASE)) == new_answer


def test_nesting_deeper_than_libxml2_allows_falls_back_to_html_parser() -> None:
    markup = "<div>" * 3000 + "deep" + "</div>" * 3000 + "<p>after</p><a href=after.html>a</a>"
    new = parse_html(markup, BASE)
    assert new.text == "deep after a"  # libxml2 alone would stop at depth 2048 and lose the rest
    assert [link.url for link in new.links] == ["http://example.com/docs/after.html"]
    assert_same(parse_html(markup, BASE, parser="html.parser"), new)


def test_empty_and_whitespace_only() -> None:
    for content in (b"", b"   \n", "\ufeff".encode(), b"<!-- only a comment -->", "<!DOCTYPE html>"):
        page = parse_html(content, BASE)
        assert (page.title, page.text, page.links) == ("", "", ())


def test_unknown_parser_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="parser must be one of"):
        parse_html("<p>x</p>", BASE, parser="html5lib")  # type: ignore[arg-type]


def test_threads_share_nothing() -> None:
    pages = [
        f"<title>t{i}</title>" + "".join(f"<a href=p{i}_{j}.html>{j}</a>" for j in range(50))
        for i in range(8)
    ]
    expected = [parse_html(p, BASE) for p in pages]
    errors: list[str] = []

    def work(offset: int) -> None:
        for k in range(40):
            i = (k + offset) % len(pages)
            if parse_html(pages[i], BASE) != expected[i]:
                errors.append(f"thread {offset} page {i}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _reference_resolve(href: str, base: str) -> str | None:
    """resolve_link without any cache: what it must always answer."""
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    try:
        return canonicalize(urljoin(base, href) if base else href)
    except (InvalidURL, ValueError):
        return None


_href_parts = st.sampled_from(
    [
        "a",
        "b.html",
        "/",
        "../",
        "./",
        "#",
        "#frag",
        "?q=1",
        "&",
        " ",
        "\t",
        "\u00a0",
        "http://",
        "h.example",
        ":",
        "%20",
        "//",
        "x" * 40,
        "\u00e9",
        "[",
        "]",
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    href=st.lists(_href_parts, max_size=8).map("".join),
    base=st.sampled_from(["http://example.com/docs/page.html", "https://h.example/a/", ""]),
)
def test_cached_resolution_equals_uncached(href: str, base: str) -> None:
    html._canonical.cache_clear()
    first = resolve_link(href, base)
    again = resolve_link(href, base)  # from the cache
    assert first == again == _reference_resolve(href, base)


def test_fragment_variants_share_one_cache_entry_but_long_ones_do_not() -> None:
    html._canonical.cache_clear()
    urls = {resolve_link(f"x.html#s{i}", BASE) for i in range(50)}
    assert urls == {"http://example.com/docs/x.html"}
    assert html._canonical.cache_info().currsize == 1
    too_long = "x.html#" + "f" * 5000  # canonicalize rejects the whole URL for its length
    assert resolve_link(too_long, BASE) is None
    assert resolve_link("x.html #f", BASE) == _reference_resolve("x.html #f", BASE)


def test_a_tag_with_thousands_of_attributes_is_not_left_to_libxml2() -> None:
    """libxml2 checks duplicate attributes pairwise (50,000 attributes: ~30 s); html.parser takes them."""
    markup = "<p>before</p><a " + " ".join(f"h{i}=v" for i in range(50_000)) + " href=x.html>link</a>"
    start = time.perf_counter()
    page = parse_html(markup, BASE)
    assert time.perf_counter() - start < 10  # ~0.2 s; libxml2 alone would take ~30 s
    assert page.text == "before link" and [link.url for link in page.links] == [
        "http://example.com/docs/x.html"
    ]
    assert_same(parse_html(markup, BASE, parser="html.parser"), page)
    big_image = "<img src='data:image/png;base64," + "QUJD" * 20_000 + "'><a href=y.html>y</a>"
    assert not html._many_attributes(big_image)  # one long attribute is fine for libxml2


def test_pathological_nesting_is_parsed_in_linear_time() -> None:
    import time

    # Nested, never-closed <b><a>: both tree builders go quadratic (25 s for 8,000 in html.parser)
    for count in (4_000, 40_000):
        markup = "<title>bomb</title>" + "<b><a href=x.html>y" * count + "<p>tail <a href='z.html'>last</a>"
        started = time.perf_counter()
        page = parse_html(markup, BASE)
        elapsed = time.perf_counter() - started
        assert elapsed < 10.0, f"{count} nested anchors took {elapsed:.1f} s (quadratic: minutes)"
        assert page.title == "bomb"
        assert [link.url.rsplit("/", 1)[1] for link in page.links] == ["x.html", "z.html"]
        assert page.links[1].anchor == "last"
        assert page.text.endswith("y tail last")


def test_ordinary_deep_pages_keep_the_tree_walk() -> None:
    markup = "<div>" * 400 + "<p>text <a href=a.html>A</a>" + "</div>" * 400
    page = parse_html(markup, BASE)
    assert_same(parse_html(markup, BASE, parser="html.parser"), page)
    assert page.links[0].anchor == "A"
