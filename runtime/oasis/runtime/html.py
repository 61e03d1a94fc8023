"""The one HTML response processor parser: markup in, title / visible text / canonical links out (and a
``<meta http-equiv="refresh">``'s target, kept apart from the links: the robot follows a prompt one as a
redirect, and corpus graphs stay what the markup links).

Used by the robot's response processor and by every corpus loader, so the live crawl and the replay see
exactly the same pages. Garbage in, best-effort page out: malformed markup, binary junk, unknown or wrong
charsets and huge inputs never raise.

Decoding order (as browsers do, minus the network sniffing): the byte-order mark, then the ``encoding``
argument (the HTTP ``Content-Type`` charset), then a ``<meta charset>`` / ``http-equiv`` declaration in the
first KiB, then UTF-8, then windows-1252; the first that decodes strictly wins, else UTF-8 with
replacement characters. No statistical detection (it is slow on big pages and rarely better).

Tree building: libxml2 through ``lxml`` by default (``parser="lxml"``; 7-9x the pages/s of bs4 with
Python's ``html.parser``, see ``oasis bench parse``): libxml2 finds the elements that matter in document
order and ``itertext()`` reads the visible text. libxml2 (2.14+) tokenises as HTML5 does, so on malformed
markup it agrees with browsers where ``html.parser`` does not: ``<title>``, ``<textarea>``, ``<xmp>``,
``<iframe>``, ``<noembed>``, ``<noframes>`` and ``<plaintext>`` hold raw text, ``<![CDATA[...]]>`` is a
comment, a second ``<a>`` closes an open one, the first of duplicate attributes wins; the raw markup inside
``<iframe>``, ``<noembed>`` and ``<noframes>`` (which browsers do not show) is not visible text. If libxml2
gives up (nesting deeper than 2048), or a tag has thousands of attributes (libxml2 is quadratic in them),
the page is parsed with ``html.parser`` instead, which has neither limit.
``parser="html.parser"`` (bs4 + Python's parser, the original path) and ``parser="bs4-lxml"`` (bs4 with its
lxml tree builder, same walk) remain selectable.
"""

from __future__ import annotations

import codecs
import html as html_lib
import logging
import re
import threading
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal
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
from lxml import etree

from oasis.runtime.page import Link, Page
from oasis.runtime.urls import MAX_URL_LENGTH, InvalidURL, canonicalize

logger = logging.getLogger(__name__)

MAX_BYTES = 4 * 1024 * 1024  # default cap: a response processor never parses more than 4 MiB of one page
MAX_ANCHOR_CHARS = 200  # joined anchor text of one link is cut here
MAX_TITLE_CHARS = 500
# A <meta http-equiv="refresh"> to another URL within this many seconds makes the page a redirect stub, as an
# HTTP 3xx: the robot follows it and indexes no page (Nutch's PERM_REFRESH_TIME); a later refresh leaves the
# page a page, with its target one more link
REFRESH_REDIRECT = 5.0
INVISIBLE_TAGS = ("script", "style", "noscript", "template", "title")
_INVISIBLE = frozenset(INVISIBLE_TAGS)
_NON_TEXT = (Comment, Declaration, Doctype, ProcessingInstruction)
# bs4's get_text() (anchors, title) skips strings inside these "string containers"; the lxml walk too.
_STRING_CONTAINERS = frozenset(("script", "style", "template", "rt", "rp"))
# Raw text in HTML5 tokenisation that browsers do not render: invisible in the lxml walk.
_LXML_INVISIBLE = _INVISIBLE | {"iframe", "noembed", "noframes"}
_SURROGATES = re.compile("[\ud800-\udfff]")

