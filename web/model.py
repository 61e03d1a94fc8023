"""The data model of a web to crawl or replay: pages with text and out-links.

Every corpus loader (HTML folder, WARC, graph file, synthetic generator) produces a :class:`Corpus`;
the replayed HTTP web serves one, and the offline replay harness walks one directly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Link:
    url: str  # canonical absolute URL
    anchor: str = ""


@dataclass(frozen=True, slots=True)
class Page:
    url: str  # canonical absolute URL
    title: str
    text: str
    links: tuple[Link, ...] = ()
    relevance: float | None = None  # given by the corpus (graph attribute); else scored by the topic model
    html: str | None = None  # the original markup, when the corpus has it


@dataclass
class Corpus:
    pages: dict[str, Page]
    seeds: list[str]
    name: str = "corpus"
    meta: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [s for s in self.seeds if s not in self.pages]
        if missing:
            raise ValueError(f"seed URLs not in the corpus: {missing[:5]}")

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


def relevance_map(corpus: Corpus, scores: Mapping[str, float] | None = None) -> dict[str, float]:
    """r(i) per page: the given scores, else each page's own ``relevance`` attribute (0 when absent)."""
    if scores is not None:
        return {url: float(scores.get(url, 0.0)) for url in corpus.pages}
    return {url: float(p.relevance or 0.0) for url, p in corpus.pages.items()}
