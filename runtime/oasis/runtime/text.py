"""The one text analyser of Oasis: Whoosh's ``StemmingAnalyzer`` (lower-case, stop words removed, Porter
stem).

The engine's index schema and topic relevance model and the directory's query routing all tokenise with it,
so that "crawling" in a topic or a query meets "crawled" in a page, and the terms of an engine's summary are
the terms a routed query is analysed into.
"""

from __future__ import annotations

from whoosh.analysis import Analyzer, StemmingAnalyzer

_ANALYZER: Analyzer = StemmingAnalyzer()


def make_analyzer() -> Analyzer:
    """A new analyser for an index schema field (the same chain :func:`tokenize` uses)."""
    return StemmingAnalyzer()


def tokenize(text: str) -> list[str]:
    """Lower-cased, stop-word-free, stemmed tokens of ``text``, in order, repeats kept."""
    if not text:
        return []
    return [t.text for t in _ANALYZER(text)]


def distinct_terms(text: str) -> tuple[str, ...]:
    """The distinct tokens of ``text`` in first-seen order."""
    return tuple(dict.fromkeys(tokenize(text)))
