"""The one text analyser (oasis.runtime.text): the engine indexes and the directory routes with the same
tokens."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.analysis import StemmingAnalyzer
from whoosh.formats import Positions

from oasis.directory.analysis import analyse
from oasis.engine.index import IndexLimits, TopicIndex, Upsert, make_upsert
from oasis.engine.topic import Topic
from oasis.runtime.clients import MAX_SCORE_CHARS
from oasis.runtime.text import (
    _ANALYSED,
    SCORE_PREFIX_CHARS,
    FusedPositions,
    _take_positions,
    anchor_words,
    distinct_terms,
    link_words,
    make_analyzer,
    remembered_counts,
    term_positions,
    tokenize,
    url_words,
)

# Capitals, stop words, plurals and -ing forms, possessives, hyphens, digits, accents, CJK, punctuation runs
TRICKY = (
    "The Rockets' LAUNCHING of re-usable boosters: NASA's 2024 orbits, crawled & crawling... "
    "naïve café über-fast Straße e-mail foo_bar x86-64 東京 the of and running runs ran"
)


def test_tokenize_stems_and_drops_stop_words() -> None:
    assert tokenize("The Rockets were launching into orbits") == ["rocket", "were", "launch", "into", "orbit"]
    assert tokenize("") == []
    assert distinct_terms("orbit orbits Orbiting rocket orbit") == ("orbit", "rocket")


def test_engine_index_terms_are_the_directory_routing_terms(tmp_path: Path) -> None:
    index = TopicIndex.open(tmp_path / "ix", Topic(name="t", keywords=("zzzz",)))
    try:
        op = make_upsert(
            seq=1, url="http://a.test/1", title="", text=TRICKY, fetch_time=0.0, relevance=0.5,
            limits=IndexLimits(),
        )  # fmt: skip
        assert isinstance(op, Upsert)
        index.apply([op])
        indexed = {t.term for t in index.summary(max_terms=10_000).terms}  # what the directory is told
    finally:
        index.close()
    routed = analyse(TRICKY)  # what the directory makes of the same text as a query
    assert len(routed) > 15
    assert indexed == set(routed) == set(tokenize(TRICKY))
    assert "launch" in routed and "crawl" in routed and "the" not in routed


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list(TRICKY + "İIı.._ \n\t-'’0123456789")), max_size=200),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_fused_analyser_equals_the_whoosh_chain(
    text: str, positions: bool, chars: bool, removestops: bool
) -> None:
    """The definition is Whoosh's StemmingAnalyzer(): same terms, positions, spans, stop flags."""
    kw = {"positions": positions, "chars": chars, "removestops": removestops, "start_pos": 3, "start_char": 7}

    def stream(analyzer: Any) -> list[tuple[Any, ...]]:
        return [
            (t.text, t.stopped, t.pos if positions else None, (t.startchar, t.endchar) if chars else None)
            for t in analyzer(text, mode="index", **kw)
        ]

    assert stream(make_analyzer()) == stream(StemmingAnalyzer())
    assert tokenize(text) == [t.text for t in StemmingAnalyzer()(text)]
    assert [t.text for t in make_analyzer()(text, tokenize=False)] == [
        t.text for t in StemmingAnalyzer()(text, tokenize=False)
    ]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(TRICKY + "İIı.._ \n\t-'’0123456789")), max_size=300))
def test_fused_positions_equal_whoosh_positions(text: str) -> None:
    """What the index stores per term (frequency, weight, encoded positions) is Whoosh's own, for a plain
    and a boosted field, over the fused analyser and over Whoosh's chain."""
    for boost in (1.0, 2.0):
        fused, plain = FusedPositions(field_boost=boost), Positions(field_boost=boost)
        expected = list(plain.word_values(text, StemmingAnalyzer(), mode="index"))
        assert list(fused.word_values(text, make_analyzer(), mode="index")) == expected
        assert list(plain.word_values(text, make_analyzer(), mode="index")) == expected
        assert list(fused.word_values(text, StemmingAnalyzer(), mode="index")) == expected


def test_tokenize_equals_the_whoosh_chain_on_real_text() -> None:
    assert tokenize(TRICKY * 3) == [t.text for t in StemmingAnalyzer()(TRICKY * 3)]