Parser = Literal["lxml", "html.parser", "bs4-lxml"]
PARSERS: tuple[Parser, ...] = ("lxml", "html.parser", "bs4-lxml")


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
    # <meta http-equiv="refresh" content="N; url=...">: its target (canonical, resolved) and delay in
    # seconds; None when absent, unparsable, or a reload of the page itself (not a link: ``links`` is the
    # page's <a>/<area> links only, so every corpus graph is what the markup links)
    refresh: str | None = None
    refresh_delay: float | None = None

    @property
    def redirect(self) -> str | None:
        """The target of a prompt meta refresh (within ``REFRESH_REDIRECT`` seconds): the page is a stub."""
        if self.refresh_delay is not None and self.refresh_delay <= REFRESH_REDIRECT:
            return self.refresh
        return None

    def to_page(self, url: str, *, relevance: float | None = None, html: str | None = None) -> Page:
        return Page(
            url=url, title=self.title, text=self.text, links=self.links, relevance=relevance, html=html
        )


def collapse_whitespace(text: str) -> str:
    """Runs of whitespace as one space, none at the ends: ``str.split`` (the same whitespace as ``\\s``,
    every Unicode one) is 2.7x faster than ``re.sub`` on a 60 kB page (14 % of the robot's parse time)."""
    return " ".join(text.split())


# WHATWG MIME Sniffing, "binary data byte": control bytes no text format uses (NUL, the C0 controls but
# tab, LF, FF, CR and ESC); looked for in the "resource header", the first 1,445 bytes
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
SNIFF_BYTES = 1445
_WIDE_CHARSETS = ("utf-16", "utf-32", "utf16", "utf32", "ucs-2", "ucs2", "ucs-4", "ucs4")


def looks_binary(content: bytes, charset: str | None = None) -> bool:
    """Whether a response or file said to be HTML is binary data (an image, an archive, a compressed page
    without its Content-Encoding): a binary data byte in its first :data:`SNIFF_BYTES`, as browsers sniff a
    resource whose type is unknown (WHATWG MIME Sniffing, "rules for distinguishing if a resource is text
    or binary"). Not binary: a UTF-16 or UTF-8 byte-order mark, or a UTF-16/32 ``charset`` (their text
    holds NUL bytes)."""
    if content.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE)):
        return False
    if charset is not None and charset.strip().lower().startswith(_WIDE_CHARSETS):
        return False
    return _BINARY_BYTES.search(content, 0, SNIFF_BYTES) is not None


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
        return _canonical(_cache_key(absolute))
    except (InvalidURL, ValueError):
        return None


# canonicalize() is pure and costs ~60 us; navigation links repeat on every page of a site.
_canonical = lru_cache(maxsize=16384)(canonicalize)


def _cache_key(absolute: str) -> str:
    """``absolute`` without its fragment when that cannot change ``canonicalize``'s answer (it drops the
    fragment; only its length limit and its ``strip()`` see it), so ``x.html#a`` and ``x.html#b`` share one
    cache entry."""
    key, hash_mark, _ = absolute.partition("#")
    if hash_mark and key.strip() and key == key.rstrip() and len(absolute.strip()) <= MAX_URL_LENGTH:
        return key
    return absolute


def parse_html(
    content: bytes | str,
    base_url: str,
    *,
    encoding: str | None = None,
    max_bytes: int = MAX_BYTES,
    parser: Parser = "lxml",
    max_links: int | None = None,
) -> ParsedPage:
    """Parse one HTML page fetched from (or stored at) ``base_url``.

    ``encoding`` is the charset from the HTTP header, if any. Input longer than ``max_bytes`` (bytes, or
    characters for ``str``) is cut there and parsed best-effort. ``parser`` picks the tree builder (see the
    module docstring); all three share decoding, link resolution and the result's rules. Never raises for
    any content. ``max_links``: links beyond the first that many distinct ones are not resolved (a page of
    100,000 links costs the time of ``max_links``; resolving is most of a parse).
    """
    if max_bytes < 1:
        raise ValueError("max_bytes must be >= 1")
    if parser not in PARSERS:
        raise ValueError(f"parser must be one of {', '.join(PARSERS)}, not {parser!r}")
    truncated = len(content) > max_bytes
    if truncated:
        content = content[:max_bytes]
    if isinstance(content, bytes):
        markup, used = decode_html(content, encoding)
    else:
        markup, used = content, "utf-8"
    markup = markup.replace("\x00", "\ufffd")
    try:
        if _too_deep(markup):  # both tree builders go quadratic: a linear walk instead
            logger.info("%s nests tags deeper than %d: parsed without a tree", base_url[:200], MAX_NESTING)
            return _finish(_walk_flat(markup), base_url, used, truncated, max_links)
        walked = _walk_lxml(markup) if parser == "lxml" else None
        if walked is None:  # bs4 asked for, or libxml2 gave up on this page
            walked = _walk_soup(markup, "lxml" if parser == "bs4-lxml" else "html.parser")
        return _finish(walked, base_url, used, truncated, max_links)
    except Exception:  # a parser on adversarial input: never let a page crash the caller
        logger.warning("HTML parser failed on %s; using the text only", base_url[:200], exc_info=True)
        text = collapse_whitespace(re.sub(r"<[^>]*>", " ", markup))
        return ParsedPage(title="", text=text, links=(), encoding=used, truncated=truncated)


