"""The one text analyser (oasis.runtime.text): the engine indexes and the directory routes with the same
tokens."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.directory.analysis import analyse
from oasis.engine.index import IndexLimits, TopicIndex, Upsert, make_upsert
from oasis.engine.topic import Topic
from oasis.runtime.text import distinct_terms, make_analyzer, tokenize

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
@given(st.text(alphabet=st.sampled_from(list(TRICKY + "İIı.._ \n\t-'’0123456789")), max_size=200))
def test_fused_tokenize_equals_the_whoosh_analyser_chain(text: str) -> None:
    assert tokenize(text) == [t.text for t in make_analyzer()(text)]
    assert tokenize(TRICKY * 3) == [t.text for t in make_analyzer()(TRICKY * 3)]
