"""The one text analyser of Oasis: Whoosh's ``StemmingAnalyzer`` (lower-case, stop words removed, Porter
stem).

The engine's index schema and topic relevance model and the directory's query routing all tokenise with it,
so that "crawling" in a topic or a query meets "crawled" in a page, and the terms of an engine's summary are
the terms a routed query is analysed into.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from whoosh.analysis import STOP_WORDS, Analyzer, Token
from whoosh.formats import Positions
from whoosh.lang.porter import stem

# the same chain fused into one pass (tokenize): Whoosh's RegexTokenizer default expression, lower case,
# StopFilter (STOP_WORDS, minsize 2), Porter stem cached per word; tests/test_runtime_text.py checks that
# it equals the analyser on random text
_TOKEN = re.compile(r"\w+(?:\.?\w+)*")
_MIN_SIZE = 2
_STEMS: dict[str, str | None] = {}  # lower-case word -> stem (None: a stop word or too short)
_STEMS_MAX = 500_000


def _term(word: str) -> str | None:
    """The stem of a lower-case word, None for a stop word or a word shorter than the minimum (cached)."""
    try:
        return _STEMS[word]
    except KeyError:
        term = stem(word) if len(word) >= _MIN_SIZE and word not in STOP_WORDS else None
        if len(_STEMS) >= _STEMS_MAX:
            _STEMS.clear()
        _STEMS[word] = term
        return term


class FusedStemmingAnalyzer(Analyzer):
    """Whoosh's ``StemmingAnalyzer()`` (RegexTokenizer | LowercaseFilter | StopFilter | StemFilter) as one
    generator: the same tokens, positions (stop words removed and the rest renumbered, as StopFilter does),
    character spans and ``stopped`` flags, at a fraction of the cost of four chained generators (the
    analysis of ``add_document`` was a fifth of the engine's time while crawling)."""

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        t = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        if tokenize:
            spans: Iterable[tuple[str, int, int]] = (
                (m.group(), m.start(), m.end()) for m in _TOKEN.finditer(value)
            )
        else:
            spans = ((value, 0, len(value)),)
        pos: int | None = None
        for index, (original, start, end) in enumerate(spans):
            word = original.lower()
            term = _term(word)
            t.boost = 1.0
            if keeporiginal:
                t.original = original
            if chars:
                t.startchar = start_char + start
                t.endchar = start_char + end
            if term is None:
                if removestops:
                    continue
                t.text = word
                t.stopped = True
                if positions:
                    t.pos = start_pos + index
            else:
                t.text = term
                t.stopped = False
                if positions:
                    pos = start_pos + index if pos is None else pos + 1
                    t.pos = pos
            yield t


class FusedPositions(Positions):
    """Whoosh's ``Positions`` posting format, whose ``word_values`` (each term of a field value with its
    frequency, weight and encoded positions) runs the fused analyser's loop itself when the field's
    analyser is :class:`FusedStemmingAnalyzer`: no Token objects and no generator chain. Indexing with
    Whoosh's ``word_values`` over the fused analyser was a third of the engine's CPU while crawling
    (py-spy, issue 14). Same output as ``Positions.word_values`` (tests/test_runtime_text.py); any other
    analyser or option takes Whoosh's path."""

    def word_values(
        self, value: Any, analyzer: Any, **kwargs: Any
    ) -> Iterator[tuple[str, int, float, bytes]]:
        if not (
            isinstance(analyzer, FusedStemmingAnalyzer) and isinstance(value, str) and set(kwargs) <= {"mode"}
        ):
            yield from super().word_values(value, analyzer, **kwargs)
            return
        stems = _STEMS
        poses: dict[str, list[int]] = {}
        pos = -1
        first = True
        for index, word in enumerate(_TOKEN.findall(value)):
            word = word.lower()
            term = stems[word] if word in stems else _term(word)
            if term is None:
                continue  # a stop word: removed, the next kept word numbered on (as StopFilter does)
            if first:
                pos = index
                first = False
            else:
                pos += 1
            at = poses.get(term)
            if at is None:
                poses[term] = [pos]
            else:
                at.append(pos)
        boost = self.field_boost
        for term, at in poses.items():
            yield (term, len(at), float(len(at)) * boost, self.encode(at))


def make_analyzer() -> Analyzer:
    """A new analyser for an index schema field (the chain :func:`tokenize` uses, fused)."""
    return FusedStemmingAnalyzer()


def tokenize(text: str) -> list[str]:
    """Lower-cased, stop-word-free, stemmed tokens of ``text``, in order, repeats kept."""
    if not text:
        return []
    stems = _STEMS
    out = []
    for word in _TOKEN.findall(text):
        word = word.lower()
        term = stems[word] if word in stems else _term(word)
        if term is not None:
            out.append(term)
    return out


def distinct_terms(text: str) -> tuple[str, ...]:
    """The distinct tokens of ``text`` in first-seen order."""
    return tuple(dict.fromkeys(tokenize(text)))
