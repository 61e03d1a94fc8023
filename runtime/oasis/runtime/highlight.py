"""Engine snippets for people: plain text with highlight spans, terminal bold, and terminal-safe text.

An engine snippet is escaped HTML with each matched term in ``<b>...</b>`` (``oasis.engine.index``). A
terminal shows neither tags nor entities: :func:`parse_snippet` turns a snippet into its plain text and the
character spans of the matched terms, :func:`terminal_snippet` renders those spans in ANSI bold (or not at
all), and :func:`terminal_safe` drops control characters, so a crawled page cannot move the cursor or
recolour the user's terminal with escape sequences of its own.
"""

from __future__ import annotations

import html
import re

BOLD, NORMAL = "\x1b[1m", "\x1b[22m"  # SGR 1 (bold) and SGR 22 (normal intensity: colours are kept)
_TAG = re.compile(r"(</?b>)", re.IGNORECASE)
# every code point of category Cc (U+0000-U+001F, U+007F-U+009F) -> removed, but whitespace -> a space
_CONTROL: dict[int, str | None] = {c: None for c in (*range(0x20), *range(0x7F, 0xA0))}
_CONTROL.update({ord(c): " " for c in "\t\n\r"})


def parse_snippet(snippet: str) -> tuple[str, list[tuple[int, int]]]:
    """The plain text of ``snippet`` (tags removed, entities decoded, control characters dropped) and the
    ``[start, end)`` character spans of its highlighted terms in that text. Unbalanced tags are tolerated:
    a ``<b>`` never closed highlights to the end, a stray ``</b>`` is ignored."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    start: int | None = None
    for piece in _TAG.split(snippet):
        tag = piece.lower()
        if tag == "<b>":
            if start is None:
                start = pos
        elif tag == "</b>":
            if start is not None and pos > start:
                spans.append((start, pos))
            start = None
        elif piece:
            text = terminal_safe(html.unescape(piece))
            parts.append(text)
            pos += len(text)
    if start is not None and pos > start:
        spans.append((start, pos))
    return "".join(parts), spans


def terminal_safe(text: str) -> str:
    """``text`` without control characters (Unicode category Cc: C0, DEL, C1): tabs and line breaks become
    spaces, ESC and the rest are dropped."""
    return text.translate(_CONTROL)


def terminal_snippet(snippet: str, *, bold: bool) -> str:
    """``snippet`` for a terminal: matched terms in ANSI bold when ``bold``, plain text otherwise."""
    text, spans = parse_snippet(snippet)
    if not bold:
        return text
    out = []
    pos = 0
    for start, end in spans:
        out += [text[pos:start], BOLD, text[start:end], NORMAL]
        pos = end
    out.append(text[pos:])
    return "".join(out)
