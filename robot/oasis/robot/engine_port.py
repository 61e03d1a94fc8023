"""What the robot needs from an engine, without grpc: documents to index, acknowledgements, the error."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class RobotEngineError(RuntimeError):
    """The engine could not be reached or refused a request."""


@dataclass(frozen=True, slots=True)
class IndexDoc:
    url: str
    title: str = ""
    text: str = ""
    fetch_time: float = 0.0
    relevance: float | None = None
    delete: bool = False  # a delete operation for ``url``


@dataclass(frozen=True, slots=True)
class IndexResult:
    acked: int  # operations acknowledged (committed)
    added: int
    replaced: int
    deleted: int
    rejected: tuple[tuple[str, str], ...]  # (url, reason)


class EngineLike(Protocol):
    """What the crawler needs from an engine (a test may pass an in-process one)."""

    def score(self, pages: Sequence[tuple[str, str]]) -> list[float]: ...

    def index(self, docs: Sequence[IndexDoc]) -> IndexResult: ...

    def close(self) -> None: ...
