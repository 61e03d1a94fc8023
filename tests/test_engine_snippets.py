"""Snippets (oasis.engine.snippets): the fast matcher against its plain definition (the analyser run over the
whole text), fragment choice and HTML, and the exact total of a one-pass search."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh import index as windex
from whoosh import scoring
from whoosh.analysis import StemmingAnalyzer

from oasis.engine.index import TopicIndex, Upsert
from oasis.engine.snippets import (
    Snippeter,
    candidate_prefixes,
    encode_for_search,
    find_matches,
    stem_prefix,
)
from oasis.engine.topic import Topic
from oasis.runtime.text import tokenize

_WORD_LIST = (
    "index indexes indexing indexed happy happiness hoping hope possibility possible relational relate "
    "queries query querying PostgreSQL postgresql Extensions extension generalization general the and of "
    "naïve café Ünïcode über table tables tabled x.index index.x e.g. pg_dump 3.14 don’t Index, INDEX"
)
WORDS = tuple(_WORD_LIST.split())
SEPARATORS = (" ", " ", " ", ", ", ". ", ".", "\n", " (", ") ", " ¶ ", " » ", "-", "_", "/")


def plain_matches(text: str, terms: frozenset[str]) -> list[tuple[int, int, str]]:
    """The definition: every token of the index's analyser (character spans) whose term is a query term."""
    analyzer = StemmingAnalyzer()  # Whoosh's own chain
    return [
        (t.startchar, t.endchar, t.text) for t in analyzer(text, chars=True, mode="index") if t.text in terms
    ]


def fast_matches(text: str, terms: frozenset[str]) -> list[tuple[int, int, str]]:
    prefixes = candidate_prefixes(terms)
    _, data = encode_for_search(text, prefixes)
    out = []
    for b, e, term in find_matches(data, terms, prefixes):
        start = len(data[:b].decode("utf-8"))  # byte offsets -> character offsets
        out.append((start, start + len(data[b:e].decode("utf-8")), term))
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), min_size=1, max_size=60),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4),
)
def test_fast_matcher_equals_the_analyser_over_the_whole_text(
    pieces: list[tuple[str, str]], query_words: list[str]
) -> None:
    text = "".join(w + sep for w, sep in pieces)
    terms = frozenset(t for w in query_words for t in tokenize(w))
    assert fast_matches(text, terms) == plain_matches(text, terms)


def test_stem_prefix_is_a_prefix_of_every_word_that_stems_to_the_term() -> None:
    words = [
        *re.findall(r"\w+", Path(__file__).read_text(encoding="utf-8")),
        "possibility", "hoping", "happy", "relational", "generalization", "conditional", "activation",
        "digitizer", "abilities", "sensibilities", "formality", "hopefulness", "electricity", "flies",
    ]  # fmt: skip
    for w in words:
        for term in tokenize(w):
            assert w.lower().startswith(stem_prefix(term)), (w, term)


def test_snippet_highlights_terms_in_context_and_escapes_html() -> None:
    snippeter = Snippeter(maxchars=80, surround=20, top=2)
    text = (
        "<script> & intro words "
        + "filler " * 40
        + "the Indexes of a table are indexed quickly "
        + "end " * 40
    )
    terms = frozenset(tokenize("index table"))
    out = snippeter.snippet(text, terms, candidate_prefixes(terms))
    assert "<b>Indexes</b>" in out and "<b>indexed</b>" in out and "<b>table</b>" in out
    assert "<script>" not in out
    assert len(re.sub("<[^>]+>", "", out)) <= 80 + 2 * 20


def test_snippet_prefers_the_fragment_with_more_distinct_terms_and_keeps_order() -> None:
    snippeter = Snippeter(maxchars=60, surround=10, top=1)
    text = "alpha index index index " + "z " * 100 + "beta index table omega " + "z " * 100
    terms = frozenset(tokenize("index table"))
    out = snippeter.snippet(text, terms, candidate_prefixes(terms))
    assert "<b>table</b>" in out and "alpha" not in out
    two = Snippeter(maxchars=60, surround=10, top=2).snippet(text, terms, candidate_prefixes(terms))
    assert two.index("<b>index</b>") < two.index("<b>table</b>") and " ... " in two


def test_snippet_without_a_match_is_the_escaped_start_and_overlaps_merge() -> None:
    snippeter = Snippeter(maxchars=20, surround=30, top=2)
    terms = frozenset(tokenize("rocket"))
    text = "a <b> page about nothing much at all"
    assert snippeter.snippet(text, terms, candidate_prefixes(terms)) == "a &lt;b&gt; page about not"
    text = "rockets fly far and rocket science is hard work"
    out = snippeter.snippet(text, terms, candidate_prefixes(terms))
    assert out.count("science") == 1 and " ... " not in out


def test_search_total_is_exact_and_snippets_come_from_the_stored_text(tmp_path: Path) -> None:
    index = TopicIndex.open(tmp_path / "ix", Topic(name="t", keywords=("index",)))
    rng = random.Random(3)
    vocab = ["index", "table", "query", "row", "column", "page", "tree", "lock"]
    ops = []
    for i in range(300):
        words = [rng.choice(vocab) for _ in range(rng.randint(5, 40))]
        ops.append(
            Upsert(seq=i, url=f"http://h.org/{i}", title=f"doc {i}", text=" ".join(words), fetch_time=0.0,
                   relevance=0.5)
        )  # fmt: skip
    index.apply(ops)
    index.apply(ops[:40])  # a second segment
    index.stats()  # a read commits the logged batch (so Whoosh below opens the same index)
    plain = windex.open_dir(str(tmp_path / "ix")).searcher(weighting=scoring.BM25F(B=0.75, K1=1.2))
    for q in ("index", "table lock", "tree OR row", "column page query", "index table row lock tree"):
        qterms = set(tokenize(q.replace("OR", "")))
        expected = sum(1 for op in ops if qterms & set(tokenize(op.text)))
        page = index.search(q, limit=10)
        assert page.total == expected
        whoosh_hits = plain.search(index.parse_query(q), limit=10)  # Whoosh's own matchers and collector
        assert [h.url for h in page.hits] == [h["url"] for h in whoosh_hits]
        assert [h.score for h in page.hits] == pytest.approx([h.score for h in whoosh_hits])
        for hit in page.hits:
            assert "<b>" in hit.snippet
            assert set(tokenize(" ".join(re.findall(r"<b>(.*?)</b>", hit.snippet)))) <= qterms
    plain.close()
    index.close()


@pytest.mark.parametrize("query", ["naïve", "über"])
def test_non_ascii_terms_are_highlighted(query: str) -> None:
    text = "Le café est NAÏVE et über-cool; naïvement über alles"
    terms = frozenset(tokenize(query))
    out = Snippeter().snippet(text, terms, candidate_prefixes(terms))
    assert fast_matches(text, terms) == plain_matches(text, terms)
    assert "<b>" in out