def test_an_index_written_with_the_whoosh_chain_still_opens_searches_and_grows(tmp_path: Path) -> None:
    """Indexes created before the fused analyser pickled Whoosh's StemmingAnalyzer in their schema."""
    from whoosh import fields
    from whoosh import index as windex

    old = fields.Schema(
        url=fields.ID(stored=True, unique=True),
        title=fields.TEXT(stored=True, analyzer=StemmingAnalyzer(), field_boost=2.0),
        text=fields.TEXT(stored=True, analyzer=StemmingAnalyzer()),
        fetch_time=fields.STORED,
        relevance=fields.STORED,
    )
    (tmp_path / "ix").mkdir()
    ix = windex.create_in(str(tmp_path / "ix"), old)
    with ix.writer() as w:
        w.add_document(
            url="http://a.test/old", title="Old", text="crawling rockets", fetch_time=0.0, relevance=0.5
        )
    ix.close()
    index = TopicIndex.open(tmp_path / "ix", Topic(name="t", keywords=("rocket",)))
    try:
        op = make_upsert(
            seq=1, url="http://a.test/new", title="New", text="the rockets crawled", fetch_time=0.0,
            relevance=0.5, limits=IndexLimits(),
        )  # fmt: skip
        assert isinstance(op, Upsert)
        index.apply([op])
        assert {h.url for h in index.search("crawl rocket").hits} == {
            "http://a.test/old",
            "http://a.test/new",
        }
    finally:
        index.close()


def test_a_scored_text_is_analysed_once_and_indexed_the_same(tmp_path: Path) -> None:
    """The engine's Score keeps each page text's analysis for indexing it (issue 14): the index built
    after scoring holds the same postings, positions and scores as one built without, and the kept
    analysis is taken by the indexing (so the text was not analysed a second time)."""
    topic = Topic(name="db", description="databases", keywords=("sql", "index"))
    pages = [
        (
            f"http://db.org/{n}",
            f"Page {n} of SQL",
            (TRICKY + f" the table{n} index of rows {n} " * 3) * (n + 3) * (1 if n < 4 else 120),
        )
        for n in range(6)
    ]
    assert (
        max(len(body) for _, _, body in pages) > 2 * SCORE_PREFIX_CHARS > 2 * min(len(b) for _, _, b in pages)
    )

    def build(directory: Path, score_first: bool) -> tuple[list[float], dict[tuple[str, bytes], Any]]:
        index = TopicIndex.open(directory, topic)
        try:
            # as the engine client sends them: at most SCORE_PREFIX_CHARS of each text
            scores = index.score([(title, body[:MAX_SCORE_CHARS]) for _, title, body in pages])
            if score_first:  # every text long enough to keep is kept until indexed
                kept = len(_ANALYSED)
                assert kept >= len(pages)
            else:
                while _ANALYSED._entries:  # forget them: this index analyses every text itself
                    _ANALYSED.take(next(iter(_ANALYSED._entries)))
            ops = [
                make_upsert(
                    seq=i + 1, url=u, title=t, text=b, fetch_time=1.0, relevance=0.5, limits=IndexLimits()
                )
                for i, (u, t, b) in enumerate(pages)
            ]
            index.apply(ops)  # type: ignore[arg-type]
            index.stats()  # committed
            if score_first:
                assert len(_ANALYSED) == kept - len(pages)  # taken by indexing, not analysed again
            postings = {}
            with index._ix.searcher() as s:
                reader = s.reader()
                for field in ("title", "text"):
                    for term in reader.lexicon(field):
                        m = reader.postings(field, term)
                        postings[(field, term)] = list(m.items_as("positions"))
            hits = [(h.url, round(h.score, 9)) for h in index.search("sql table3 index", limit=10).hits]
            return scores, {"postings": postings, "hits": hits}  # type: ignore[dict-item]
        finally:
            index.close()

    with_reuse = build(tmp_path / "a", score_first=True)
    without = build(tmp_path / "b", score_first=False)
    assert with_reuse == without