ROBOTS_NAMES = ("robots", "oasis", "oasisrobot")  # <meta name=...> and X-Robots-Tag agents that mean us
# X-Robots-Tag directives that carry a value after a colon (Google's list), not a user agent
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})


def _directives(tokens: Iterable[str]) -> tuple[bool, bool]:
    """(noindex, nofollow) of robots directives (lower-cased): ``none`` is both."""
    found = set(tokens)
    return bool(found & {"noindex", "none"}), bool(found & {"nofollow", "none"})


def robots_header(value: str) -> tuple[bool, bool]:
    """(noindex, nofollow) of an ``X-Robots-Tag`` response header (its values joined by commas, as HTTP
    libraries join repeated headers): the directives for every crawler, and those after ``robots:``,
    ``oasis:`` or ``oasisrobot:``; those after another agent's name (``googlebot: noindex``) are not ours."""
    ours: list[str] = []
    mine = True  # directives before any agent name apply to all
    for part in value.lower().split(","):
        token = part.strip()
        agent, colon, rest = token.partition(":")
        if colon and agent.strip() not in _VALUED:
            mine = agent.strip() in ROBOTS_NAMES
            token = rest.strip()
        if mine:
            ours.append(token)
    return _directives(ours)


@dataclass(slots=True)
class _Walked:
    """What one document-order walk over a tree collects, before links are resolved."""

    title: str = ""
    base_href: str | None = None
    canonical_href: str | None = None
    noindex: bool = False
    nofollow: bool = False
    raw_links: list[tuple[str, str]] | None = None  # (href, anchor text)
    pieces: list[str] | None = None  # visible strings
    refresh: str | None = None  # the first <meta http-equiv="refresh">'s content

    def meta(self, name: Any, content: Any, http_equiv: Any = None) -> None:
        if self.refresh is None and str(http_equiv or "").strip().lower() == "refresh":
            self.refresh = str(content or "")
        if str(name or "").strip().lower() in ROBOTS_NAMES:
            noindex, nofollow = _directives(d.strip().lower() for d in str(content or "").split(","))
            self.noindex |= noindex
            self.nofollow |= nofollow

    def link(self, rel: Any, href: Any) -> None:
        rels = rel if isinstance(rel, list) else str(rel or "").split()
        if isinstance(href, str) and "canonical" in (r.lower() for r in rels):
            self.canonical_href = href


def _walk_soup(markup: str, builder: str) -> _Walked:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(markup, builder)

    # One pre-order walk (document order) instead of several find_all calls: bs4's filters dominate otherwise.
    out = _Walked(raw_links=[], pieces=[])
    raw_links, pieces = out.raw_links, out.pieces
    assert raw_links is not None and pieces is not None
    stack: list[PageElement] = [soup]
    while stack:
        node = stack.pop()
        if isinstance(node, Tag):
            name = node.name
            if name in _INVISIBLE:
                if name == "title" and not out.title:
                    out.title = collapse_whitespace(node.get_text(" "))[:MAX_TITLE_CHARS]
                continue
            if name in ("a", "area"):
                href = node.get("href")
                if isinstance(href, str):
                    anchor = collapse_whitespace(node.get_text(" ")) or collapse_whitespace(
                        str(node.get("title") or "")
                    )
                    raw_links.append((href, anchor))
            elif name == "base" and out.base_href is None:
                href = node.get("href")
                if isinstance(href, str):
                    out.base_href = href
            elif name == "link" and out.canonical_href is None:
                out.link(node.get("rel"), node.get("href"))
            elif name == "meta":
                out.meta(node.get("name", ""), node.get("content", ""), node.get("http-equiv"))
            stack.extend(reversed(node.contents))
        elif isinstance(node, NavigableString) and not isinstance(node, _NON_TEXT):
            pieces.append(str(node))
    return out


