"""What the robot needs from an engine, without grpc: documents to index, acknowledgements, the error.

The documents and acknowledgements are the engine client's own types (:mod:`oasis.runtime.engine_types`);
:func:`oasis.robot.engine_client.connect_engine` gives the gRPC implementation of :class:`EngineLike`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from oasis.runtime.engine_types import IndexDocument, IndexReport
from oasis.runtime.errors import ServiceError

IndexDoc = IndexDocument  # one index operation: an upsert of ``url``, or its deletion (``delete=True``)
IndexResult = IndexReport  # (acknowledged, added, replaced, deleted, rejected)


class RobotEngineError(ServiceError):
    """The engine could not be reached or refused a request."""


class EngineLike(Protocol):
    """What the crawler needs from an engine (a test may pass an in-process one)."""

    def score(self, pages: Sequence[tuple[str, str]]) -> list[float]: ...

    def index(self, docs: Sequence[IndexDoc]) -> IndexResult: ...

    def close(self) -> None: ...
