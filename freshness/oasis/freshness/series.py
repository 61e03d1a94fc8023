"""The living cluster's quality series (``STATE_DIR/quality.jsonl``, written by ``oasis.cluster.quality``;
format: docs/living.md): which rows are the evaluator's samples, and reading them. Here, below both the
cluster (``oasis status``, the demo) and ``oasis report``, and free of plotting imports, so the services can
read it too."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from oasis.runtime.files import read_json_lines


def read_series(path: Path) -> list[dict[str, Any]]:
    """The evaluator's samples (``oasis.cluster.quality``'s rows: a time and every topic's recall,
    freshness, M and documents); a torn, damaged or foreign line is skipped."""
    return [row for row in read_json_lines(path) if is_sample(row)]


def is_sample(row: object) -> bool:
    """Is ``row`` one of the evaluator's samples: a finite time and, per topic, finite recall, freshness, M
    and documents (what ``oasis report``, ``oasis status`` and the demo read)?"""
    if not isinstance(row, dict):
        return False
    topics = row.get("topics")
    return (
        _is_number(row.get("time"))
        and isinstance(topics, dict)
        and all(
            isinstance(q, dict)
            and all(_is_number(q.get(k)) for k in ("recall", "freshness", "M", "documents"))
            for q in topics.values()
        )
    )


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