_local = threading.local()


def _lxml_parser() -> Any:
    """One libxml2 HTML parser per thread (a parser must not be used by two threads at once)."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.HTMLParser(
            encoding="utf-8",  # we hand it UTF-8 we encoded: <meta charset> must not re-decode it
            recover=True,
            no_network=True,
            huge_tree=True,  # text nodes > 10 MB, nesting up to 2048 (256 otherwise)
            default_doctype=False,
            collect_ids=False,
        )
        _local.parser = parser
    return parser


def _strings(node: Any) -> list[str]:
    """The strings bs4's ``get_text()`` yields for ``node`` (not inside a string container itself): its
    descendants' text in document order, without comments and without string containers' content."""
    if not len(node):  # a leaf: most anchors and every title
        return [node.text] if node.text else []
    out = [node.text] if node.text else []
    stack: list[Any] = list(reversed(node))  # elements to enter, and str tails to emit
    while stack:
        child = stack.pop()
        if type(child) is str:
            out.append(child)
            continue
        if child.tail:
            stack.append(child.tail)  # popped after the child's subtree
        tag = child.tag
        if isinstance(tag, str) and tag not in _STRING_CONTAINERS:  # else a comment, PI or container
            stack.extend(reversed(child))
            if child.text:
                stack.append(child.text)
    return out


# Tags left open this deep make every tree builder slow (nested ``<b><a href=x>y`` x 8,000: 25 s in
# html.parser, minutes beyond); real pages nest a few dozen deep. Deeper pages get a linear, tree-less walk.
MAX_NESTING = 512
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)([^<>]*?)(/?)>")
_TAG_NAME = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)")
_NEVER_NESTED = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
     "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "html", "head", "body", "tbody", "thead",
     "tfoot", "colgroup", "!doctype"}
)  # fmt: skip
_HREF = re.compile(r"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE)
_SCRIPTS = re.compile(r"<(script|style|noscript|template)\b[^>]*>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)


def _too_deep(markup: str) -> bool:
    """True if more than ``MAX_NESTING`` elements are open at once somewhere (void and implicitly closed
    elements not counted). Linear in the markup (about a tenth of a parse)."""
    if markup.count("<") <= MAX_NESTING:
        return False  # cannot nest deeper than it has tags
    depth = deepest = 0
    for close, name in _TAG_NAME.findall(markup):
        name = name.lower()
        if name in _NEVER_NESTED:
            continue
        if close:
            if depth:
                depth -= 1
        else:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_NESTING:
                    return True
    return False


def _walk_flat(markup: str) -> _Walked:
    """Best effort without a tree: the title, the text between tags (no script or style), and every
    ``<a>``/``<area>`` href with the text up to the next tag as its anchor."""
    out = _Walked(raw_links=[], pieces=[])
    assert out.raw_links is not None and out.pieces is not None
    title = _TITLE.search(markup)
    if title is not None:
        out.title = collapse_whitespace(re.sub(r"<[^>]*>", " ", title.group(1)))[:MAX_TITLE_CHARS]
    visible = _SCRIPTS.sub(" ", _TITLE.sub(" ", markup))
    for match in _TAG.finditer(visible):
        if match.group(1) or match.group(2).lower() not in ("a", "area"):
            continue
        href = _HREF.search(match.group(3))
        if href is not None:
            value = next(g for g in href.groups() if g is not None)
            end = visible.find("<", match.end())
            anchor = visible[match.end() : end if end >= 0 else len(visible)]
            out.raw_links.append((html_lib.unescape(value), collapse_whitespace(html_lib.unescape(anchor))))
    out.pieces.append(html_lib.unescape(re.sub(r"<[^>]*>", " ", visible)))
    return out


_LONG_TAG = 4096  # characters between a "<x" and the next ">" before the attributes are counted
_MAX_ATTRIBUTES = 1000  # libxml2's duplicate-attribute check is quadratic: 50,000 attributes take ~30 s
_TAG_OPEN = re.compile(r"<[A-Za-z]")
_ATTRIBUTE_SEPARATORS = re.compile(r"[\s/=\"']+")


def _many_attributes(markup: str) -> bool:
    """True if some tag may hold more than ``_MAX_ATTRIBUTES`` attributes (counted generously: every run
    of separators), so libxml2 would crawl; ``html.parser`` then takes the page (0.1 s for 50,000)."""
    if len(markup) <= _LONG_TAG:
        return False
    for chunk in markup.split(">"):
        if len(chunk) > _LONG_TAG:
            start = _TAG_OPEN.search(chunk)
            if start is not None and len(chunk) - start.start() > _LONG_TAG:
                separators = _ATTRIBUTE_SEPARATORS.findall(chunk, start.start())
                if len(separators) > _MAX_ATTRIBUTES:
                    return True
    return False


_WANTED = (*sorted(_LXML_INVISIBLE), "a", "area", "base", "link", "meta", "rt", "rp")


def _walk_lxml(markup: str) -> _Walked | None:
    """Walk libxml2's tree; None if libxml2 stopped early (the caller falls back to ``html.parser``)."""
    try:
        data = markup.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates in a str argument
        data = _SURROGATES.sub("\ufffd", markup).encode("utf-8")
    if _many_attributes(markup):
        return None
    parser = _lxml_parser()
    root = etree.fromstring(data, parser) if data.strip() else None
    if parser.error_log.filter_from_fatals():  # e.g. "Excessive depth in document"
        return None
    out = _Walked(raw_links=[], pieces=[])
    if root is None:
        return out if not markup.strip() else None
    # Comments before <html> and content after </html> are siblings of the root element.
    for top in (*reversed(list(root.itersiblings(preceding=True))), root, *root.itersiblings()):
        if isinstance(top.tag, str):
            _collect(top, out)
    return out


