"""Live collection quality (papers/004 Eqs. 1-3) of each topic engine against the living web's ground truth,
and the on-disk time series it is recorded in. Pure: no gRPC, no HTTP (the evaluator process does the IO).

Definitions (the replay's, :mod:`oasis.replay.metrics`, on live data):

* the web V_t: the live pages, page i weighted by its topic relevance r(i) (the topic engine's scoring
  function on the page's current version), counted only when r(i) >= the cluster's ``min_relevance`` (the
  robots index nothing below it, so those pages are not the topic's);
* the collection C_t: what the engine holds (``ListDocuments``: URL and fetch time of each document);
* an entry is *fresh* (in C_t ∩ V_t) when its page is live and was fetched at or after the time its
  current version appeared (``fetch_time >= modified``); a stale entry (an older version) or the entry of a
  deleted page is weighted by the relevance the engine stored with it;
* R = S_CV / S_V, F = S_CV / S_C (Eq. 1), M = min(R, F) (Eq. 2), P = integral of M dt (Eq. 3) over the
  evaluator's samples (M piecewise constant between two samples), reported also as P / elapsed.

The series (``STATE_DIR/quality.jsonl``, one JSON object per line, appended every evaluator period; see
docs/living.md): ``{"time", "elapsed", "web": {"pages", "modified", "deleted", "created"}, "topics": {TOPIC:
{"recall", "freshness", "M", "P", "P_mean", "relevant", "documents", "fresh", "stale", "gone",
"robot": {...}, "estimate_error": {"recall", "freshness"}}}}``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oasis.cluster.config import QUALITY_FILE as QUALITY_FILE  # re-exported: where the series lives
from oasis.freshness.series import is_sample
from oasis.replay.metrics import freshness_from_sums, quality, recall_from_sums


@dataclass(frozen=True, kw_only=True)
class CollectionQuality:
    recall: float
    freshness: float
    M: float
    relevant: int  # live pages of the topic (r >= threshold)
    documents: int  # entries the engine holds
    fresh: int
    stale: int
    gone: int  # entries of deleted pages
    web_relevance: float  # S_V
    fresh_relevance: float  # S_CV
    collection_relevance: float  # S_C


def collection_quality(
    pages: Mapping[str, float],
    relevance: Mapping[str, float],
    documents: Iterable[tuple[str, float, float]],
    threshold: float,
) -> CollectionQuality:
    """R, F, M of one collection (module docstring).

    ``pages``: live URL -> time its current version appeared; ``relevance``: live URL -> r(i) of the current
    version; ``documents``: the engine's entries (URL, fetch time, stored relevance)."""

    def r_of(url: str) -> float:
        r = relevance.get(url, 0.0)
        return r if r >= threshold else 0.0

    s_v = math.fsum(r_of(u) for u in pages)
    relevant = sum(1 for u in pages if r_of(u) > 0)
    s_cv = s_c = 0.0
    n = fresh = stale = gone = 0
    for url, fetch_time, stored in documents:
        n += 1
        modified = pages.get(url)
        if modified is None:
            gone += 1
            s_c += stored
        elif fetch_time >= modified:
            fresh += 1
            s_cv += r_of(url)
            s_c += r_of(url)
        else:
            stale += 1
            s_c += stored
    R = recall_from_sums(s_cv, s_v)
    F = freshness_from_sums(s_cv, s_c)
    return CollectionQuality(
        recall=R,
        freshness=F,
        M=quality(R, F),
        relevant=relevant,
        documents=n,
        fresh=fresh,
        stale=stale,
        gone=gone,
        web_relevance=s_v,
        fresh_relevance=s_cv,
        collection_relevance=s_c,
    )


def append_row(path: Path, row: Mapping[str, Any]) -> None:
    """Append one sample to the series (one line). A write that fails part way (a full or read-only disk)
    is cut back off before the error is raised, so the next sample starts a line of its own and no torn
    line takes it down too."""
    data = (json.dumps(row, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise
    finally:
        os.close(fd)


def last_row(path: Path, tail_bytes: int = 1 << 16) -> dict[str, Any] | None:
    """The newest complete sample, reading only the end of the file (a torn, damaged or foreign line is
    skipped: :func:`oasis.freshness.series.is_sample`)."""
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - tail_bytes))
            lines = f.read().decode("utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return None
    for line in reversed(lines):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if is_sample(row):
            return row
    return None
