"""What goes to and comes back from an engine, as domain objects (no grpc): the documents the robot and the
CLI index, the acknowledgement, and the hits of a search the broker merges."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IndexDocument:
    """One operation of an Index stream: an upsert of ``url``, or its deletion when ``delete``."""

    url: str
    title: str = ""
    text: str = ""
    fetch_time: float = 0.0
    relevance: float | None = None  # None: the engine scores the page itself
    delete: bool = False


@dataclass(frozen=True, slots=True)
class IndexReport:
    acknowledged: int  # operations acknowledged (committed, durable)
    added: int
    replaced: int
    deleted: int
    rejected: tuple[tuple[str, str], ...]  # (url, reason)


@dataclass(frozen=True, kw_only=True)
class EngineHit:
    url: str
    title: str = ""
    snippet: str = ""
    score: float  # raw score of the engine


@dataclass(frozen=True, kw_only=True)
class EngineReply:
    hits: tuple[EngineHit, ...]
    max_score: float
    total: int
    suggestion: str = ""  # the query with the words that engine lacks corrected, or ""
    suggestion_matches: int = 0  # the documents the suggestion matches in that engine
    unknown: tuple[str, ...] = ()  # the query's words (as indexed) that engine holds under no field


@dataclass(frozen=True, kw_only=True)
class EngineDocument:
    """A document an engine holds, as ``ListDocuments`` reports it (no text)."""

    url: str
    title: str
    fetch_time: float
    relevance: float
