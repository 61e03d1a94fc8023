"""Query analysis for resource selection.

Engines index text with the analyser of :mod:`oasis.runtime.text` (Whoosh's ``StemmingAnalyzer``: lower-case,
stop words removed, Porter stem), so the terms in their summaries are stems. A query is analysed by the same
code for its terms to meet them.
"""

from __future__ import annotations

from oasis.runtime.text import distinct_terms

MAX_QUERY_CHARS = 2048


class InvalidQuery(ValueError):
    """The query is empty, too long, or has no indexable term."""


def check_query(query: str) -> str:
    """Return the stripped query, or raise :class:`InvalidQuery` with a message fit for a client."""
    if not query or not query.strip():
        raise InvalidQuery("empty query")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidQuery(f"query of {len(query)} characters is longer than the limit of {MAX_QUERY_CHARS}")
    return query.strip()


def analyse(text: str) -> tuple[str, ...]:
    """Distinct index terms of ``text`` in first-seen order, as the engines' analyser produces them."""
    return distinct_terms(text)
