"""The gateway's pure parts: parameter checks, safe snippet markup, SearXNG's JSON shape, quality plots."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oasis.cluster.config import ConfigError, parse_config
from oasis.gateway.app import templates
from oasis.gateway.search import (
    MAX_HITS,
    MAX_QUERY_CHARS,
    BadRequest,
    SearchParams,
    broker_k,
    decode_query_string,
    make_page,
    max_pageno,
    page_links,
    parse_search,
    requested_format,
    safe_href,
    searxng_json,
    snippet_markup,
    snippet_segments,
    snippet_text,
)
from oasis.gateway.status import QualityPoint, parse_quality_lines, plot, read_quality
from oasis.runtime.clients import SearchHit, SearchResult

# ------------------------------------------------------------------------------------------ parameters


def test_a_plain_query_parses_with_defaults() -> None:
    assert parse_search(b"q=sql+table%20index", 10) == SearchParams(
        query="sql table index", format="html", pageno=1
    )
    assert parse_search(b"q=caf%C3%A9&format=json&pageno=3&language=en", 10) == SearchParams(
        query="café", format="json", pageno=3
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "missing parameter q"),
        (b"format=json", "missing parameter q"),
        (b"q=", "empty query"),
        (b"q=+++%20", "empty query"),
        (b"q=%ff", "not valid UTF-8"),
        (b"q=%C3%28", "not valid UTF-8"),
        (b"q=\xff\xfe", "not valid UTF-8"),  # raw bytes a client did not percent-encode
        (b"q=a%00b", "control characters"),
        (b"q=a&q=b", "'q' given more than once"),
        (b"q=a&pageno=1&pageno=2", "'pageno' given more than once"),
        (b"q=a&format=csv", "format must be one of html, json"),
        (b"q=a&pageno=-1", "whole number from 1 to 99"),
        (b"q=a&pageno=abc", "whole number from 1 to 99"),
        (b"q=a&pageno=1.5", "whole number"),
        (b"q=a&pageno=%D9%A3", "whole number"),  # an Arabic-Indic digit is not an ASCII number
        (b"q=a&pageno=0", "from 1 to 99, got 0"),
        (b"q=a&pageno=1000000000", "from 1 to 99, got 1000000000"),
        (b"q=a&pageno=" + b"9" * 5000, "from 1 to 99"),
        (b"q=" + b"a" * (MAX_QUERY_CHARS + 1), f"longer than the limit of {MAX_QUERY_CHARS}"),
        (b"q=" + b"a" * 100_000, "longer than the limit of 16384"),
        (b"&".join(b"p%d=1" % i for i in range(40)) + b"&q=a", "too many parameters"),
    ],
)
def test_bad_parameters_are_a_clear_bad_request(raw: bytes, message: str) -> None:
    with pytest.raises(BadRequest, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_search(raw, 10)


def test_the_query_limit_counts_characters_not_bytes() -> None:
    q = "é" * MAX_QUERY_CHARS  # 2 bytes each in UTF-8, 6 characters percent-encoded
    raw = b"q=" + "".join(f"%{b:02X}" for b in q.encode()).encode()
    assert parse_search(raw, 10).query == q


def test_decoding_is_strict_utf8_and_keeps_blank_values() -> None:
    assert decode_query_string(b"q=%E2%82%AC&x=") == [("q", "€"), ("x", "")]
    assert decode_query_string("q=€".encode()) == [("q", "€")]  # raw UTF-8 bytes are accepted too


def test_errors_are_given_in_the_format_asked_for() -> None:
    assert requested_format(b"q=%ff&format=json") == "json"
    assert requested_format(b"q=%ff") == "html"
    assert requested_format(b"format=JSON&pageno=x") == "json"
    assert requested_format(b"format=json&" + b"&".join(b"p%d=%%ff" % i for i in range(100))) == "json"
    assert requested_format(b"q=" + b"x" * 100_000 + b"&format=json") == "json"
    assert requested_format(b"q=" + b"x" * 100_000) == "html"


def test_the_deepest_page_fits_the_brokers_limit() -> None:
    for size in (1, 7, 10, 100):
        last = max_pageno(size)
        assert broker_k(last, size) <= MAX_HITS
        assert last == 1 or broker_k(last + 1, size) > MAX_HITS or (last + 1) * size + 1 > MAX_HITS
    assert broker_k(1, 10) == 11  # one hit beyond the page says whether a next page exists


# ------------------------------------------------------------------------------------------ snippets


def test_snippet_keeps_only_the_engines_highlights() -> None:
    # what the engine sends: escaped text, matched terms in <b>
    snippet = "a &lt;script&gt;alert(1)&lt;/script&gt; <b>table</b> &amp; an <b>index</b>"
    assert snippet_segments(snippet) == [
        ("a <script>alert(1)</script> ", False),
        ("table", True),
        (" & an ", False),
        ("index", True),
    ]
    assert str(snippet_markup(snippet)) == (
        "a &lt;script&gt;alert(1)&lt;/script&gt; <b>table</b> &amp; an <b>index</b>"
    )
    assert snippet_text(snippet) == "a <script>alert(1)</script> table & an index"


def test_markup_an_engine_should_never_send_is_escaped() -> None:
    snippet = '<script>alert(1)</script><b onclick="x">t</b></b></b><b>open <img src=x onerror=alert(1)>'
    out = str(snippet_markup(snippet))
    assert "<script" not in out and "<img" not in out and "<b " not in out
    assert "&lt;script&gt;" in out and "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "&lt;b onclick=&#34;x&#34;&gt;" in out  # a tag with attributes is text, not a highlight
    assert out.count("<b>") == out.count("</b>") == 1  # the unclosed highlight, closed by the gateway


@given(st.text(max_size=200))
def test_snippet_markup_never_opens_a_tag_but_b(text: str) -> None:
    out = str(snippet_markup(text))
    stripped = out.replace("<b>", "").replace("</b>", "")
    assert "<" not in stripped
    assert out.count("<b>") == out.count("</b>")
    # the visible text is exactly the snippet's text
    assert html.unescape(stripped) == snippet_text(text)


def test_only_http_urls_become_links() -> None:
    assert safe_href("https://a.example/x?y=1") == "https://a.example/x?y=1"
    assert safe_href("http://a.example/") == "http://a.example/"
    for bad in ("javascript:alert(1)", " JavaScript:alert(1)", "data:text/html,<script>", "file:///etc/passwd",
                "//evil.example/", "http://[::1"):  # fmt: skip
        assert safe_href(bad) is None


# ------------------------------------------------------------------------------------------ replies


def result(n: int, states: dict[str, str], messages: dict[str, str] | None = None) -> SearchResult:
    return SearchResult(
        hits=[
            SearchHit(f"http://x.local/{i}", f"t{i}", f"s <b>{i}</b> &amp;", 1.0 - i / 100, "databases")
            for i in range(n)
        ],
        engines=states,
        partial=any(s != "ok" for s in states.values()),
        took_ms=3.0,
        messages=messages or {},
        engine_hits={name: n for name in states},
        engine_latency_ms={name: 1.5 for name in states},
    )


def test_searxng_json_has_the_fields_its_clients_read() -> None:
    params = SearchParams(query="q", format="json", pageno=2)
    states = {"databases": "ok", "python": "timeout", "web": "skipped", "old": "suspended"}
    page = make_page(params, result(25, states, {"python": "deadline 1000 ms"}), page_size=10)
    data = searxng_json(page)
    assert set(data) >= {"query", "number_of_results", "results", "unresponsive_engines"}
    assert data["query"] == "q" and data["pageno"] == 2 and data["number_of_results"] == 25
    more = result(25, states)
    more.engine_matches.update({"databases": 70, "web": 0})  # the engines matched more than they returned
    assert searxng_json(make_page(params, more, page_size=10))["number_of_results"] == 70
    assert [r["url"] for r in data["results"]] == [f"http://x.local/{i}" for i in range(10, 20)]
    first = data["results"][0]
    assert set(first) >= {"url", "title", "content", "engine", "score"}
    assert first["content"] == "s 10 &" and first["engine"] == "databases" and first["positions"] == [11]
    # skipped engines were not asked (no query term in common): not unresponsive
    assert data["unresponsive_engines"] == [["old", "suspended"], ["python", "timeout: deadline 1000 ms"]]
    json.dumps(data)  # serialisable as is


def test_pages_know_their_neighbours() -> None:
    states = {"databases": "ok"}
    first = make_page(SearchParams(query="a b", format="html", pageno=1), result(11, states), 10)
    assert first.has_next and len(first.hits) == 10 and first.first_rank == 1
    last = make_page(SearchParams(query="a b", format="html", pageno=2), result(11, states), 10)
    assert not last.has_next and len(last.hits) == 1 and last.first_rank == 11
    assert page_links("a&b", 2, True) == {
        "previous": "/search?q=a%26b&pageno=1",
        "next": "/search?q=a%26b&pageno=3",
    }
    assert page_links("a", 1, False) == {}


def test_templates_escape_what_the_user_typed() -> None:
    env = templates()
    query = "\"><script>alert('q')</script>"
    params = SearchParams(query=query, format="html", pageno=1)
    page = make_page(params, result(3, {"databases": "ok"}), 10)
    out = env.get_template("results.html").render(
        title="Oasis", max_query_chars=1000, page=page, query=query, links={}, last_page=99
    )
    assert "<script" not in out
    assert "&#34;&gt;&lt;script&gt;alert(&#39;q&#39;)&lt;/script&gt;" in out
    assert "s <b>0</b> &amp;" in out  # the highlight survives, escaped text around it


# ------------------------------------------------------------------------------------------ quality


def test_quality_lines_accept_the_series_names_and_derive_m() -> None:
    lines = [
        json.dumps({"t": 0, "topic": "db", "recall": 0.2, "freshness": 0.9}),
        json.dumps({"time": 5, "topic": "db", "R": 0.4, "F": 0.3, "M": 0.3}),
        "not json",
        json.dumps({"t": 7, "topic": "db"}),  # no value: skipped
        json.dumps([1, 2]),
        json.dumps({"elapsed": 3, "quality": 0.5}),  # no topic: the file's
    ]
    out = parse_quality_lines(lines, default_topic="py")
    assert [(p.t, p.recall, p.freshness, p.M) for p in out["db"]] == [
        (0.0, 0.2, 0.9, 0.2),  # M = min(R, F), papers/004 Eq. 3
        (5.0, 0.4, 0.3, 0.3),
    ]
    assert [(p.t, p.M) for p in out["py"]] == [(3.0, 0.5)]


def test_quality_lines_read_the_cluster_evaluators_rows_of_every_topic(tmp_path: Path) -> None:
    # STATE_DIR/quality.jsonl as oasis.cluster.evaluator appends it: one row per evaluation, all topics
    rows = [
        {"time": 100.0, "elapsed": 1.0, "web": {"pages": 9}, "topics": {
            "net": {"recall": 0.3, "freshness": 1.0, "M": 0.3, "robot": {"state": "running"}},
            "text": {"recall": 0.5, "freshness": 0.8, "M": 0.5}}},
        {"time": 102.0, "elapsed": 3.0, "topics": {"net": {"recall": 0.6, "freshness": 0.9, "M": 0.6}}},
    ]  # fmt: skip
    (tmp_path / "quality.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = read_quality(tmp_path / "quality.jsonl")
    got = [(p.t, p.recall, p.freshness, p.M) for p in out["net"]]
    assert got == [(100.0, 0.3, 1.0, 0.3), (102.0, 0.6, 0.9, 0.6)]
    assert [(p.t, p.M) for p in out["text"]] == [(100.0, 0.5)]


def test_quality_folder_is_read_per_topic_and_sorted(tmp_path: Path) -> None:
    assert read_quality(tmp_path / "absent") == {}
    (tmp_path / "db.jsonl").write_text(
        "\n".join(json.dumps({"t": t, "recall": 0.1 * t, "freshness": 1.0}) for t in (3, 1, 2))
    )
    out = read_quality(tmp_path)
    assert [p.t for p in out["db"]] == [1.0, 2.0, 3.0]


def test_plot_stays_inside_its_box() -> None:
    points = [QualityPoint(t=10.0 + i, recall=i / 10, freshness=1 - i / 20, M=min(i / 10, 1 - i / 20))
              for i in range(11)]  # fmt: skip
    p = plot("db", points, width=300, height=100)
    assert [key for key, _, _ in p.lines] == ["recall", "freshness", "M"]
    for _, _, coords in p.lines:
        xy = [tuple(map(float, c.split(","))) for c in coords.split()]
        assert len(xy) == 11
        assert all(40 <= x <= 278 and 10 <= y <= 76 for x, y in xy)
        assert xy[0][0] == 40 and xy[-1][0] == 278  # the time axis spans the series
    recall_y = [float(c.split(",")[1]) for c in p.lines[0][2].split()]
    assert recall_y == sorted(recall_y, reverse=True)  # rising recall goes up the page
    assert p.latest == {"recall": 1.0, "freshness": 0.5, "M": 0.5}


# ------------------------------------------------------------------------------------------ cluster TOML


def test_gateway_port_in_the_cluster_toml() -> None:
    base = {"topic": [{"name": "a", "keywords": ["x"]}]}
    assert parse_config(base).gateway_port == 0
    assert parse_config({**base, "gateway": {"port": 8088}}).gateway_port == 8088
    with pytest.raises(ConfigError, match="port"):
        parse_config({**base, "gateway": {"port": 70000}})
    with pytest.raises(ConfigError, match="taken by a cluster service"):
        parse_config({"topic": [{"name": "gateway", "keywords": ["x"]}]})
