"""The one text analyser of Oasis: Whoosh's ``StemmingAnalyzer`` (lower-case, stop words removed, Porter
stem).

The engine's index schema and topic relevance model and the directory's query routing all tokenise with it,
so that "crawling" in a topic or a query meets "crawled" in a page, and the terms of an engine's summary are
the terms a routed query is analysed into.
"""

from __future__ import annotations

import re
import threading
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
        poses = _ANALYSED.take(value)
        if poses is None:
            poses = term_positions(value)
        boost = self.field_boost
        for term, at in poses.items():
            yield (term, len(at), float(len(at)) * boost, self.encode(at))


def term_positions(text: str, *, remember: bool = False) -> dict[str, list[int]]:
    """Each term of ``text`` with its positions, in first-seen order: the fused analyser's terms and
    positions (stop words removed, the rest numbered on from the first kept word's index, as StopFilter
    does), which :meth:`FusedPositions.word_values` encodes; ``len(positions)`` is the term's frequency.

    ``remember``: keep the result for the next ``word_values`` of the same text (the engine's Score call
    analyses a page's text, and indexing the page moments later needs the same analysis:
    :class:`_Analysed`)."""
    stems = _STEMS
    poses: dict[str, list[int]] = {}
    pos = -1
    first = True
    for index, word in enumerate(_TOKEN.findall(text)):
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
    if remember:
        _ANALYSED.put(text, poses)
    return poses


class _Analysed:
    """Recent analyses by text (:func:`term_positions` with ``remember``), each taken by the first
    ``word_values`` of the same text: the engine scores a page (Score RPC) and indexes it moments later, and
    analysing its text twice was a sixth of the engine's CPU while crawling (issue 14). The analysis is a
    pure function of the text, so a hit is exactly what ``word_values`` would compute. Bounded (oldest out
    first); texts shorter than ``min_chars`` (anchor texts, titles) are not kept."""

    def __init__(self, max_entries: int = 512, max_chars: int = 16_000_000, min_chars: int = 256) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, dict[str, list[int]]] = {}
        self._chars = 0
        self.max_entries, self.max_chars, self.min_chars = max_entries, max_chars, min_chars

    def put(self, text: str, poses: dict[str, list[int]]) -> None:
        if len(text) < self.min_chars or len(text) > self.max_chars:
            return
        with self._lock:
            if text in self._entries:
                return
            self._entries[text] = poses
            self._chars += len(text)
            while len(self._entries) > self.max_entries or self._chars > self.max_chars:
                oldest = next(iter(self._entries))
                del self._entries[oldest]
                self._chars -= len(oldest)

    def take(self, text: str) -> dict[str, list[int]] | None:
        if len(text) < self.min_chars or not self._entries:
            return None
        with self._lock:
            poses = self._entries.pop(text, None)
            if poses is not None:
                self._chars -= len(text)
            return poses

    def __len__(self) -> int:
        return len(self._entries)


_ANALYSED = _Analysed()


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