def _collect(top: Any, out: _Walked) -> None:
    """The elements that matter, in document order (found by libxml2, not by a Python walk), then the
    visible text: every string outside the invisible elements, as ``itertext()`` yields them once those are
    emptied."""
    raw_links, pieces = out.raw_links, out.pieces
    assert raw_links is not None and pieces is not None
    hidden: set[Any] = set()  # inside an invisible element: never seen by the walk
    ruby: set[Any] = set()  # inside <rt>/<rp>: bs4's get_text() is empty there
    invisible: list[Any] = []
    for node in list(top.iter(*_WANTED)):
        if node in hidden:
            continue
        name = node.tag
        if name in _LXML_INVISIBLE:
            invisible.append(node)
            hidden.update(node.iterdescendants(*_WANTED))
            if name == "title" and not out.title and node not in ruby:
                out.title = collapse_whitespace(" ".join(_strings(node)))[:MAX_TITLE_CHARS]
        elif name == "a" or name == "area":
            href = node.get("href")
            if href is not None:
                anchor = "" if node in ruby else collapse_whitespace(" ".join(_strings(node)))
                raw_links.append((href, anchor or collapse_whitespace(node.get("title") or "")))
        elif name == "base":
            if out.base_href is None:
                out.base_href = node.get("href")
        elif name == "link":
            if out.canonical_href is None:
                out.link(node.get("rel"), node.get("href"))
        elif name == "meta":
            out.meta(node.get("name"), node.get("content"), node.get("http-equiv"))
        else:  # rt, rp
            ruby.update(node.iterdescendants("a", "area", "title"))
    for node in invisible:  # keep the tail: it is the visible text after the element
        node.text = None
        del node[:]
    pieces.extend(top.itertext())


