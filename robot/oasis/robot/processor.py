"""The response processor (papers/004, Figure 2): responses in; outcomes for the request controller and
add / modify / delete instructions for the document collection (the engine) out.

For each response: parse with :func:`oasis.runtime.html.parse_html` (the project's one HTML parser: title,
visible text, canonical deduplicated links without fragments, anchor text); score the page and the anchor
texts of its links with the engine's topic model (one Score call per batch of responses); detect changes by
a content hash (``new`` / ``modified`` / ``unchanged``; 404 / 410 of a known page is ``deleted``); anything
else is ``error`` with the fetch's error kind. Bad input never raises here.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oasis.robot import fetcher as f
from oasis.robot.engine_port import IndexDoc
from oasis.robot.scheduling.interface import DELETED, ERROR, MODIFIED, NEW, UNCHANGED, Discovered, FetchKind
from oasis.runtime.html import parse_html, robots_header
from oasis.runtime.text import link_words

logger = logging.getLogger(__name__)

MAX_LINKS_PER_PAGE = 1000  # link farms / traps: the rest of a page's links are ignored (not even resolved)
MAX_URL_LENGTH = 2048  # longer links are dropped (sitemaps.org's limit; 4 KB URLs filled memory, issue 15)

Scorer = Callable[[Sequence[tuple[str, str]]], list[float]]


@dataclass(frozen=True, slots=True)
class Processed:
    url: str
    kind: FetchKind
    relevance: float
    children: tuple[Discovered, ...] = ()  # the links (a redirect's target), for the request controller
    op: IndexDoc | None = None  # what to send to the engine, if anything
    error: str | None = None  # the fetch / processing error kind (for the error counters)
    content_hash: str | None = None
    seed: str | None = None  # a URL to add as a new root (the target of a known page's redirect)


@dataclass(frozen=True, slots=True)
class Parsed:
    """A batch of responses parsed (:meth:`ResponseProcessor.parse`), waiting for the scores of ``texts``."""

    results: Sequence[f.FetchResult]
    pages: dict[int, tuple[str, str, list[tuple[str, str]], bool]]  # index -> title, text, links, noindex
    page_idx: dict[int, int]  # result index -> its page's slot in texts
    link_slot: dict[tuple[str, str], int]  # (url, anchor) of a link -> its words' slot in texts
    texts: list[tuple[str, str]]  # (title, text) of each page, then ("", words) of each distinct link's words
    refreshed: dict[int, str]  # result index -> the target of its page's meta refresh redirect


def content_hash(title: str, text: str) -> str:
    return hashlib.blake2b(f"{title}\x00{text}".encode("utf-8", "replace"), digest_size=16).hexdigest()


@dataclass
class Known:
    """What the robot remembers of a page it has retrieved (for change detection and Eq. 11's r_k)."""

    hash: str
    relevance: float
    etag: str = ""  # the validators of the copy, for conditional GETs
    last_modified: str = ""

    def validators(self) -> dict[str, str]:
        return {"etag": self.etag, "last-modified": self.last_modified}


class ResponseProcessor:
    def __init__(
        self,
        scorer: Scorer,
        *,
        max_bytes: int,
        in_scope: Callable[[str], bool] = lambda url: True,
        known: dict[str, Known] | None = None,
        max_links: int = MAX_LINKS_PER_PAGE,
        min_relevance: float = 0.0,
        max_url_length: int = MAX_URL_LENGTH,
        skip_suffixes: tuple[str, ...] = (),
    ) -> None:
        self._score = scorer
        self._max_bytes = max_bytes
        self._in_scope = in_scope
        self._max_links = max_links
        self._min_relevance = min_relevance
        self._known: dict[str, Known] = {}
        self.held = 0.0  # relevance of the known pages at or above min_relevance (the recall estimate's S_C)
        self.known = known if known is not None else {}
        self._max_url_length = max_url_length
        self.long_urls = 0  # links dropped for their length (a counter for status / tests)
        self._skip_suffixes = skip_suffixes
        self.not_pages = 0  # links not followed: their path's suffix names no HTML page (skip_suffixes)

    def process(self, results: Sequence[f.FetchResult], fetch_time: float) -> list[Processed]:
        """Process a batch of responses; one Score call for all of its pages and anchors."""
        parsed = self.parse(results)
        return self.finish(parsed, self.score(parsed), fetch_time)

    def parse(self, results: Sequence[f.FetchResult]) -> Parsed:
        """The first half of :meth:`process`: parse the pages, and list the texts to score."""
        pages: dict[int, tuple[str, str, list[tuple[str, str]], bool]] = {}
        texts: list[tuple[str, str]] = []
        link_slot: dict[tuple[str, str], int] = {}
        word_slot: dict[str, int] = {}  # a link's words (link_words) -> their slot in texts
        refreshed: dict[int, str] = {}
        for i, res in enumerate(results):
            if res.kind != f.OK:
                continue
            page = parse_html(
                res.content,
                res.url,
                encoding=res.charset,
                max_bytes=self._max_bytes,
                max_links=self._max_links,
            )
            if page.redirect is not None:  # a prompt meta refresh: a stub, as a 3xx is (REFRESH_REDIRECT)
                refreshed[i] = page.redirect
                continue
            header_noindex, header_nofollow = robots_header(res.headers.get("x-robots-tag", ""))
            nofollow = page.nofollow or header_nofollow
            links = [] if nofollow else [(ln.url, ln.anchor) for ln in page.links if self._in_scope(ln.url)]
            late = None if nofollow else page.refresh  # a late refresh: its target is one more link
            if late is not None and self._in_scope(late) and all(url != late for url, _ in links):
                links.append((late, ""))
            if links:
                kept = [ln for ln in links if len(ln[0]) <= self._max_url_length]
                self.long_urls += len(links) - len(kept)
                links = kept
            if links and self._skip_suffixes:
                kept = [ln for ln in links if not self._not_a_page(ln[0])]
                self.not_pages += len(links) - len(kept)
                links = kept
            pages[i] = (page.title, page.text, links, page.noindex or header_noindex)
            for link in links:
                if link not in link_slot:
                    words = link_words(link[1], link[0])
                    if words:
                        slot = word_slot.get(words)
                        if slot is None:
                            slot = word_slot[words] = len(word_slot)
                        link_slot[link] = slot
        page_idx = {i: len(texts) + k for k, i in enumerate(pages)}
        texts.extend((title, text) for title, text, _, _ in pages.values())
        first = len(texts)  # the links' words follow the pages
        texts.extend(("", words) for words in word_slot)
        for link, slot in link_slot.items():
            link_slot[link] = first + slot
        return Parsed(results, pages, page_idx, link_slot, texts, refreshed)

    @property
    def known(self) -> dict[str, Known]:
        """Every page retrieved and still there: its content hash, relevance and validators."""
        return self._known

    @known.setter
    def known(self, pages: dict[str, Known]) -> None:
        self._known = pages
        self.held = sum(self._held(k) for k in pages.values())

    def held_pages(self) -> dict[str, float]:
        """URL -> relevance of the known pages at or above min_relevance (``held`` is their sum)."""
        return {url: k.relevance for url, k in self._known.items() if self._held(k)}

    def _held(self, k: Known | None) -> float:
        """A known page's relevance if it is at or above min_relevance (the robot indexes it), else 0."""
        return k.relevance if k is not None and k.relevance >= self._min_relevance else 0.0

    def _forget(self, url: str) -> Known | None:
        before = self._known.pop(url, None)
        self.held -= self._held(before)
        return before

    def _not_a_page(self, url: str) -> bool:
        """The URL's path (not its query) ends with one of ``skip_suffixes``: an image, a PDF, a source."""
        end = url.find("?")
        return (url if end < 0 else url[:end]).lower().endswith(self._skip_suffixes)

    def score(self, parsed: Parsed) -> list[float]:
        """The topic relevance of every text of a parsed batch (one Score call; none without texts)."""
        return self._score(parsed.texts) if parsed.texts else []

    def finish(self, parsed: Parsed, scores: Sequence[float], fetch_time: float) -> list[Processed]:
        """The second half of :meth:`process`: outcomes and index operations, given the batch's scores."""
        out: list[Processed] = []
        link_slot, page_idx = parsed.link_slot, parsed.page_idx
        for i, res in enumerate(parsed.results):
            if i in parsed.pages:
                title, text, links, noindex = parsed.pages[i]
                r = _clip(scores[page_idx[i]])
                slots = [link_slot.get(link) for link in links]
                children = tuple(
                    Discovered(url, anchor, 0.0 if slot is None else _clip(scores[slot]))
                    for (url, anchor), slot in zip(links, slots, strict=True)
                )
                out.append(self._page(res.url, title, text, r, children, noindex, fetch_time))
                known = self.known.get(res.url)
                if known is not None:
                    known.etag = res.headers.get("etag", "")
                    known.last_modified = res.headers.get("last-modified", "")
            elif i in parsed.refreshed:
                out.append(self._redirected(res.url, parsed.refreshed[i]))
            else:
                out.append(self._failure(res))
        return out

    def _page(
        self,
        url: str,
        title: str,
        text: str,
        r: float,
        children: tuple[Discovered, ...],
        noindex: bool,
        fetch_time: float,
    ) -> Processed:
        digest = content_hash(title, text)
        before = self.known.get(url)
        kind: FetchKind
        if before is None:
            kind = NEW
        elif before.hash == digest:
            kind = UNCHANGED
        else:
            kind = MODIFIED
        after = self._known[url] = Known(digest, r)
        self.held += self._held(after) - self._held(before)
        op = None
        keep = not noindex and r >= self._min_relevance  # below the threshold: learned from, not indexed
        if kind != UNCHANGED and keep:
            op = IndexDoc(url=url, title=title, text=text, fetch_time=fetch_time, relevance=r)
        elif not keep and before is not None:
            op = IndexDoc(url=url, delete=True)
        return Processed(url, kind, r, children, op, None, digest)

    def _failure(self, res: f.FetchResult) -> Processed:
        if res.kind == f.NOT_MODIFIED:  # 304: the held copy is current (a re-crawl that found no change)
            before = self.known.get(res.url)
            if before is not None:
                return Processed(res.url, UNCHANGED, before.relevance, (), None, None, before.hash)
        if res.kind == f.REDIRECT and res.redirect_to is not None:
            return self._redirected(res.url, res.redirect_to)
        if res.kind == f.NOT_FOUND:
            before = self._forget(res.url)
            if before is not None:
                return Processed(res.url, DELETED, before.relevance, (), IndexDoc(url=res.url, delete=True))
        return Processed(res.url, ERROR, 0.0, (), None, res.kind)

    def _redirected(self, url: str, target: str) -> Processed:
        """A redirect (an HTTP 3xx, or a prompt meta refresh) from ``url`` to ``target``: the target is the
        one child of a page with no content of its own (reward 0)."""
        follow = target != url and self._in_scope(target) and len(target) <= self._max_url_length
        before = self._forget(url)
        if before is not None:  # a page we indexed moved: delete it, and crawl the target as a new root
            op = IndexDoc(url=url, delete=True)
            return Processed(
                url, DELETED, before.relevance, (), op, f.REDIRECT, seed=target if follow else None
            )
        children = (Discovered(target),) if follow else ()
        return Processed(url, NEW, 0.0, children, None, f.REDIRECT)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, float(x))) if x == x else 0.0  # NaN -> 0
