"""The gateway's search request and reply: parameter checks, safe snippet markup, SearXNG's JSON shape.

Pure (no HTTP framework, no gRPC): :func:`parse_search` turns the raw query string into
:class:`SearchParams` or raises :class:`BadRequest` with a message a person can act on;
:func:`searxng_json` shapes a broker result the way SearXNG's ``/search?format=json`` does, so clients
written for SearXNG (Open WebUI, LangChain's SearxSearchWrapper, ...) read it unchanged.

Snippets come from the engines as HTML-escaped text with matched terms in ``<b>...</b>``
(``oasis.engine.index``). Nothing of that markup is trusted: :func:`snippet_segments` splits the snippet at
the highlight tags only, unescapes each piece to plain text, and the page escapes every piece again and
emits ``<b>`` itself (:func:`snippet_markup`), so an engine that returned ``<script>`` shows it as text.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

from markupsafe import Markup, escape

from oasis.runtime.clients import SearchHit, SearchResult

MAX_QUERY_CHARS = 1000  # characters of q after decoding (the broker's own limit is higher)
MAX_QUERY_STRING_BYTES = 16 * 1024  # the whole raw query string (all parameters, percent-encoded)
MAX_PARAMETERS = 32
MAX_HITS = 1000  # the broker's largest k (oasis.broker.service.MAX_K): the deepest page reachable
FORMATS = ("html", "json")
# engine states that SearXNG would list as unresponsive; "ok" and "skipped" (not routed) are not
UNRESPONSIVE = ("timeout", "error", "suspended")
_HIGHLIGHT = re.compile(r"(<b>|</b>)")
_SINGLE = ("q", "format", "pageno")  # parameters that may appear at most once

Format = Literal["html", "json"]


class BadRequest(ValueError):
    """The request cannot be searched as given (HTTP 400); the message says why and what is allowed."""


@dataclass(frozen=True, kw_only=True)
class SearchParams:
    query: str
    format: Format
    pageno: int


def max_pageno(page_size: int) -> int:
    """The last page whose hits (and the one hit beyond it, which tells whether a next page exists) fit
    in :data:`MAX_HITS`."""
    return max(1, (MAX_HITS - 1) // page_size)


def decode_query_string(raw: bytes) -> list[tuple[str, str]]:
    """(name, value) pairs of a raw query string, decoded strictly as UTF-8.

    Starlette's own parsing replaces invalid UTF-8 by U+FFFD, which would search for something the user did
    not type; here ``%ff`` (or a raw non-ASCII byte that is not UTF-8) is a :class:`BadRequest`.
    """
    if len(raw) > MAX_QUERY_STRING_BYTES:
        raise BadRequest(
            f"the query string is {len(raw)} bytes, longer than the limit of {MAX_QUERY_STRING_BYTES}; "
            f"a query may have at most {MAX_QUERY_CHARS} characters"
        )
    # raw bytes >= 0x80 (a client that did not percent-encode) become %XX, so one strict decoder sees all
    text = "".join(chr(b) if b < 0x80 else f"%{b:02X}" for b in raw)
    try:
        return parse_qsl(
            text, keep_blank_values=True, encoding="utf-8", errors="strict", max_num_fields=MAX_PARAMETERS
        )
    except UnicodeDecodeError as exc:
        raise BadRequest("the query string is not valid UTF-8 (percent-encode UTF-8 bytes only)") from exc
    except ValueError as exc:  # more than MAX_PARAMETERS fields
        raise BadRequest(f"too many parameters (at most {MAX_PARAMETERS})") from exc


def _single(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    seen: dict[str, str] = {}
    for name, value in pairs:
        if name in _SINGLE and name in seen:
            raise BadRequest(f"parameter {name!r} given more than once")
        seen.setdefault(name, value)
    return seen


def check_query(query: str) -> str:
    """The query, stripped; :class:`BadRequest` when empty, too long or holding control characters."""
    q = query.strip()
    if not q:
        raise BadRequest("empty query: give the words to search for in q")
    if len(q) > MAX_QUERY_CHARS:
        raise BadRequest(f"query of {len(q)} characters is longer than the limit of {MAX_QUERY_CHARS}")
    if any(unicodedata.category(c) == "Cc" and c not in "\t\n\r" for c in q):
        raise BadRequest("the query holds control characters")
    return q


def parse_pageno(raw: str | None, page_size: int) -> int:
    last = max_pageno(page_size)
    if raw is None or raw == "":
        return 1
    digits = raw.strip()
    if not (digits.isascii() and digits.isdigit()):
        raise BadRequest(f"pageno must be a whole number from 1 to {last}, got {raw[:40]!r}")
    if len(digits) > 9 or not 1 <= int(digits) <= last:
        raise BadRequest(f"pageno must be from 1 to {last}, got {digits[:40]}")
    return int(digits)


def parse_format(raw: str | None) -> Format:
    fmt = (raw or "html").strip().lower()
    if fmt == "json":
        return "json"
    if fmt == "html":
        return "html"
    raise BadRequest(f"format must be one of {', '.join(FORMATS)}, got {(raw or '')[:40]!r}")


def requested_format(raw: bytes) -> Format:
    """The format a reply should take even when the rest of the request is bad (errors in the asked-for
    format: a JSON client gets a JSON error). HTML unless ``format=json`` can be read."""
    try:
        pairs = decode_query_string(raw)
    except BadRequest:  # too long, too many fields or not UTF-8: look for the one field that matters
        return "json" if any(f.strip().lower() == b"format=json" for f in raw.split(b"&")) else "html"
    return "json" if any(n == "format" and v.strip().lower() == "json" for n, v in pairs) else "html"


def parse_search(raw: bytes, page_size: int) -> SearchParams:
    """The checked parameters of ``GET /search`` from the raw query string."""
    params = _single(decode_query_string(raw))
    fmt = parse_format(params.get("format"))
    if "q" not in params:
        raise BadRequest("missing parameter q (the words to search for)")
    return SearchParams(
        query=check_query(params["q"]), format=fmt, pageno=parse_pageno(params.get("pageno"), page_size)
    )


# ------------------------------------------------------------------------------------------ snippets
def snippet_segments(snippet: str) -> list[tuple[str, bool]]:
    """The snippet as (plain text, highlighted) pieces: split at ``<b>`` / ``</b>`` only, every piece
    HTML-unescaped (the engine escapes its text), unbalanced tags dropped, empty pieces left out."""
    out: list[tuple[str, bool]] = []
    bold = False
    for part in _HIGHLIGHT.split(snippet):
        if part == "<b>":
            bold = True
        elif part == "</b>":
            bold = False
        elif part:
            text = html.unescape(part)
            if out and out[-1][1] == bold:
                out[-1] = (out[-1][0] + text, bold)
            else:
                out.append((text, bold))
    return out


def snippet_markup(snippet: str) -> Markup:
    """Safe HTML of a snippet: every piece escaped, highlights as ``<b>`` that the gateway writes itself."""
    return Markup("").join(
        Markup("<b>{}</b>").format(text) if bold else escape(text) for text, bold in snippet_segments(snippet)
    )


def snippet_text(snippet: str) -> str:
    """The snippet as plain text (SearXNG's ``content``)."""
    return "".join(text for text, _ in snippet_segments(snippet))


def safe_href(url: str) -> str | None:
    """``url`` when it may be a link target (http or https), else None (shown as text, never a link)."""
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return None
    return url if scheme in ("http", "https") else None


# ------------------------------------------------------------------------------------------ replies
@dataclass(frozen=True, kw_only=True)
class Page:
    """One page of a search: its hits, whether more follow, and every engine's status."""

    params: SearchParams
    hits: tuple[SearchHit, ...]
    first_rank: int  # rank (1-based) of hits[0]
    has_next: bool
    matches: int  # about how many pages match (the engines' matches summed; at least the hits returned)
    suggestion: str = ""  # the query with the words no engine holds corrected ("did you mean"), or ""
    engines: tuple[EngineRow, ...]
    partial: bool
    took_ms: float


@dataclass(frozen=True, kw_only=True)
class EngineRow:
    name: str
    state: str
    message: str = ""
    hits: int = 0
    latency_ms: float = 0.0

    @property
    def unresponsive(self) -> bool:
        return self.state in UNRESPONSIVE

    @property
    def reason(self) -> str:
        return f"{self.state}: {self.message}" if self.message else self.state


def broker_k(pageno: int, page_size: int) -> int:
    """Hits to ask the broker for: down to the end of the page, and one more to know if a next page exists."""
    return min(MAX_HITS, pageno * page_size + 1)


def make_page(params: SearchParams, result: SearchResult, page_size: int) -> Page:
    start = (params.pageno - 1) * page_size
    engines = tuple(
        EngineRow(
            name=name,
            state=state,
            message=result.messages.get(name, ""),
            hits=result.engine_hits.get(name, 0),
            latency_ms=result.engine_latency_ms.get(name, 0.0),
        )
        for name, state in sorted(result.engines.items())
    )
    return Page(
        params=params,
        hits=tuple(result.hits[start : start + page_size]),
        first_rank=start + 1,
        has_next=len(result.hits) > start + page_size,
        matches=result.matches,
        suggestion=result.suggestion,
        engines=engines,
        partial=result.partial,
        took_ms=result.took_ms,
    )


def searxng_json(page: Page) -> dict[str, Any]:
    """SearXNG's ``/search?format=json`` reply (the fields its clients read; lists it fills from sources
    Oasis has not, such as answers and infoboxes, are empty)."""
    return {
        "query": page.params.query,
        "number_of_results": page.matches,
        "pageno": page.params.pageno,
        "results": [
            {
                "url": h.url,
                "title": h.title,
                "content": snippet_text(h.snippet),
                "engine": h.engine,
                "engines": [h.engine],
                "positions": [page.first_rank + i],
                "score": h.score,
                "category": "general",
            }
            for i, h in enumerate(page.hits)
        ],
        "answers": [],
        "corrections": [page.suggestion] if page.suggestion else [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": [[e.name, e.reason] for e in page.engines if e.unresponsive],
    }


def page_links(query: str, pageno: int, has_next: bool) -> Mapping[str, str]:
    """Relative links to the previous and next result pages (only those that exist)."""
    links: dict[str, str] = {}
    if pageno > 1:
        links["previous"] = "/search?" + urlencode({"q": query, "pageno": pageno - 1})
    if has_next:
        links["next"] = "/search?" + urlencode({"q": query, "pageno": pageno + 1})
    return links
