"""The one HTML response processor parser: markup in, title / visible text / canonical links out.

Used by the robot's response processor and by every corpus loader, so the live crawl and the replay see
exactly the same pages. Garbage in, best-effort page out: malformed markup, binary junk, unknown or wrong
charsets and huge inputs never raise.

Decoding order (as browsers do, minus the network sniffing): the byte-order mark, then the ``encoding``
argument (the HTTP ``Content-Type`` charset), then a ``<meta charset>`` / ``http-equiv`` declaration in the
first KiB, then UTF-8, then windows-1252; the first that decodes strictly wins, else UTF-8 with
replacement characters. No statistical detection (it is slow on big pages and rarely better).
"""

from __future__ import annotations

import codecs
import logging
import re
import warnings
from dataclasses import dataclass
from urllib.parse import urljoin

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning
from bs4.dammit import EncodingDetector
from bs4.element import (
    Comment,
    Declaration,
    Doctype,
    NavigableString,
    PageElement,
    ProcessingInstruction,
    Tag,
)

from oasis.urls import InvalidURL, canonicalize
from oasis.web.model import Link, Page

logger = logging.getLogger(__name__)

MAX_BYTES = 4 * 1024 * 1024  # default cap: a response processor never parses more than 4 MiB of one page
MAX_ANCHOR_CHARS = 200  # joined anchor text of one link is cut here
MAX_TITLE_CHARS = 500
INVISIBLE_TAGS = ("script", "style", "noscript", "template", "title")
_INVISIBLE = frozenset(INVISIBLE_TAGS)
_WS = re.compile(r"\s+")
_NON_TEXT = (Comment, Declaration, Doctype, ProcessingInstruction)


@dataclass(frozen=True, slots=True)
class ParsedPage:
    """What the response processor needs from one HTML page."""

    title: str
    text: str  # visible text only, whitespace collapsed
    links: tuple[Link, ...]  # canonical http(s) URLs, fragments dropped, deduplicated, document order
    canonical: str | None = None  # <link rel="canonical">, canonicalised; None if absent or invalid
    noindex: bool = False  # <meta name="robots" content="noindex"> (or "none")
    nofollow: bool = False  # <meta name="robots" content="nofollow"> (or "none"); links are still listed
    encoding: str = "utf-8"  # the charset the bytes were decoded with
    truncated: bool = False  # the input was longer than max_bytes and was cut

    def to_page(self, url: str, *, relevance: float | None = None, html: str | None = None) -> Page:
        return Page(
            url=url, title=self.title, text=self.text, links=self.links, relevance=relevance, html=html
        )


def collapse_whitespace(text: str) -> str:
    return _WS.sub(" ", text).strip()


def decode_html(content: bytes, encoding: str | None = None) -> tuple[str, str]:
    """Decode HTML bytes to text; returns ``(text, encoding used)``. Never raises."""
    bom_stripped, bom_encoding = EncodingDetector.strip_byte_order_mark(content)
    candidates: list[str] = []
    if bom_encoding:
        candidates.append(bom_encoding)
    if encoding:
        candidates.append(encoding)
    try:
        declared = EncodingDetector.find_declared_encoding(bom_stripped[:1024], is_html=True)
    except Exception:  # a regex over junk bytes; be safe
        declared = None
    if declared:
        candidates.append(declared)
    candidates += ["utf-8", "windows-1252"]
    seen: set[str] = set()
    for name in candidates:
        try:
            codec = codecs.lookup(name.strip().lower()).name
        except (LookupError, ValueError, TypeError):
            continue
        if codec in seen:
            continue
        seen.add(codec)
        # A page cannot really be UTF-16/32 if it declares so inside ASCII-compatible bytes (HTML spec).
        if codec.startswith(("utf-16", "utf-32")) and not bom_encoding and name == declared:
            continue
        try:
            return bom_stripped.decode(codec), codec
        except UnicodeDecodeError as exc:
            if exc.start >= len(bom_stripped) - 4:  # only a character cut in half at the end (truncation)
                try:
                    return bom_stripped[: exc.start].decode(codec), codec
                except (UnicodeDecodeError, LookupError, ValueError):
                    continue
        except (LookupError, ValueError):
            continue
    return bom_stripped.decode("utf-8", errors="replace"), "utf-8"


