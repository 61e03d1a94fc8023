"""The one text analyser of Oasis: Whoosh's ``StemmingAnalyzer`` (lower-case, stop words removed, Porter
stem).

The engine's index schema and topic relevance model and the directory's query routing all tokenise with it,
so that "crawling" in a topic or a query meets "crawled" in a page, and the terms of an engine's summary are
the terms a routed query is analysed into.
"""

from __future__ import annotations

import re

from whoosh.analysis import STOP_WORDS, Analyzer, StemmingAnalyzer
from whoosh.lang.porter import stem

_ANALYZER: Analyzer = StemmingAnalyzer()
# the same chain fused into one pass (tokenize): Whoosh's RegexTokenizer default expression, lower case,
# StopFilter (STOP_WORDS, minsize 2), Porter stem cached per word; tests/test_runtime_text.py checks that
# it equals the analyser on random text
_TOKEN = re.compile(r"\w+(?:\.?\w+)*")
_MIN_SIZE = 2
_STEMS: dict[str, str | None] = {}  # lower-case word -> stem (None: a stop word or too short)
_STEMS_MAX = 500_000


def make_analyzer() -> Analyzer:
    """A new analyser for an index schema field (the same chain :func:`tokenize` uses)."""
    return StemmingAnalyzer()


def tokenize(text: str) -> list[str]:
    """Lower-cased, stop-word-free, stemmed tokens of ``text``, in order, repeats kept."""
    if not text:
        return []
    stems = _STEMS
    out = []
    for word in _TOKEN.findall(text):
        word = word.lower()
        try:
            term = stems[word]
        except KeyError:
            term = stem(word) if len(word) >= _MIN_SIZE and word not in STOP_WORDS else None
            if len(stems) >= _STEMS_MAX:
                stems.clear()
            stems[word] = term
        if term is not None:
            out.append(term)
    return out


def distinct_terms(text: str) -> tuple[str, ...]:
    """The distinct tokens of ``text`` in first-seen order."""
    return tuple(dict.fromkeys(tokenize(text)))
