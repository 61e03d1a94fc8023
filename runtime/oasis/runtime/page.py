"""A web page as the parser sees it: canonical URL, title, text and out-links.

:func:`oasis.runtime.html.parse_html` produces it; the web model (:mod:`oasis.web.model`), the robot's
response processor, the corpus loaders and the cluster indexer consume it.
"""

from __future__ import annotations

from dataclasses import dataclass


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
