"""Snippets without re-analysing the document: find the query's terms in the stored text with ``bytes.find``,
analyse only the words found, and build, score and format fragments the way Whoosh's pinpoint highlighting
does.

Whoosh's default highlighting (``Hit.highlights`` with a ``ContextFragmenter``) runs the whole stored text
of every hit through the analyser (tokenise, lower-case, stop words, Porter stem) to find the matched
tokens: for a 50,000-character page that is ~8,000 tokens through a Python generator chain, and it was 7/8
of the engine's query time (issue 14). Here the text (its first ``CHARLIMIT`` characters, as Whoosh's
fragmenters) is encoded to UTF-8, lower-cased with ``bytes.lower`` and scanned in C for *candidate* words
only: words that begin with the first characters of a query term's stem. Porter rewrites at most the last
two characters of a stem (``possibility -> possibl``, ``hoping -> hope``), so ``stem[:-2]`` is a prefix of
every word that stems to the term. Each candidate is analysed with the index's own analyser (cached), so a
word is highlighted exactly when the index would have matched it. Fragments follow Whoosh's
``PinpointFragmenter`` (grow over matches within ``surround``, at most ``maxchars``, ``surround`` of
context, ``autotrim`` to spaces) and ``BasicFragmentScorer``; offsets stay in bytes until the fragments are
decoded, so no offset map is built.
"""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Iterable

from whoosh import highlight

from oasis.runtime.text import tokenize

CHARLIMIT = highlight.DEFAULT_CHARLIMIT  # 32 KiB, as Whoosh's fragmenters
_TERM_CACHE_MAX = 200_000


def stem_prefix(term: str) -> str:
    """The prefix every surface word analysed into ``term`` starts with (case-folded)."""
    keep = max(len(term) - 2, min(len(term), 2))
    return term[:keep]


class _TermCache:
    """word -> analysed term (None: a stop word or more than one token), bounded, thread-safe enough (a
    lost insert only costs a re-analysis)."""

    def __init__(self) -> None:
        self._terms: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def term(self, word: str) -> str | None:
        try:
            return self._terms[word]
        except KeyError:
            pass
        tokens = tokenize(word)
        term = tokens[0] if len(tokens) == 1 else None
        with self._lock:
            if len(self._terms) >= _TERM_CACHE_MAX:
                self._terms.clear()
            self._terms[word] = term
        return term


_CACHE = _TermCache()


_ASCII_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_DOT = ord(".")
# a token of Whoosh's RegexTokenizer (``\w+(\.?\w+)*``) in UTF-8: any non-ASCII byte counts as a word byte
# here and the decoded word is cut to the exact token afterwards
_BYTES_TOKEN = re.compile(rb"[\w\x80-\xff]+(?:\.[\w\x80-\xff]+)*")
_TOKEN = re.compile(r"\w+(?:\.\w+)*")


def candidate_prefixes(terms: Iterable[str]) -> tuple[bytes, ...]:
    """The distinct stem prefixes of ``terms`` as lower-case UTF-8, longest first."""
    return tuple(sorted({stem_prefix(t).encode("utf-8") for t in terms if t}, key=len, reverse=True))


def encode_for_search(text: str, prefixes: tuple[bytes, ...]) -> tuple[bytes, bytes]:
    """(UTF-8 of ``text``, its lower case with the same byte offsets) for :func:`find_matches`.

    ``bytes.lower`` lowers ASCII letters only (and is ~20x faster than ``str.lower`` on non-ASCII text),
    which is enough to find ASCII prefixes (the analyser lower-cases the rest of each word it analyses).
    A non-ASCII prefix needs ``str.lower``, used when it keeps every character's UTF-8 length."""
    original = text.encode("utf-8", "surrogatepass")
    if not all(p.isascii() for p in prefixes):
        lowered = text.lower().encode("utf-8", "surrogatepass")
        if len(lowered) == len(original):
            return original, lowered
    return original, original.lower()


def _word_before(data: bytes, b: int) -> bool:
    """True when the character ending just before byte ``b`` of UTF-8 ``data`` is a word character."""
    byte = data[b - 1]
    if byte < 0x80:
        return byte in _ASCII_WORD
    start = b - 1
    while start > 0 and 0x80 <= data[start] < 0xC0:  # back over continuation bytes
        start -= 1
    return data[start:b].decode("utf-8", "replace").isalnum()


