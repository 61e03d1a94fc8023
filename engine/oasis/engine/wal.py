"""The engine's write-ahead log: an acknowledged batch is durable once appended here and fsync'd, so Whoosh
can commit many batches at once in the background (the way Elasticsearch's translog lets Lucene commit
rarely).

A Whoosh commit per acknowledged batch of 32 pages was 3/4 of the engine's indexing CPU (py-spy during
``oasis bench crawl``: segment flush 19 %, merging the small segments 14 % of all samples, plus fsyncs;
issue 14). Now each batch is one record appended to ``oasis-wal.log`` (``fdatasync`` before the
acknowledgement); the index applies the batch to an open Whoosh writer and commits it later (every
``commit_seconds`` or ``commit_docs``, before any read that must see it, and at close), then empties the log.

A record is ``<length u32><crc32 u32><JSON payload>``. Replaying is idempotent (an upsert deletes the URL
and adds the document; a delete deletes), so a crash between a Whoosh commit and the emptying of the log only
replays operations the index already holds. Reading stops at the first incomplete or damaged record: an
incomplete last record is a torn write that was never acknowledged (its fsync had not returned); a damaged
record followed by more data is corruption, reported, and the log is copied aside before it is emptied.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oasis.runtime.files import fsync_directory

logger = logging.getLogger(__name__)

WAL_FILE = "oasis-wal.log"
HEADER = struct.Struct("<II")  # payload length, CRC-32 of the payload
MAX_RECORD_BYTES = 1 << 30


@dataclass(frozen=True)
class Replay:
    batches: list[list[Any]]  # the payload of every good record, in order
    good_bytes: int  # length of the prefix of the file those records fill
    problem: str = ""  # why reading stopped before the end of the file ("" when it did not)
    corrupt: bool = False  # a damaged record with data after it (not a torn last write)


def read_log(path: Path) -> Replay:
    """Every good record of the log at ``path`` (none when it does not exist)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Replay([], 0)
    batches: list[list[Any]] = []
    at = 0
    while at < len(data):
        if len(data) - at < HEADER.size:
            return Replay(batches, at, f"torn record header at byte {at}")
        length, crc = HEADER.unpack_from(data, at)
        start, end = at + HEADER.size, at + HEADER.size + length
        if length > MAX_RECORD_BYTES or end > len(data):
            # a length past the end: the last write was torn (or the header itself is damaged)
            return Replay(batches, at, f"torn record at byte {at} ({len(data) - start} of {length} bytes)")
        payload = data[start:end]
        try:
            if zlib.crc32(payload) != crc:
                raise ValueError("CRC mismatch")
            batch = json.loads(payload.decode("utf-8", "surrogatepass"))
            if not isinstance(batch, list):
                raise ValueError("payload is not a list")
        except ValueError as exc:
            return Replay(batches, at, f"damaged record at byte {at}: {exc}", corrupt=end < len(data))
        batches.append(batch)
        at = end
    return Replay(batches, at)


class WriteAheadLog:
    """The log of one index directory: the current file ``oasis-wal.log``, which batches are appended to,
    and sealed files ``oasis-wal.log.N`` (batches being committed). One appender at a time (the index's
    lock)."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / WAL_FILE
        existed = self.path.exists()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if not existed:
            fsync_directory(self.path.parent)
        self.size = os.fstat(self._fd).st_size

    def sealed(self) -> list[Path]:
        """The sealed files, oldest first."""
        found = []
        for p in self.path.parent.glob(f"{WAL_FILE}.*"):
            suffix = p.name[len(WAL_FILE) + 1 :]
            if suffix.isdigit():
                found.append((int(suffix), p))
        return [p for _, p in sorted(found)]

    def rotate(self) -> Path | None:
        """Seal the current file (None when it is empty) and start a new one: the batches appended so far
        are in the sealed file, which :meth:`drop` deletes once they are committed."""
        if self.size == 0:
            return None
        numbers = [int(p.name[len(WAL_FILE) + 1 :]) for p in self.sealed()]
        target = self.path.with_name(f"{WAL_FILE}.{max(numbers, default=0) + 1}")
        os.close(self._fd)
        os.rename(self.path, target)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        fsync_directory(self.path.parent)
        self.size = 0
        return target

    def drop(self, sealed: Path | None) -> None:
        if sealed is not None:
            sealed.unlink(missing_ok=True)
            fsync_directory(self.path.parent)

    def replay(self, paths: list[Path] | None = None) -> list[list[Any]]:
        """The batches to apply again, in order: after a restart from the sealed files and the current one,
        after a failed commit from the given sealed ``paths`` only; a damaged file is copied aside (and
        reported)."""
        batches: list[list[Any]] = []
        for path in [*self.sealed(), self.path] if paths is None else paths:
            result = read_log(path)
            batches.extend(result.batches)
            if result.problem:
                level = logging.ERROR if result.corrupt else logging.WARNING
                kept = ""
                if result.corrupt:
                    aside = path.with_name(f"{WAL_FILE}.corrupt-{int(time.time())}")
                    shutil.copyfile(path, aside)
                    kept = f"; the whole file is kept in {aside.name}"
                logger.log(
                    level,
                    "write-ahead log %s: %s; replaying the %d good batch(es) before it%s",
                    path,
                    result.problem,
                    len(result.batches),
                    kept,
                )
        return batches

    def append(self, batch: list[Any]) -> None:
        """Append one batch and fsync: durable on return. On failure the log is cut back to its length
        before the call (a partial record would hide every later one from a replay)."""
        text = json.dumps(batch, ensure_ascii=False, separators=(",", ":"))
        payload = text.encode("utf-8", "surrogatepass")
        record = HEADER.pack(len(payload), zlib.crc32(payload)) + payload
        try:
            view = memoryview(record)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            os.fdatasync(self._fd)
        except BaseException:
            os.ftruncate(self._fd, self.size)
            raise
        self.size += len(record)

    def drop_all(self, sealed: list[Path]) -> None:
        """Delete these sealed files (their batches are committed); the current file is left alone."""
        for p in sealed:
            p.unlink(missing_ok=True)
        fsync_directory(self.path.parent)

    def reset(self) -> None:
        """Empty the log: sealed files deleted, the current one truncated (all of it is committed)."""
        for p in self.sealed():
            p.unlink(missing_ok=True)
        os.ftruncate(self._fd, 0)
        os.fsync(self._fd)
        fsync_directory(self.path.parent)
        self.size = 0

    def close(self) -> None:
        os.close(self._fd)
