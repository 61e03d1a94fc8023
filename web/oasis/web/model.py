"""The data model of a web to crawl or replay: pages with text and out-links.

Every corpus loader (HTML folder, WARC, graph file, synthetic generator) produces a :class:`Corpus`;
the replayed HTTP web serves one, and the offline replay harness walks one directly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import numpy.typing as npt

from oasis.runtime.page import Link, Page

__all__ = ["Corpus", "Link", "Page", "WebGraph"]


@dataclass
class Corpus:
    """A web: pages by canonical URL, the seed URLs a crawl starts from, and how to get each page's HTML.

    ``pages`` is any mapping (a plain dict for loaded corpora; the synthetic web generates pages lazily).
    ``sources`` maps a URL to the file its HTML is read from on demand (HTML trees keep no markup in
    memory). ``rewrites`` are ``(from_prefix, to_prefix)`` URL rewrites the loader applied to links (e.g. an
    absolute ``/usr/share/doc/python3-doc/html/`` path mapped to another host); the replayed web applies
    them again to hrefs in served HTML.
    """

    pages: Mapping[str, Page]
    seeds: list[str]
    name: str = "corpus"
    meta: dict[str, object] = field(default_factory=dict)
    sources: Mapping[str, Path] = field(default_factory=dict)
    rewrites: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        missing = [s for s in self.seeds if s not in self.pages]
        if missing:
            raise ValueError(f"seed URLs not in the corpus: {missing[:5]}")

    def hosts(self) -> list[str]:
        """The origins (``scheme://host[:port]``) of the corpus, sorted."""
        return sorted({origin_of(url) for url in self.pages})

    def remap(self, url: str) -> str:
        """Apply the corpus's URL rewrites (first matching prefix wins)."""
        for old, new in self.rewrites:
            if url.startswith(old):
                return new + url[len(old) :]
        return url

    def relevances(self) -> dict[str, float]:
        """Each page's own ``relevance`` attribute (0 when absent)."""
        return {url: float(p.relevance or 0.0) for url, p in self.pages.items()}

    def html_of(self, url: str) -> str | None:
        """The page's markup: stored, else read from its source file, else rendered from title/text/links."""
        page = self.pages.get(url)
        if page is None:
            return None
        if page.html is not None:
            return page.html
        source = self.sources.get(url)
        if source is not None:
            try:
                return source.read_bytes().decode("utf-8", errors="replace")
            except OSError:
                pass  # the file went away: fall back to the parsed content
        return render_html(page)

    def graph(self) -> WebGraph:
        """Integer-indexed CSR view for fast offline replay (pages in sorted URL order)."""
        urls = sorted(self.pages)
        index = {u: i for i, u in enumerate(urls)}
        indptr = np.zeros(len(urls) + 1, dtype=np.int64)
        targets: list[int] = []
        for i, u in enumerate(urls):
            seen: set[int] = set()
            for link in self.pages[u].links:
                j = index.get(link.url)
                if j is not None and j != i and j not in seen:
                    seen.add(j)
                    targets.append(j)
            indptr[i + 1] = len(targets)
        relevance = np.array([float(self.pages[u].relevance or 0.0) for u in urls], dtype=np.float64)
        seeds = np.array([index[s] for s in self.seeds], dtype=np.int64)
        return WebGraph(urls, indptr, np.array(targets, dtype=np.int32), relevance, seeds)

    def __len__(self) -> int:
        return len(self.pages)

    def __iter__(self) -> Iterator[Page]:
        return iter(self.pages.values())

    def out_links(self, url: str) -> tuple[Link, ...]:
        page = self.pages.get(url)
        return page.links if page is not None else ()

    def reachable(self, seeds: list[str] | None = None) -> set[str]:
        """URLs in the corpus reachable from the seeds by following links (seeds included)."""
        start = [s for s in (seeds if seeds is not None else self.seeds) if s in self.pages]
        seen = set(start)
        stack = list(start)
        while stack:
            for link in self.out_links(stack.pop()):
                if link.url in self.pages and link.url not in seen:
                    seen.add(link.url)
                    stack.append(link.url)
        return seen


@dataclass(frozen=True)
class WebGraph:
    """A corpus as integer arrays: node ``i`` has URL ``urls[i]`` and out-neighbours
    ``indices[indptr[i]:indptr[i+1]]`` (deduplicated, no self-loops, only links inside the corpus).
    ``relevance[i]`` is the corpus's own r(i) (0 when the corpus has none)."""

    urls: Sequence[str]
    indptr: npt.NDArray[np.int64]
    indices: npt.NDArray[np.int32]
    relevance: npt.NDArray[np.float64]
    seeds: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        n = len(self.urls)
        if self.indptr.shape != (n + 1,) or (n and int(self.indptr[-1]) != len(self.indices)):
            raise ValueError("indptr must have len(urls) + 1 entries ending at len(indices)")
        if self.relevance.shape != (n,):
            raise ValueError("relevance must have one entry per node")

    def __len__(self) -> int:
        return len(self.urls)

    @property
    def num_edges(self) -> int:
        return len(self.indices)

    def out(self, i: int) -> npt.NDArray[np.int32]:
        return self.indices[self.indptr[i] : self.indptr[i + 1]]


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def render_html(page: Page) -> str:
    """Simple markup for a page that has none (graph corpora, synthetic pages): title, text, link list."""
    items = "".join(
        f'<li><a href="{escape(link.url, quote=True)}">{escape(link.anchor)}</a></li>\n'
        for link in page.links
    )
    title = escape(page.title)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{title}</title></head>\n'
        f"<body><h1>{title}</h1>\n<p>{escape(page.text)}</p>\n<ul>\n{items}</ul></body></html>\n"
    )


def relevance_map(corpus: Corpus, scores: Mapping[str, float] | None = None) -> dict[str, float]:
    """r(i) per page: the given scores, else each page's own ``relevance`` attribute (0 when absent)."""
    if scores is not None:
        return {url: float(scores.get(url, 0.0)) for url in corpus.pages}
    return corpus.relevances()