def find_matches(
    data: bytes, terms: frozenset[str], prefixes: tuple[bytes, ...]
) -> list[tuple[int, int, str]]:
    """(start, end, term) byte spans in lower-cased UTF-8 ``data`` of the tokens the analyser turns into
    one of ``terms``, in order: every occurrence of a prefix at a token start, cut to its token, analysed."""
    starts: list[int] = []
    find = data.find
    for p in prefixes:
        i = find(p)
        while i >= 0:
            if i == 0 or data[i - 1] not in _ASCII_WORD:  # after an ASCII word byte: never a token start
                starts.append(i)
            i = find(p, i + 1)
    if len(prefixes) > 1:
        starts = sorted(set(starts))
    out: list[tuple[int, int, str]] = []
    term_of = _CACHE.term
    token_at = _BYTES_TOKEN.match
    last_end = 0
    for b in starts:
        if b < last_end:
            continue  # inside a token already matched
        # a token starts here only after a non-word character that is not a dot joining two words
        if b > 0:
            before = data[b - 1]
            if before == _DOT:
                if b > 1 and _word_before(data, b - 1):
                    continue
            elif before >= 0x80 and _word_before(data, b):
                continue
        m = token_at(data, b)
        if m is None:
            continue
        raw = m.group()
        end = m.end()
        if raw.isascii():
            word = raw.decode("ascii")
        else:  # cut to the exact token (a non-ASCII byte may be punctuation, e.g. "Extensions¶")
            decoded = raw.decode("utf-8", "replace")
            tm = _TOKEN.match(decoded)
            if tm is None:
                continue
            word = tm.group()
            end = b + len(word.encode("utf-8"))
        term = term_of(word)
        if term is not None and term in terms:
            out.append((b, end, term))
            last_end = end
    return out


def _fragments(
    matches: list[tuple[int, int, str]], size: int, maxchars: int, surround: int
) -> list[tuple[int, int, list[tuple[int, int, str]]]]:
    """Whoosh's ``PinpointFragmenter``: a fragment grows from a match over the following matches that end
    within ``surround`` of it while it stays within ``maxchars``, then gets ``surround`` of context."""
    out: list[tuple[int, int, list[tuple[int, int, str]]]] = []
    i = 0
    n = len(matches)
    while i < n:
        left, right, _ = matches[i]
        j = i
        while j + 1 < n and right - left < maxchars:
            ec = matches[j + 1][1]
            if ec - right <= surround and ec - left <= maxchars:
                j += 1
                right = ec
            else:
                break
        out.append((max(0, left - surround), min(size, right + surround), matches[i : j + 1]))
        i = j + 1
    return out


def _autotrim(data: bytes, start: int, end: int, inside: list[tuple[int, int, str]]) -> tuple[int, int]:
    """Whoosh's ``autotrim`` where a fragment cuts a word: start after its first space, end at its last,
    never cutting a match (a fragment at the start or end of the text, or at a space, is kept whole)."""
    if start > 0 and not data[start - 1 : start].isspace():
        first = data.find(b" ", start, end)
        if first >= 0:
            start = first + 1
    if end < len(data) and not data[end : end + 1].isspace():
        last = data.rfind(b" ", start, end)
        if last >= 0:
            end = last
    return min(start, inside[0][0]), max(end, inside[-1][1])


def _escape(data: bytes) -> str:
    return html.escape(data.decode("utf-8", "ignore"), quote=False)


class Snippeter:
    """Snippets of stored text for a set of analysed query terms: up to ``top`` fragments in document
    order joined by `` ... ``, matched words in ``<b>...</b>``, escaped HTML; the first ``maxchars``
    characters (escaped) when no term occurs. Fragments are chosen as Whoosh's ``BasicFragmentScorer``
    does: the sum of matches times 100 x the number of distinct terms, the ``top`` best shown in order.
    Lengths (``maxchars``, ``surround``) count UTF-8 bytes, which are characters for ASCII text."""

    between = " ... "

    def __init__(self, *, maxchars: int = 240, surround: int = 60, top: int = 2) -> None:
        self.maxchars = maxchars
        self.surround = surround
        self.top = top

    def snippet(self, text: str, terms: frozenset[str], prefixes: tuple[bytes, ...]) -> str:
        if prefixes and text:
            original, data = encode_for_search(text[:CHARLIMIT], prefixes)
            matches = find_matches(data, terms, prefixes)
            if matches:
                return self._format(original, matches)
        return html.escape(text[: self.maxchars], quote=False)

    def _format(self, original: bytes, matches: list[tuple[int, int, str]]) -> str:
        fragments = _fragments(matches, len(original), self.maxchars, self.surround)
        scored = sorted(
            fragments,
            key=lambda f: (-(len(f[2]) * (len({t for _, _, t in f[2]}) * 100)), f[0]),
        )[: self.top]
        scored.sort(key=lambda f: f[0])
        spans: list[tuple[int, int, list[tuple[int, int, str]]]] = []
        for start, end, inside in scored:
            start, end = _autotrim(original, start, end, inside)
            if spans and start <= spans[-1][1]:  # overlapping context: one fragment, not the text twice
                prev_start, prev_end, prev_inside = spans[-1]
                spans[-1] = (prev_start, max(end, prev_end), prev_inside + inside)
            else:
                spans.append((start, end, inside))
        parts = []
        for start, end, inside in spans:
            out = []
            at = start
            for ms, me, _ in inside:
                out.append(_escape(original[at:ms]))
                out.append(f"<b>{_escape(original[ms:me])}</b>")
                at = me
            out.append(_escape(original[at:end]))
            parts.append("".join(out))
        return self.between.join(parts)
