"""Index integrity: detect a damaged index before serving it, never delete what a TOC no longer lists, and
salvage what is readable (issue 15, item 4). Pure domain code (files and Whoosh, no gRPC).

Whoosh keeps the list of live segments (and their deleted documents) in a table of contents ``_MAIN_N.toc``
and deletes every segment file it does not list at the next commit. Without its TOC an index looks empty and
its first commit deletes every old segment; a segment with random bytes inside serves until a term's block
fails to decode. So, beside Whoosh's own files, every commit records ``oasis-segments.json``: for each live
segment its files with size and BLAKE2b digest, its document count and its deleted documents (a copy of
what the TOC says, written after it). With it:

* :func:`verify` finds a missing or unreadable TOC, a missing, truncated or altered segment file (size and
  digest against the record), and deep-reads segments committed without a record (every stored document,
  every posting list); each problem names its file.
* :func:`set_aside_unlisted` moves segment files no TOC lists into ``oasis-unlisted/`` instead of letting
  Whoosh delete them (a killed writer's leftovers, or data a damaged TOC forgot: the operator decides).
* :func:`repair` re-indexes every readable stored document of the live segments (all fields are stored),
  skipping deleted ones, into a fresh index, and moves the old files into ``oasis-damaged-<time>/``.
* :func:`remove_uncommitted` removes the files of a commit that failed (disk full): they are in no TOC.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import logging
import os
import re
import shutil
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oasis.engine.wal import WAL_FILE
from oasis.runtime.files import write_json_atomic

logger = logging.getLogger(__name__)

INDEX_NAME = "MAIN"
RECORD_FILE = "oasis-segments.json"
UNLISTED_DIR = "oasis-unlisted"
DAMAGED_PREFIX = "oasis-damaged-"
_TOC = re.compile(rf"^_{INDEX_NAME}_(\d+)\.toc$")
_SEGMENT_FILE = re.compile(rf"^({INDEX_NAME}_[0-9a-z]+)\.[A-Za-z0-9_.]+$")


class IndexDamaged(RuntimeError):
    """The index directory cannot be served as it is; ``problems`` name the files."""

    def __init__(self, directory: Path, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n  ".join(problems)
        super().__init__(
            f"index {directory} is damaged:\n  {lines}\n"
            f"nothing was changed. `oasis engine check {directory}` lists the problems; "
            f"`oasis engine repair {directory}` (or starting the engine with --recover) salvages every "
            "readable document into a new index and keeps the old files aside"
        )


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    segments: int = 0
    documents: int = 0  # live documents listed (TOC or record)
    unlisted: list[str] = field(default_factory=list)  # segment files no TOC lists (kept)

    @property
    def ok(self) -> bool:
        return not self.problems


def _digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=20)
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _segment_files(directory: Path) -> dict[str, list[str]]:
    """Segment id -> its file names, for every segment file in ``directory``."""
    out: dict[str, list[str]] = {}
    for name in sorted(os.listdir(directory)):
        m = _SEGMENT_FILE.match(name)
        if m and (directory / name).is_file():
            out.setdefault(m.group(1), []).append(name)
    return out


def _tocs(directory: Path) -> list[int]:
    return sorted(int(m.group(1)) for n in os.listdir(directory) if (m := _TOC.match(n)))


def holds_index(directory: Path) -> bool:
    """Whether ``directory`` holds any file of an engine's index: a table of contents, a segment file, the
    segment record or the write-ahead log (current or sealed). An index with no document has its first
    table of contents; a folder with none of these is not an index, damaged or whole."""
    for name in os.listdir(directory):
        if _TOC.match(name) or _SEGMENT_FILE.match(name) or name == RECORD_FILE or name.startswith(WAL_FILE):
            return True
    return False


def _read_record(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and isinstance(data.get("segments"), dict) else {}


def _storage(directory: Path) -> Any:
    from whoosh.filedb.filestore import FileStorage

    return FileStorage(str(directory))


def _read_toc(directory: Path) -> Any:
    from whoosh.index import TOC

    return TOC.read(_storage(directory), INDEX_NAME)


def record(directory: Path, toc: Any | None = None) -> None:
    """Write ``oasis-segments.json`` for the current TOC (digests of segments already recorded are reused:
    segment files never change once written)."""
    toc = toc if toc is not None else _read_toc(directory)
    previous = _read_record(directory).get("segments", {})
    files_of = _segment_files(directory)
    segments: dict[str, Any] = {}
    for seg in toc.segments:
        sid = seg.segment_id()
        known = previous.get(sid)
        files = {}
        for name in files_of.get(sid, []):
            path = directory / name
            size = path.stat().st_size
            old = known["files"].get(name) if known else None
            digest = old["blake2b"] if old and old["size"] == size else _digest(path)
            files[name] = {"size": size, "blake2b": digest}
        segments[sid] = {
            "files": files,
            "docs": seg.doc_count_all(),
            "deleted": sorted(seg.deleted_docs()) if seg.has_deletions() else [],
            "compound": bool(getattr(seg, "compound", False)),
        }
    # not fsynced (it costs a commit 9 ms): a record lost in a crash only makes the next open deep-read
    # the segments it lacks
    write_json_atomic(
        directory / RECORD_FILE, {"generation": toc.generation, "segments": segments}, durable=False
    )


def _open_reader(directory: Path, schema: Any, segment: Any) -> tuple[Any, str | None]:
    """(reader, None), or (None, error) when the segment cannot be opened. Whoosh leaves the segment's file
    open when that fails; it is closed here, quietly."""
    from whoosh.reading import SegmentReader

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            return SegmentReader(_storage(directory), schema, segment), None
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        gc.collect()
    return None, error


def _deep_check(directory: Path, schema: Any, segment: Any) -> str | None:
    """Read every stored document and every posting list of ``segment``; the first error, or None."""
    reader, error = _open_reader(directory, schema, segment)
    if reader is None:
        return error
    try:
        try:
            for docnum in range(segment.doc_count_all()):
                reader.stored_fields(docnum)
            for fieldname in reader.indexed_field_names():
                for term in reader.lexicon(fieldname):
                    reader.postings(fieldname, term).all_ids()
        finally:
            reader.close()
    except Exception as exc:  # any decoding error is the segment's damage
        return f"{type(exc).__name__}: {exc}"
    return None


def verify(directory: Path, *, deep: bool = False) -> Report:
    """Check ``directory`` (see the module docstring). ``deep`` also reads recorded segments in full."""
    directory = Path(directory)
    report = Report()
    files_of = _segment_files(directory)
    tocs = _tocs(directory)
    if not tocs:
        if files_of:
            sample = ", ".join(sorted(n for fs in files_of.values() for n in fs)[:5])
            report.problems.append(
                f"no table of contents (_{INDEX_NAME}_N.toc) but {len(files_of)} segment file(s): {sample}"
                " (opened as it is, the index would look empty and its first commit would delete them)"
            )
        return report
    toc_name = f"_{INDEX_NAME}_{tocs[-1]}.toc"
    try:
        toc = _read_toc(directory)
    except Exception as exc:
        report.problems.append(f"{toc_name}: unreadable table of contents ({type(exc).__name__}: {exc})")
        return report
    recorded = _read_record(directory).get("segments", {})
    listed = set()
    for seg in toc.segments:
        sid = seg.segment_id()
        listed.add(sid)
        report.segments += 1
        report.documents += seg.doc_count()
        names = files_of.get(sid, [])
        if not names:
            report.problems.append(f"{sid}.seg: listed in {toc_name} but missing")
            continue
        rec = recorded.get(sid)
        damaged = False
        if rec is not None:
            for name in names:
                want = rec["files"].get(name)
                path = directory / name
                if want is None:
                    continue
                size = path.stat().st_size
                if size != want["size"]:
                    report.problems.append(
                        f"{name}: {size} bytes, {want['size']} when committed (truncated or extended)"
                    )
                    damaged = True
                elif _digest(path) != want["blake2b"]:
                    report.problems.append(f"{name}: contents differ from the digest recorded at its commit")
                    damaged = True
        if (rec is None or deep) and not damaged:
            error = _deep_check(directory, toc.schema, seg)
            if error is not None:
                report.problems.append(f"{', '.join(names)}: unreadable segment ({error})")
    report.unlisted = sorted(n for sid, fs in files_of.items() if sid not in listed for n in fs)
    return report


def set_aside_unlisted(directory: Path, names: Iterable[str]) -> list[str]:
    """Move segment files no TOC lists into ``oasis-unlisted/`` (Whoosh would delete them)."""
    moved = []
    for name in names:
        target = Path(directory) / UNLISTED_DIR
        target.mkdir(exist_ok=True)
        os.replace(Path(directory) / name, target / name)
        moved.append(name)
    if moved:
        logger.warning(
            "%d segment file(s) not listed by the table of contents kept in %s: %s",
            len(moved),
            Path(directory) / UNLISTED_DIR,
            ", ".join(moved[:5]),
        )
    return moved


def remove_uncommitted(directory: Path, before: set[str]) -> list[str]:
    """After a failed commit: remove the segment and TOC files created since ``before`` that the current
    TOC does not list (they belong to the failed commit; nothing acknowledged is in them)."""
    directory = Path(directory)
    listed: set[str] = set()
    current_toc = ""
    with contextlib.suppress(Exception):
        toc = _read_toc(directory)
        listed = {s.segment_id() for s in toc.segments}
        current_toc = f"_{INDEX_NAME}_{toc.generation}.toc"
    removed = []
    for name in sorted(set(os.listdir(directory)) - before):
        m = _SEGMENT_FILE.match(name)
        stale_toc = _TOC.match(name) and name != current_toc
        if (m and m.group(1) not in listed) or stale_toc or name.endswith(".tmp"):
            with contextlib.suppress(FileNotFoundError):
                (directory / name).unlink()
                removed.append(name)
    if removed:
        logger.warning("removed %d file(s) of a failed commit: %s", len(removed), ", ".join(removed[:5]))
    return removed


@dataclass
class Salvage:
    documents: int = 0
    lost: int = 0  # stored documents that could not be read
    unreadable: list[str] = field(default_factory=list)  # segments that could not be opened
    kept_in: Path | None = None


def _live_segments(directory: Path) -> list[tuple[Any, set[int]]]:
    """(segment, deleted docnums) from the TOC if it is readable, else from ``oasis-segments.json``."""
    from whoosh.codec.whoosh3 import W3Codec, W3Segment

    with contextlib.suppress(Exception):
        toc = _read_toc(directory)
        return [(s, set(s.deleted_docs()) if s.has_deletions() else set()) for s in toc.segments]
    out = []
    for sid, rec in _read_record(directory).get("segments", {}).items():
        seg = W3Segment(W3Codec(), INDEX_NAME, doccount=int(rec["docs"]), segid=sid[len(INDEX_NAME) + 1 :])
        seg.compound = bool(rec.get("compound", True))
        out.append((seg, set(rec.get("deleted", []))))
    return out


def repair(directory: Path, schema: Any) -> Salvage:
    """Re-index every readable live document into a fresh index; the old files go to oasis-damaged-<time>/."""
    directory = Path(directory)
    salvage = Salvage()
    build = directory / ".oasis-repair"
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir()
    fresh = _storage(build).create_index(schema, indexname=INDEX_NAME)
    writer = fresh.writer()
    seen: set[str] = set()
    for seg, deleted in _live_segments(directory):
        reader, error = _open_reader(directory, schema, seg)
        if reader is None:
            salvage.unreadable.append(f"{seg.segment_id()}: {error}")
            continue
        try:
            for docnum in range(seg.doc_count_all()):
                if docnum in deleted:
                    continue
                try:
                    stored = dict(reader.stored_fields(docnum))
                except Exception:
                    salvage.lost += 1
                    continue
                url = stored.get("url")
                if not url or url in seen:
                    salvage.lost += not url
                    continue
                seen.add(url)
                writer.add_document(**stored)
                salvage.documents += 1
        finally:
            reader.close()
    writer.commit()
    fresh.close()
    kept = directory / f"{DAMAGED_PREFIX}{time.strftime('%Y%m%dT%H%M%S')}"
    kept.mkdir()
    for name in os.listdir(directory):
        if _SEGMENT_FILE.match(name) or _TOC.match(name) or name == RECORD_FILE:
            os.replace(directory / name, kept / name)
    for name in os.listdir(build):
        os.replace(build / name, directory / name)
    build.rmdir()
    os.sync()  # the moved and new files are durable before the engine serves them
    record(directory)
    salvage.kept_in = kept
    logger.warning(
        "repaired %s: %d documents salvaged, %d unreadable documents, %d unreadable segments, old files"
        " kept in %s",
        directory,
        salvage.documents,
        salvage.lost,
        len(salvage.unreadable),
        kept,
    )
    return salvage