def test_the_score_prefix_is_the_clients() -> None:
    assert SCORE_PREFIX_CHARS == MAX_SCORE_CHARS


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["the", "Rocket", "orbits", "a", "x.y", "NASA's", "東京", "of", "crawled"]),
        max_size=40,
    ),
    seps=st.lists(st.sampled_from([" ", "  ", ". ", ", ", "-", ".", "\n"]), min_size=40, max_size=40),
    limit=st.integers(min_value=1, max_value=60),
)
def test_an_analysis_kept_from_a_prefix_continues_exactly(
    words: list[str], seps: list[str], limit: int
) -> None:
    """Score's counts equal Counter(tokenize), and indexing a text that starts with the scored prefix (cut
    anywhere, even inside a word) gets exactly the positions of a whole analysis."""
    import oasis.runtime.text as text_module

    saved = text_module.SCORE_PREFIX_CHARS, _ANALYSED.min_chars
    text_module.SCORE_PREFIX_CHARS, _ANALYSED.min_chars = limit, 1
    try:
        text = "".join(w + s for w, s in zip(words, seps, strict=False))
        scored = text[:limit]
        assert remembered_counts(scored) == Counter(tokenize(scored))
        assert list(remembered_counts(scored)) == list(Counter(tokenize(scored)))  # same order
        assert _take_positions(text) == term_positions(text)
        assert _take_positions(text) == term_positions(text)  # taken once; the second analyses anew
    finally:
        text_module.SCORE_PREFIX_CHARS, _ANALYSED.min_chars = saved


def test_kept_analyses_stay_bounded_under_a_flood_of_scored_texts() -> None:
    """A client that scores many (or huge) texts it never indexes cannot grow the engine's kept analyses
    past their bounds: the oldest go first, by count and by characters; a text over the character bound, or
    under the minimum, is not kept at all."""
    from oasis.runtime.text import _Analysed

    kept = _Analysed(max_entries=4, max_chars=1_000, min_chars=10)
    texts = [f"page {i} " + "word " * 40 for i in range(10)]  # 208-209 characters each
    for text in texts:
        kept.put(text, ({}, 0, -1, True))
        assert len(kept) <= 4 and kept._chars <= 1_000
    assert kept._chars == sum(len(t) for t in kept._entries)
    assert list(kept._entries) == texts[-4:]  # the newest four; the oldest went first
    assert kept.take(texts[0]) is None and kept.take(texts[-1]) is not None  # taken once
    assert kept.take(texts[-1]) is None
    kept.put("x" * 1_001, ({}, 0, -1, True))  # over the character bound: not kept, nothing evicted for it
    kept.put("short", ({}, 0, -1, True))  # under the minimum (anchor texts, titles)
    assert list(kept._entries) == texts[-4:-1]


def test_anchor_words_cut_identifiers_into_words() -> None:
    """An API reference's anchors are identifiers: a dotted name is one token as written (Whoosh's
    expression), so scored as written it shares no term with a topic; cut, it does (session 23)."""
    assert anchor_words("nipype.pipeline.engine") == "nipype pipeline engine"
    assert anchor_words("expected_conditions.WebDriverWait") == "expected conditions Web Driver Wait"
    assert anchor_words("load__balancer and HTTPServer v2Api") == "load balancer and HTTPServer v2 Api"
    # separators not between word characters stay (an ellipsis, a leading underscore, a trailing dot)
    assert anchor_words("... _private end.") == "... _private end."
    assert tokenize("nipype.pipeline.engine") == ["nipype.pipeline.engine"]
    assert tokenize(anchor_words("nipype.pipeline.engine")) == ["nipype", "pipelin", "engin"]
    assert anchor_words("") == "" and anchor_words("plain words") == "plain words"


def test_link_words_are_the_anchor_and_the_url_path() -> None:
    """What a link says about its target: its anchor and its URL's path words, identifiers cut."""
    assert url_words("http://n.docs.local/api/generated/nipype.pipeline.engine.html") == (
        "api generated nipype.pipeline.engine"
    )
    assert url_words("http://h/docs/index.html") == "docs" and url_words("http://h/") == ""
    assert url_words("http://h/user/quick-start/?q=1#x") == "user quick start"
    assert link_words("[source]", "http://h/_modules/requests/auth.html") == "[source] _modules requests auth"
    assert (
        link_words("Pipeline", "http://h/api/nipype.pipeline.engine.html")
        == "Pipeline api nipype pipeline engine"
    )
    assert link_words("", "http://h/index.html") == "" and link_words("next", "http://h/") == "next"
    # a URL that does not parse gives no words, the anchor still counts
    assert (
        url_words("http://[::1/x.html") == "" and link_words("sql_query", "http://[::1/x.html") == "sql query"
    )
