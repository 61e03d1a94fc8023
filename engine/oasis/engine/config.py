"""EngineConfig: everything one engine process needs, validated once (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from oasis.engine.index import IndexLimits
from oasis.engine.topic import Topic

_HOST_PORT = re.compile(r"^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$")


def parse_allowed_hosts(csv: str) -> frozenset[str]:
    """``"a.org, B.org:8080,"`` -> ``{"a.org", "b.org:8080"}``."""
    return frozenset(h.strip().lower().rstrip(".") for h in csv.split(",") if h.strip())


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    name: str
    topic: Topic
    index_dir: Path
    directory: str | None = None  # host:port of the engine directory; None: do not register
    heartbeat_seconds: float = 1.0
    rpc_timeout_seconds: float = 2.0
    batch_size: int = 256
    limitmb: int = 256
    commit_seconds: float = 1.0  # batches wait in the write-ahead log at most this long for a Whoosh commit
    allowed_hosts: frozenset[str] = frozenset()
    limits: IndexLimits = field(default_factory=IndexLimits)
    # large enough for a topic engine's whole vocabulary in practice (docs/directory-broker.md measured
    # that 500-term summaries cut top-1 routing nDCG@10 from 0.743 to 0.558)
    summary_terms: int = 20_000

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError("engine name is empty")
        if self.directory is not None and not _HOST_PORT.match(self.directory):
            raise ValueError(f"directory must be HOST:PORT, got {self.directory!r}")
        if not self.heartbeat_seconds > 0:
            raise ValueError(f"heartbeat_seconds must be > 0, got {self.heartbeat_seconds}")
        if not self.rpc_timeout_seconds > 0:
            raise ValueError(f"rpc_timeout_seconds must be > 0, got {self.rpc_timeout_seconds}")
        if not 1 <= self.batch_size <= 100_000:
            raise ValueError(f"batch_size must be in [1, 100000], got {self.batch_size}")
        if not 0 < self.commit_seconds <= 3600:
            raise ValueError(f"commit_seconds must be in (0, 3600], got {self.commit_seconds}")
        if not 16 <= self.limitmb <= 8192:
            raise ValueError(f"limitmb must be in [16, 8192], got {self.limitmb}")
        if not 0 <= self.summary_terms <= 100_000:
            raise ValueError(f"summary_terms must be in [0, 100000], got {self.summary_terms}")