def resolve_link(href: str, base: str) -> str | None:
    """Absolute canonical http(s) URL for ``href`` seen on a page with base URL ``base``; None to skip."""
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    try:
        absolute = urljoin(base, href) if base else href
        return canonicalize(absolute)
    except (InvalidURL, ValueError):
        return None


def parse_html(
    content: bytes | str,
    base_url: str,
    *,
    encoding: str | None = None,
    max_bytes: int = MAX_BYTES,
) -> ParsedPage:
    """Parse one HTML page fetched from (or stored at) ``base_url``.

    ``encoding`` is the charset from the HTTP header, if any. Input longer than ``max_bytes`` (bytes, or
    characters for ``str``) is cut there and parsed best-effort. Never raises for any content.
    """
    if max_bytes < 1:
        raise ValueError("max_bytes must be >= 1")
    truncated = len(content) > max_bytes
    if truncated:
        content = content[:max_bytes]
    if isinstance(content, bytes):
        markup, used = decode_html(content, encoding)
    else:
        markup, used = content, "utf-8"
    markup = markup.replace("\x00", "\ufffd")
    try:
        return _parse_markup(markup, base_url, used, truncated)
    except Exception:  # html.parser on adversarial input: never let a page crash the caller
        logger.warning("HTML parser failed on %s; using the text only", base_url[:200], exc_info=True)
        text = collapse_whitespace(re.sub(r"<[^>]*>", " ", markup))
        return ParsedPage(title="", text=text, links=(), encoding=used, truncated=truncated)


def _parse_markup(markup: str, base_url: str, used: str, truncated: bool) -> ParsedPage:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(markup, "html.parser")

    # One pre-order walk (document order) instead of several find_all calls: bs4's filters dominate otherwise.
    base_href: str | None = None
    title = ""
    canonical_href: str | None = None
    noindex = nofollow = False
    raw_links: list[tuple[str, str]] = []
    pieces: list[str] = []
    stack: list[PageElement] = [soup]
    while stack:
        node = stack.pop()
        if isinstance(node, Tag):
            name = node.name
            if name in _INVISIBLE:
                if name == "title" and not title:
                    title = collapse_whitespace(node.get_text(" "))[:MAX_TITLE_CHARS]
                continue
            if name in ("a", "area"):
                href = node.get("href")
                if isinstance(href, str):
                    anchor = collapse_whitespace(node.get_text(" ")) or collapse_whitespace(
                        str(node.get("title") or "")
                    )
                    raw_links.append((href, anchor))
            elif name == "base" and base_href is None:
                href = node.get("href")
                if isinstance(href, str):
                    base_href = href
            elif name == "link" and canonical_href is None:
                rel = node.get("rel")
                rels = rel if isinstance(rel, list) else str(rel or "").split()
                href = node.get("href")
                if isinstance(href, str) and "canonical" in (r.lower() for r in rels):
                    canonical_href = href
            elif name == "meta" and str(node.get("name", "")).strip().lower() in ("robots", "oasis"):
                directives = {d.strip().lower() for d in str(node.get("content", "")).split(",")}
                noindex |= bool(directives & {"noindex", "none"})
                nofollow |= bool(directives & {"nofollow", "none"})
            stack.extend(reversed(node.contents))
        elif isinstance(node, NavigableString) and not isinstance(node, _NON_TEXT):
            pieces.append(str(node))

    try:
        base = canonicalize(base_url)
    except InvalidURL:
        base = ""
    if base_href is not None:
        resolved = resolve_link(base_href, base)
        if resolved is not None:
            base = resolved
    canonical = resolve_link(canonical_href, base) if canonical_href is not None else None

    anchors: dict[str, list[str]] = {}
    for href, anchor in raw_links:
        url = resolve_link(href, base)
        if url is None:
            continue
        texts = anchors.setdefault(url, [])
        if anchor and anchor not in texts:
            texts.append(anchor)
    links = tuple(Link(url, " ".join(texts)[:MAX_ANCHOR_CHARS]) for url, texts in anchors.items())
    text = collapse_whitespace(" ".join(pieces))
    return ParsedPage(
        title=title,
        text=text,
        links=links,
        canonical=canonical,
        noindex=noindex,
        nofollow=nofollow,
        encoding=used,
        truncated=truncated,
    )
