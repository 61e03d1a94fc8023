"""The response processor: parsing via oasis.runtime.html, scoring with the engine's topic model, change
detection by content hash, and what every kind of failed fetch turns into."""

from __future__ import annotations

from collections.abc import Sequence

from robot_testweb import TOPIC

from oasis.engine.relevance import RelevanceModel
from oasis.robot import fetcher as f
from oasis.robot.processor import ResponseProcessor
from oasis.robot.scheduling import DELETED, ERROR, MODIFIED, NEW, UNCHANGED

MODEL = RelevanceModel.fit_corpus(TOPIC, ["sql query database", "cooking recipes", "gardening tips"])
BASE = "http://site.test/docs/"


class Scorer:
    """The engine's real relevance model in-process (the Score RPC's implementation), counting calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, pages: Sequence[tuple[str, str]]) -> list[float]:
        self.calls += 1
        return [MODEL.score(t, x) for t, x in pages]


def ok(url: str, body: str, charset: str | None = "utf-8") -> f.FetchResult:
    return f.FetchResult(url, f.OK, status=200, content=body.encode(charset or "utf-8"), charset=charset)


PAGE = """<html><head><title>SQL queries</title><script>var x = "invisible";</script></head>
<body><p>A database query in SQL selects rows from a table.</p>
<a href="b.html#part">Transactions and SQL</a> <a href="b.html">b again</a>
<a href="mailto:x@y">mail</a> <a href="ftp://x/y">ftp</a> <a href="http://other.test/z">other host</a>
<a href="/c.html">cooking</a></body></html>"""


def test_new_page_scored_links_canonical_and_in_scope() -> None:
    scorer = Scorer()
    proc = ResponseProcessor(scorer, max_bytes=1 << 20, in_scope=lambda u: u.startswith("http://site.test/"))
    [p] = proc.process([ok(BASE + "a.html", PAGE)], fetch_time=1000.0)
    assert p.kind == NEW and p.error is None
    assert p.op is not None
    assert p.relevance == MODEL.score(p.op.title, p.op.text) > 0.1
    assert [c.url for c in p.children] == [BASE + "b.html", "http://site.test/c.html"]
    sql_anchor, cooking = p.children
    assert sql_anchor.anchor.startswith("Transactions and SQL")
    assert sql_anchor.anchor_relevance > cooking.anchor_relevance == 0.0
    assert p.op is not None and p.op.title == "SQL queries" and "invisible" not in p.op.text
    assert p.op.relevance == p.relevance and p.op.fetch_time == 1000.0
    assert scorer.calls == 1  # pages and anchors in one Score call


def test_change_detection_and_deletion() -> None:
    proc = ResponseProcessor(Scorer(), max_bytes=1 << 20)
    url = BASE + "a.html"
    assert proc.process([ok(url, PAGE)], 1.0)[0].kind == NEW
    again = proc.process([ok(url, PAGE.replace("<script>", "<script>//changed "))], 2.0)[0]
    assert again.kind == UNCHANGED and again.op is None  # invisible change: same visible content
    changed = proc.process([ok(url, PAGE.replace("selects rows", "deletes rows"))], 3.0)[0]
    assert changed.kind == MODIFIED and changed.op is not None
    gone = proc.process([f.FetchResult(url, f.NOT_FOUND, status=404)], 4.0)[0]
    assert gone.kind == DELETED and gone.op is not None and gone.op.delete
    never = proc.process([f.FetchResult(BASE + "x", f.NOT_FOUND, status=404)], 5.0)[0]
    assert never.kind == ERROR and never.error == f.NOT_FOUND and never.op is None


def test_failures_and_redirects() -> None:
    proc = ResponseProcessor(Scorer(), max_bytes=1 << 20, in_scope=lambda u: "site.test" in u)
    results = [
        f.FetchResult(BASE + "t", f.TIMEOUT),
        f.FetchResult(BASE + "r", f.REDIRECT, status=301, redirect_to=BASE + "target"),
        f.FetchResult(BASE + "out", f.REDIRECT, status=302, redirect_to="http://evil.test/"),
    ]
    timeout, moved, out = proc.process(results, 1.0)
    assert (timeout.kind, timeout.error) == (ERROR, f.TIMEOUT)
    # a redirect has no content of its own; its target is its one discovered child
    assert moved.kind == NEW and moved.relevance == 0.0 and moved.error == f.REDIRECT
    assert [c.url for c in moved.children] == [BASE + "target"] and moved.op is None
    assert out.children == ()  # out of scope
    # a page we had indexed now redirects: delete it, and crawl the target as a new root
    proc.process([ok(BASE + "old", PAGE)], 2.0)
    [old] = proc.process([f.FetchResult(BASE + "old", f.REDIRECT, status=301, redirect_to=BASE + "new")], 3.0)
    assert old.kind == DELETED and old.op is not None and old.op.delete and old.seed == BASE + "new"


def test_garbage_never_raises_and_noindex_nofollow() -> None:
    proc = ResponseProcessor(Scorer(), max_bytes=4096)
    junk = f.FetchResult(BASE + "bin", f.OK, status=200, content=bytes(range(256)) * 100)
    latin = ok(BASE + "latin", "<title>caf\xe9</title><p>d\xe9j\xe0 vu SQL</p>", charset="latin-1")
    robots = ok(BASE + "n", '<meta name="robots" content="noindex,nofollow"><a href="x">x</a> SQL')
    p_junk, p_latin, p_robots = proc.process([junk, latin, robots], 1.0)
    assert p_junk.kind == NEW
    assert p_latin.op is not None and p_latin.op.title == "caf\xe9"
    assert p_robots.op is None and p_robots.children == ()


def test_x_robots_tag_header_as_the_meta_tag() -> None:
    """The ``X-Robots-Tag`` response header (the meta tag's twin, for any response) was ignored: a page served
    with ``noindex`` was indexed and one with ``nofollow`` had its links followed."""
    proc = ResponseProcessor(Scorer(), max_bytes=4096)
    body = '<title>SQL</title><p>SQL query database</p><a href="x.html">SQL x</a>'

    def served(name: str, tag: str) -> f.FetchResult:
        res = ok(BASE + name, body)
        res.headers["x-robots-tag"] = tag
        return res

    cases = ["noindex", "nofollow", "none", "googlebot: noindex, nofollow", "oasisrobot: noindex",
             "unavailable_after: 25 Jun 2010 15:00:00 PST", "googlebot: none, oasis: nofollow"]  # fmt: skip
    got = proc.process([served(str(k), tag) for k, tag in enumerate(cases)], 1.0)
    indexed = [p.op is not None for p in got]
    followed = [bool(p.children) for p in got]
    assert indexed == [False, True, False, True, False, True, True]
    assert followed == [True, False, False, True, True, True, False]


def test_min_relevance_keeps_off_topic_pages_out_of_the_index() -> None:
    proc = ResponseProcessor(Scorer(), max_bytes=1 << 20, min_relevance=0.2)
    on, off = proc.process(
        [ok(BASE + "on", PAGE), ok(BASE + "off", "<title>Cake</title><p>cooking recipes</p>")], 1.0
    )
    assert on.relevance >= 0.2 and on.op is not None
    assert off.relevance < 0.2 and off.op is None and off.kind == NEW  # still reported and learned from
    # a page we had indexed drifting off topic is deleted
    [drift] = proc.process([ok(BASE + "on", "<title>Cake</title><p>gardening tips</p>")], 2.0)
    assert drift.kind == MODIFIED and drift.op is not None and drift.op.delete


def test_a_link_is_scored_by_its_anchor_and_url_words() -> None:
    """A link is scored by what it says about its target (session 23): its anchor with identifiers cut (an
    API reference's module or class name), and its URL's path words (a link whose anchor says nothing)."""
    page = (
        '<html><body><p>index</p><a href="m.html">db.sql_query.Database</a> <a href="sql-queries.html">'
        '[source]</a> <a href="x.html">[source]</a></body></html>'
    )
    scorer = Scorer()
    [p] = ResponseProcessor(scorer, max_bytes=1 << 20).process([ok(BASE + "i.html", page)], 1.0)
    ident, by_url, neither = p.children
    assert ident.anchor == "db.sql_query.Database"  # the anchor as written is what the link carries
    assert ident.anchor_relevance == MODEL.score("", "db sql query Database docs m") > 0.1
    assert MODEL.score("", ident.anchor) == 0.0  # as written: one dotted token, no term of the topic
    assert by_url.anchor_relevance == MODEL.score("", "[source] docs sql queries") > 0.1
    assert neither.anchor_relevance == 0.0
    assert scorer.calls == 1


def test_a_prompt_meta_refresh_is_a_redirect_and_a_late_one_a_link() -> None:
    """A ``<meta http-equiv="refresh">`` was ignored: a redirect stub was indexed as an empty page and its
    target never found. A refresh within REFRESH_REDIRECT seconds is a redirect now, as a 3xx is; a later one
    leaves the page a page, with one more link."""
    proc = ResponseProcessor(Scorer(), max_bytes=4096, in_scope=lambda url: url.startswith(BASE))

    def refresh(name: str, content: str, body: str = "") -> f.FetchResult:
        return ok(BASE + name, f'<meta http-equiv="refresh" content="{content}"><title>SQL</title>{body}')

    stub, late, hidden, away, reload = proc.process(
        [
            refresh("stub.html", "0; url=target.html"),
            refresh("late.html", "30; url=next.html", "<p>SQL query database</p><a href='b.html'>SQL</a>"),
            refresh("nf.html", "30; url=next.html", '<meta name="robots" content="nofollow"><p>SQL</p>'),
            refresh("away.html", "1; url=http://other.test/x"),
            refresh("reload.html", "0", "<p>SQL query database</p>"),
        ],
        1.0,
    )
    assert stub.error == f.REDIRECT and stub.kind == NEW and stub.relevance == 0.0 and stub.op is None
    assert [c.url for c in stub.children] == [BASE + "target.html"]
    assert late.error is None and late.op is not None and late.op.text == "SQL query database SQL"
    assert [c.url for c in late.children] == [BASE + "b.html", BASE + "next.html"]
    assert hidden.op is not None and hidden.children == ()  # nofollow: not even the refresh's target
    assert away.error == f.REDIRECT and away.children == ()  # out of scope: not followed
    assert reload.error is None and reload.op is not None and reload.children == ()  # reloads itself
    # a page we had indexed turns into a stub: deleted, and its target crawled as a new root (as after a 301)
    proc.process([ok(BASE + "old.html", PAGE)], 2.0)
    [old] = proc.process([refresh("old.html", "0; url=new.html")], 3.0)
    assert old.kind == DELETED and old.op is not None and old.op.delete and old.seed == BASE + "new.html"


def test_links_whose_suffix_names_no_page_are_not_followed() -> None:
    """Every link was requested whatever it named: on the dask docs 1,009 of 2,092 requests were for Sphinx's
    ``_sources/*.rst.txt``, images and downloads, each a request (and a politeness delay) for nothing the
    robot can index. Links whose path ends with a suffix of NOT_PAGE_SUFFIXES are not followed now."""
    from oasis.robot.config import NOT_PAGE_SUFFIXES

    links = ["_sources/a.rst.txt", "logo.PNG", "pic.svg?v=2", "paper.pdf", "nb.ipynb", "get.php?f=a.png",
             "Page.HTML", "dir/", "data.json.html", "noext"]  # fmt: skip
    body = "<p>SQL</p>" + "".join(f'<a href="{u}">SQL {k}</a>' for k, u in enumerate(links))
    proc = ResponseProcessor(Scorer(), max_bytes=1 << 16, skip_suffixes=NOT_PAGE_SUFFIXES)
    [page] = proc.process([ok(BASE + "p.html", body)], 1.0)
    kept = [c.url[len(BASE) :] for c in page.children]
    assert kept == ["get.php?f=a.png", "Page.HTML", "dir/", "data.json.html", "noext"]
    assert proc.not_pages == 5
    everything = ResponseProcessor(Scorer(), max_bytes=1 << 16)  # skip_suffixes () follows every link
    [page] = everything.process([ok(BASE + "p.html", body)], 1.0)
    assert len(page.children) == len(links) and everything.not_pages == 0


def test_skip_suffixes_must_be_lower_case_dotted_suffixes() -> None:
    """A suffix without its dot (``"png"`` would also skip ``/ping``) or in upper case (never matched: paths
    are compared lower-cased) is refused when the robot is configured."""
    import pytest

    from oasis.robot.config import RobotConfig

    for bad in (("png",), (".PNG",)):
        with pytest.raises(ValueError, match="skip_suffixes must be lower-case suffixes"):
            RobotConfig(skip_suffixes=bad)
    assert RobotConfig(skip_suffixes=()).skip_suffixes == ()


def test_held_relevance_follows_every_page_kept_changed_and_gone() -> None:
    """``held``: the relevance of the known pages at or above min_relevance (the recall estimate's S_C),
    kept as pages come, change and go, and recounted when a checkpoint replaces the known pages."""
    proc = ResponseProcessor(Scorer(), max_bytes=1 << 20, min_relevance=0.2, in_scope=lambda u: "site" in u)
    [a] = proc.process([ok(BASE + "a.html", PAGE)], 1.0)
    [c] = proc.process([ok(BASE + "c.html", "<title>Cooking</title><p>cooking recipes and tips</p>")], 1.0)
    assert a.relevance >= 0.2 > c.relevance  # the cooking page is known, not held
    assert proc.held == a.relevance
    [a2] = proc.process([ok(BASE + "a.html", PAGE.replace("selects rows", "selects rows, SQL rows"))], 2.0)
    assert a2.kind == MODIFIED and proc.held == a2.relevance
    [gone] = proc.process([f.FetchResult(BASE + "a.html", f.NOT_FOUND, status=404)], 3.0)
    assert gone.kind == DELETED and proc.held == 0.0
    proc.process([ok(BASE + "a.html", PAGE)], 4.0)
    redirect = f.FetchResult(BASE + "a.html", f.REDIRECT, status=301, redirect_to=BASE + "z.html")
    [moved] = proc.process([redirect], 5.0)
    assert moved.kind == DELETED and proc.held == 0.0
    proc.process([ok(BASE + "a.html", PAGE)], 6.0)
    snapshot = dict(proc.known)
    proc.known = {}
    assert proc.held == 0.0
    proc.known = snapshot
    assert proc.held == a.relevance
    assert proc.held_pages() == {BASE + "a.html": a.relevance}  # the cooking page is known, not held
