"""The one text analyser of Oasis: Whoosh's ``StemmingAnalyzer`` (lower-case, stop words removed, Porter
stem).

The engine's index schema and topic relevance model and the directory's query routing all tokenise with it,
so that "crawling" in a topic or a query meets "crawled" in a page, and the terms of an engine's summary are
the terms a routed query is analysed into.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

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
        poses = _take_positions(value)
        boost = self.field_boost
        for term, at in poses.items():
            yield (term, len(at), float(len(at)) * boost, self.encode(at))


# An analysis in progress: each term's positions so far, words seen (stop words included), the last kept
# word's position, and whether no word has been kept yet.
_State = tuple[dict[str, list[int]], int, int, bool]

SCORE_PREFIX_CHARS = (
    20_000  # the engine's Score call sees this much of a page's text (clients.MAX_SCORE_CHARS)
)


def _analyse(text: str, state: _State | None = None) -> _State:
    """The fused analyser's terms and positions of ``text`` (stop words removed, the rest numbered on from
    the first kept word's index, as StopFilter does), continuing ``state`` (the analysis of the text before
    it, which must end just after a space: no token spans the join)."""
    poses, words, pos, first = state if state is not None else ({}, 0, -1, True)
    stems = _STEMS
    found = _TOKEN.findall(text)
    for index, word in enumerate(found, words):
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
    return poses, words + len(found), pos, first


def _shared_prefix(text: str) -> int:
    """How much of ``text`` an analysis for the Score call can be kept for: all of a text the Score call
    sees whole, else its first :data:`SCORE_PREFIX_CHARS` characters up to and including their last space
    (the Score call sees them too; no token spans a space, so the rest is analysed on from there)."""
    if len(text) < SCORE_PREFIX_CHARS:
        return len(text)
    return text.rfind(" ", 0, SCORE_PREFIX_CHARS) + 1


def term_positions(text: str) -> dict[str, list[int]]:
    """Each term of ``text`` with its positions, in first-seen order (what
    :meth:`FusedPositions.word_values` encodes); ``len(positions)`` is the term's frequency."""
    return _analyse(text)[0]


def remembered_counts(text: str) -> Counter[str]:
    """``Counter(tokenize(text))``, computed through the positions analysis, which is kept for the next
    ``word_values`` of a text that starts the same (:class:`_Analysed`): the engine's Score call analyses
    (the first 20,000 characters of) a page's text, and indexing the page moments later needs the same
    analysis."""
    cut = _shared_prefix(text)
    state = _analyse(text[:cut])
    counts = Counter({term: len(at) for term, at in state[0].items()})
    if cut < len(text):
        counts.update(tokenize(text[cut:]))  # the words after the last space: counted, not kept
    _ANALYSED.put(text[:cut], state)
    return counts


def _take_positions(text: str) -> dict[str, list[int]]:
    """:func:`term_positions` of ``text``, continuing a kept analysis of its start when there is one."""
    cut = _shared_prefix(text)
    state = _ANALYSED.take(text if cut == len(text) else text[:cut])
    if state is None:
        return _analyse(text)[0]
    return _analyse(text[cut:], state)[0] if cut < len(text) else state[0]


class _Analysed:
    """Recent analyses by text (:func:`remembered_counts`), each taken by the first
    ``word_values`` of a text that starts with it: the engine scores a page (Score RPC) and indexes it
    moments later, and analysing its text twice was a sixth of the engine's CPU while crawling (issue 14).
    The analysis is a pure function of the text, so a hit (continued over the rest of a longer text) is
    exactly what ``word_values`` would compute. Bounded (oldest out first); texts shorter than
    ``min_chars`` (anchor texts, titles) are not kept."""

    def __init__(self, max_entries: int = 512, max_chars: int = 16_000_000, min_chars: int = 256) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _State] = {}
        self._chars = 0
        self.max_entries, self.max_chars, self.min_chars = max_entries, max_chars, min_chars

    def put(self, text: str, state: _State) -> None:
        if len(text) < self.min_chars or len(text) > self.max_chars:
            return
        with self._lock:
            if text in self._entries:
                return
            self._entries[text] = state
            self._chars += len(text)
            while len(self._entries) > self.max_entries or self._chars > self.max_chars:
                oldest = next(iter(self._entries))
                del self._entries[oldest]
                self._chars -= len(oldest)

    def take(self, text: str) -> _State | None:
        if len(text) < self.min_chars or not self._entries:
            return None
        with self._lock:
            state = self._entries.pop(text, None)
            if state is not None:
                self._chars -= len(text)
            return state

    def __len__(self) -> int:
        return len(self._entries)


_ANALYSED = _Analysed()


def make_analyzer() -> Analyzer:
    """A new analyser for an index schema field (the chain :func:`tokenize` uses, fused)."""
    return FusedStemmingAnalyzer()


# an identifier inside a link's anchor, cut into its words (anchor_words): a "." or "_" between word
# characters, and a lower-case letter or digit followed by a capital
_IDENT_SEP = re.compile(r"(?<=\w)[._]+(?=\w)")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def anchor_words(text: str) -> str:
    """A link's anchor text with the identifiers in it cut into words, for scoring the link's topic
    relevance: ``nipype.pipeline.engine`` -> ``nipype pipeline engine``, ``expected_conditions`` ->
    ``expected conditions``, ``WebDriverWait`` -> ``Web Driver Wait``. :func:`tokenize` keeps a dotted name
    as one token (Whoosh's expression, as the index does), so the anchors of an API reference -- module,
    class and function names -- scored as written share no term with a topic (docs/replay.md "Session 23")."""
    return _CAMEL.sub(" ", _IDENT_SEP.sub(" ", text))


_URL_EXT = re.compile(r"\.(?:html?|php|aspx?)$")
_PATH_SEP = re.compile(r"[/\-]+")


def url_words(url: str) -> str:
    """The words of a URL's path: its segments split at "/" and "-", a page extension and ``index`` dropped
    (``http://h/api/generated/nipype.pipeline.engine.html`` -> ``api generated nipype.pipeline.engine``); none
    for a URL that does not parse (a link is still scored on its anchor)."""
    try:
        path = _URL_EXT.sub("", urlsplit(url).path)
    except ValueError:  # e.g. an unclosed IPv6 host bracket
        return ""
    return " ".join(w for w in _PATH_SEP.split(path) if w and w != "index")


def link_words(anchor: str, url: str) -> str:
    """What a link says about the page it points to, the text its topic relevance is scored on (the live
    robot and the replay alike): its anchor text and its URL's path words (:func:`url_words`), the identifiers
    in them cut into words (:func:`anchor_words`); session 23, docs/replay.md."""
    return anchor_words(f"{anchor} {url_words(url)}".strip())


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