def _finish(
    walked: _Walked, base_url: str, used: str, truncated: bool, max_links: int | None = None
) -> ParsedPage:
    try:
        base = canonicalize(base_url)
    except InvalidURL:
        base = ""
    own = base  # the page's own URL (a refresh to it is a reload, not a redirect)
    if walked.base_href is not None:
        resolved = resolve_link(walked.base_href, base)
        if resolved is not None:
            base = resolved
    canonical = resolve_link(walked.canonical_href, base) if walked.canonical_href is not None else None

    anchors: dict[str, list[str]] = {}
    resolved_by_href: dict[str, str | None] = {}
    for href, anchor in walked.raw_links or ():
        if href in resolved_by_href:
            url = resolved_by_href[href]
        elif max_links is not None and len(anchors) >= max_links:
            break
        else:
            url = resolved_by_href[href] = resolve_link(href, base)
        if url is None:
            continue
        texts = anchors.setdefault(url, [])
        if anchor and anchor not in texts:
            texts.append(anchor)
    links = tuple(Link(url, " ".join(texts)[:MAX_ANCHOR_CHARS]) for url, texts in anchors.items())
    text = collapse_whitespace(" ".join(walked.pieces or ()))
    refresh = delay = None
    declared = parse_refresh(walked.refresh) if walked.refresh is not None else None
    if declared is not None and declared[1]:
        target = resolve_link(declared[1], base)
        if target is not None and target != own:  # (to the page itself: a reload, no refresh target)
            refresh, delay = target, declared[0]
    return ParsedPage(
        title=walked.title,
        text=text,
        links=links,
        canonical=canonical,
        noindex=walked.noindex,
        nofollow=walked.nofollow,
        encoding=used,
        truncated=truncated,
        refresh=refresh,
        refresh_delay=delay,
    )


_ASCII_WHITESPACE = "\t\n\f\r "


def parse_refresh(content: str) -> tuple[float, str] | None:
    """A ``<meta http-equiv="refresh">`` content as WHATWG HTML's shared declarative refresh steps read it:
    ``(delay in seconds, URL string)``, the URL string empty for a reload of the page itself; None when
    the content does not start with a time (``"5; url=/next"``, ``"0;URL='a b.html'"``, ``"3, next.html"``,
    ``"7"`` all parse; ``"soon; url=x"`` does not)."""
    pos, end = 0, len(content)
    ws = _ASCII_WHITESPACE
    while pos < end and content[pos] in ws:
        pos += 1
    start = pos
    while pos < end and content[pos].isascii() and content[pos].isdigit():
        pos += 1
    digits = content[start:pos]
    if not digits and not (pos < end and content[pos] == "."):
        return None
    while pos < end and (content[pos] == "." or (content[pos].isascii() and content[pos].isdigit())):
        pos += 1  # a fraction is allowed and ignored
    # (int() of over 4,300 digits raises: a hostile page's refresh must not cost it its links)
    delay = 0.0 if not digits else float(digits) if len(digits) <= 15 else float("inf")
    if pos < end and content[pos] not in ws and content[pos] not in ";,":
        return None  # "5x": not a time
    while pos < end and content[pos] in ws:
        pos += 1
    if pos < end and content[pos] in ";,":
        pos += 1
    while pos < end and content[pos] in ws:
        pos += 1
    # "url", whitespace, "=", whitespace: each matched part is consumed, and the first part that does not
    # match ends the matching where it stands (the spec's "skip quotes": "0; ufoo" is "foo", as browsers do)
    for letter in "url":
        if pos >= end or content[pos].lower() != letter:
            break
        pos += 1
    else:
        while pos < end and content[pos] in ws:
            pos += 1
        if pos < end and content[pos] == "=":
            pos += 1
            while pos < end and content[pos] in ws:
                pos += 1
    rest = content[pos:]
    if rest[:1] in ("'", '"'):
        rest = rest[1:].split(rest[0], 1)[0]
    return delay, rest.strip(ws)
