"""TopicIndex: one topic's Whoosh index (BM25F) keyed by canonical URL (pure domain: no grpc).

Writes arrive as batches of operations (:meth:`TopicIndex.apply`); a batch is applied entirely or not at
all, and is on disk when ``apply`` returns. An index on disk appends each batch to its write-ahead log
(:mod:`oasis.engine.wal`, fsync'd) and to an open Whoosh writer, which is committed every
``commit_seconds`` or ``commit_docs`` operations, before a read that must see the batch (searches, counts,
summaries: an acknowledged batch is visible to every later read), and at close; after a crash the log is
replayed on open. An index in memory commits each batch. Whoosh itself never calls fsync, so the storage
used here (:class:`DurableFileStorage`) fsyncs every file it closes before Whoosh renames the new table of
contents into place, and fsyncs the directory after the rename.

Recovery (``TopicIndex.open`` on a directory a killed engine left behind): the engine holds an ``flock`` on
``oasis-engine.lock`` for its lifetime (the kernel drops it when the process dies, even on kill -9), so a
second live engine on the same directory is refused with the owner's pid. Whoosh's ``MAIN_WRITELOCK`` is
an ``flock`` too; its file may be left behind but is not a held lock, and ``open`` verifies that it can be
taken. Writer scratch directories of dead writers are removed. Segments a killed writer wrote but never
listed in a committed table of contents are moved into ``oasis-unlisted/`` (never deleted: issue 15).

Integrity (:mod:`oasis.engine.integrity`): ``open`` refuses a directory whose table of contents is missing
or whose segments are truncated or altered (:class:`~oasis.engine.integrity.IndexDamaged`, naming the
files) unless ``recover=True``, which salvages every readable document first; each commit records its
segments' digests; a commit that fails removes the files it wrote.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import os
import pickle
import secrets
import shutil
import threading
import time
import zlib
from array import array
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from whoosh import collectors, scoring
from whoosh import query as wquery
from whoosh.codec.base import OutOfOrderError
from whoosh.codec.whoosh3 import WHOOSH3_HEADER_MAGIC, W3Codec, W3FieldWriter, W3TermInfo
from whoosh.fields import ID, STORED, TEXT, Schema
from whoosh.filedb.filestore import FileStorage, RamStorage, ReadOnlyError, Storage
from whoosh.filedb.structfile import StructFile
from whoosh.reading import distance
from whoosh.system import pack_int, pack_ushort
from whoosh.util.numeric import length_to_byte
from whoosh.util.numlists import delta_encode
from whoosh.writing import SegmentWriter

from oasis.engine import integrity
from oasis.engine import query as qlang
from oasis.engine.relevance import RelevanceModel, idf, idf_table
from oasis.engine.snippets import Snippeter, candidate_prefixes
from oasis.engine.topic import Topic
from oasis.engine.wal import WriteAheadLog
from oasis.runtime.bloom import BloomFilter
from oasis.runtime.files import FolderBusy, FolderLock
from oasis.runtime.text import FusedPositions, make_analyzer
from oasis.runtime.urls import InvalidURL, canonicalize

logger = logging.getLogger(__name__)

TITLE_BOOST = 2.0  # BM25F field boost of the title
OWNER_LOCK = "oasis-engine.lock"
WHOOSH_WRITELOCK = "MAIN_WRITELOCK"
TMP_PREFIX = ".oasis-tmp-"
MODEL_REFRESH = 0.25  # rebuild the relevance model's IDF when the collection grew or shrank by 25 %
COMMIT_SECONDS = 1.0  # an index on disk commits logged batches at least this often (and before reads)
COMMIT_DOCS = 2000  # ... or once this many operations are logged but not committed
# ... or once this many operations are written but not committed while fewer wait to be written, and the
# oldest has waited IDLE_COMMIT_FRACTION of commit_seconds (TopicIndex._caught_up): an engine that keeps up
# with its robot flushes small segments as it goes, so the commit a read waits for (the robot's last pages)
# flushes only what arrived since (issue 14)
IDLE_COMMIT_DOCS = 64
IDLE_COMMIT_FRACTION = 0.125
PARSED_QUERIES = 4096  # parsed queries an engine keeps (an LRU-free bounded cache: oldest out first)
IDLE_SEARCHERS = 8  # searchers kept open for the next searches (one per concurrent search, see _leased)


class InvalidQuery(ValueError):
    """A search query that is empty, too long, or has no searchable terms."""


class SearchTimeout(TimeoutError):
    """A search ran past its deadline and was stopped (the caller has stopped waiting)."""


class IndexBusy(RuntimeError):
    """Another live process owns the index directory."""


@dataclass(frozen=True, kw_only=True)
class IndexLimits:
    max_text_chars: int = 2_000_000
    max_title_chars: int = 2_000
    max_query_chars: int = 4_096
    max_limit: int = 1_000
    max_offset: int = 10_000
    max_search_seconds: float = 10.0  # a search without a (shorter) deadline stops after this long

    def __post_init__(self) -> None:
        for name in ("max_text_chars", "max_title_chars", "max_query_chars", "max_limit", "max_offset"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if not self.max_search_seconds > 0:
            raise ValueError("max_search_seconds must be > 0")


# --- operations ---------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Upsert:
    seq: int
    url: str  # canonical
    title: str
    text: str
    fetch_time: float
    relevance: float | None  # None: the engine scores the page with its topic model


@dataclass(frozen=True, kw_only=True)
class Delete:
    seq: int
    url: str  # canonical


@dataclass(frozen=True, kw_only=True)
class Rejected:
    seq: int
    url: str
    reason: str


Op = Upsert | Delete | Rejected


def host_allowed(url: str, allowed_hosts: frozenset[str]) -> bool:
    """True when no allow-list is set, or the URL's host (or host:port) is listed, or is a subdomain of
    a listed host."""
    if not allowed_hosts:
        return True
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host in allowed_hosts or parts.netloc.lower() in allowed_hosts:
        return True
    return any(host.endswith("." + h) for h in allowed_hosts)


def _checked_url(seq: int, url: str, allowed_hosts: frozenset[str]) -> str | Rejected:
    try:
        canon = canonicalize(url)
    except InvalidURL as exc:
        return Rejected(seq=seq, url=url[:300], reason=f"invalid URL: {exc}")
    if not host_allowed(canon, allowed_hosts):
        host = urlsplit(canon).netloc
        return Rejected(
            seq=seq,
            url=canon,
            reason=f"host {host!r} is not in --allowed-hosts ({', '.join(sorted(allowed_hosts))})",
        )
    return canon


def make_upsert(
    *,
    seq: int,
    url: str,
    title: str,
    text: str,
    fetch_time: float,
    relevance: float | None,
    limits: IndexLimits,
    allowed_hosts: frozenset[str] = frozenset(),
) -> Upsert | Rejected:
    """Validate one document; never raises for bad input, returns :class:`Rejected` with the reason."""
    checked = _checked_url(seq, url, allowed_hosts)
    if isinstance(checked, Rejected):
        return checked
    if len(text) > limits.max_text_chars:
        return Rejected(
            seq=seq, url=checked, reason=f"text has {len(text)} characters, limit {limits.max_text_chars}"
        )
    if len(title) > limits.max_title_chars:
        return Rejected(
            seq=seq, url=checked, reason=f"title has {len(title)} characters, limit {limits.max_title_chars}"
        )
    if not math.isfinite(fetch_time) or fetch_time < 0:
        return Rejected(
            seq=seq, url=checked, reason=f"fetch_time must be a finite time >= 0, got {fetch_time}"
        )
    if relevance is not None and not (math.isfinite(relevance) and 0.0 <= relevance <= 1.0):
        return Rejected(seq=seq, url=checked, reason=f"relevance must be in [0, 1], got {relevance}")
    return Upsert(seq=seq, url=checked, title=title, text=text, fetch_time=fetch_time, relevance=relevance)


def make_delete(*, seq: int, url: str) -> Delete | Rejected:
    checked = _checked_url(seq, url, frozenset())
    return checked if isinstance(checked, Rejected) else Delete(seq=seq, url=checked)


@dataclass(frozen=True, kw_only=True)
class CommitResult:
    acked_through: int
    added: int = 0
    replaced: int = 0
    deleted: int = 0
    rejected: tuple[Rejected, ...] = ()


# --- search results and statistics ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ListedDocument:
    url: str
    title: str
    fetch_time: float
    relevance: float


@dataclass(frozen=True, kw_only=True)
class Hit:
    url: str
    title: str
    snippet: str  # HTML-escaped text, matched terms in <b>...</b>
    score: float
    relevance: float
    fetch_time: float


@dataclass(frozen=True, kw_only=True)
class SearchPage:
    hits: tuple[Hit, ...]
    total: int
    max_score: float
    # the query with the words this index lacks corrected ("did you mean"; offered when nothing matched, or
    # when the search asked for it), or ""
    suggestion: str = ""
    suggestion_matches: int = 0  # the documents the suggestion matches
    unknown: tuple[str, ...] = ()  # the query's words (as indexed) this index holds under no field


@dataclass(frozen=True, kw_only=True)
class TermStat:
    term: str
    df: int
    cf: int


@dataclass(frozen=True, kw_only=True)
class Summary:
    topic: str
    documents: int
    total_terms: int
    terms: tuple[TermStat, ...]
    keywords: tuple[str, ...]
    term_filter: BloomFilter | None = None  # every term of the collection (terms lists the top ones)
    vocabulary: int = 0  # distinct terms in the collection


@dataclass(frozen=True, kw_only=True)
class IndexStats:
    documents: int
    last_commit: float
    index_bytes: int


@dataclass(frozen=True)
class _CollectionStats:
    generation: int
    documents: int
    total_terms: int
    df: Mapping[str, int]
    cf: Mapping[str, int]


# --- storage -------------------------------------------------------------------------------------------


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class PositionedFileIO(io.FileIO):
    """A file opened for writing from its start that counts its own position, so ``tell`` is no ``lseek``.

    Whoosh's segment writers ask for the position at every term and postings block (89,205 times to index
    400 PostgreSQL pages), and through a plain file each ask is an ``lseek`` that also gives up the GIL, which
    the engine's gRPC threads then take (py-spy during ``oasis bench crawl``: 6.8 % of the engine's samples
    in ``StructFile.tell``, issue 14). Wrapped in a ``BufferedWriter``, whose ``tell`` asks this one."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "w")
        self._position = 0

    def write(self, data: Any) -> int:
        written = super().write(data)
        self._position += written or 0
        return written or 0

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self._position = super().seek(offset, whence)
        return self._position

    def tell(self) -> int:
        return self._position


class _FieldLengths:
    """A new segment's per-document reader whose ``doc_field_length`` reads each field's lengths once.

    Flushing a segment, Whoosh asks for the length of the posting's field in its document at every posting
    (``FieldWriter.add_postings``), each time through the column reader and the length byte's decoding: 8 %
    of the engine's GIL time during ``oasis bench crawl`` (py-spy ``--gil``, issue 14). Here the answers
    are the reader's own, computed once per document and field."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._lengths: dict[tuple[str, Any], list[Any]] = {}

    def doc_field_length(self, docnum: int, fieldname: str, default: Any = 0) -> Any:
        lengths = self._lengths.get((fieldname, default))
        if lengths is None:
            read = self._reader.doc_field_length
            lengths = [read(d, fieldname, default) for d in range(self._reader.doc_count_all())]
            self._lengths[(fieldname, default)] = lengths
        return lengths[docnum]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)


COMPRESS_MIN_BYTES = 80  # a postings block whose pickle is shorter is stored uncompressed (see below)


class _FieldWriter(W3FieldWriter):
    """Whoosh 3's field writer whose ``add_postings`` (the segment flush: every posting of every term, in
    order) runs as one loop: Whoosh's ``FieldWriter.add_postings`` -> ``W3FieldWriter.start_term`` / ``add``
    / ``finish_term`` -> ``W3PostingsWriter.add_posting`` / ``finish_postings`` / ``_write_block`` -> ``
    W3TermInfo.add_block``, with the same checks and the same bytes: the postings and term files equal
    Whoosh's writer's byte for byte (tests/test_engine_index.py). The flush was 40 % of the engine's GIL
    time while crawling, the largest part of it Python calls per term and per posting (py-spy, issue 14).

    One difference, readable by every Whoosh: a block whose pickle is shorter than ``compress_min`` bytes
    is stored uncompressed (its block header says so, as Whoosh's reader expects of any block). zlib cannot
    shrink these (the 9,280 blocks of 60-80 bytes of 400 PostgreSQL pages grew from 688 kB to 697 kB) and
    each ``zlib.compress`` call sets up a whole deflate state; Whoosh's writer means to skip blocks under
    20 bytes but overwrites its own decision (``comp = 0`` then ``comp = self._compression``)."""

    compress_min = COMPRESS_MIN_BYTES

    def add_postings(
        self, schema: Any, lengths: Any, items: Iterable[tuple[str, bytes, int, float, Any]]
    ) -> None:
        codec = self._codec
        if type(codec) is not W3Codec or codec._inlinelimit > 1:
            return super().add_postings(schema, lengths, items)
        blocklimit, compression, compress_min = codec._blocklimit, codec._compression, self.compress_min
        postfile = self._postfile
        write, tell = postfile.write, postfile.tell
        tindex_add = self._tindex.add
        dfl = lengths.doc_field_length if lengths else None
        compress = zlib.compress

        lastfn: str | None = None
        lasttext: bytes | None = None
        fixedsize: int | None = None
        keyprefix = b""
        # the term being written: its info, where its postings start, its buffered block
        terminfo: Any = None
        startoffset = blockcount = 0
        ids: Any = None
        weights: Any = None
        values: list[bytes] = []
        minlength: int | None = None
        maxlength = 0
        maxweight: float = 0

        def write_block(last: bool) -> None:
            nonlocal blockcount, ids, weights, values, minlength, maxlength, maxweight
            if not blockcount:
                write(WHOOSH3_HEADER_MAGIC)
            # W3TermInfo.add_block
            ti = terminfo
            ti._weight += sum(weights)
            ti._df += len(ids)
            ti._minlength = minlength if ti._minlength is None else min(ti._minlength, minlength)
            ti._maxlength = max(ti._maxlength, maxlength)
            ti._maxweight = max(ti._maxweight, maxweight)
            if ti._minid is None:
                ti._minid = ids[0]
            ti._maxid = ids[-1]
            # W3PostingsWriter._mini_ids / _mini_weights / _mini_values
            mini_ids = tuple(delta_encode(ids))
            first = weights[0]
            if all(w == 1.0 for w in weights):
                mini_weights: Any = None
            elif all(w == first for w in weights):
                mini_weights = first
            else:
                mini_weights = tuple(weights)
            if fixedsize is None or fixedsize < 0:
                mini_values: Any = tuple(values)
            elif fixedsize == 0:
                mini_values = None
            else:
                mini_values = b"".join(values)
            databytes = pickle.dumps((mini_ids, mini_weights, mini_values), 2)
            comp = compression if len(databytes) >= compress_min else 0
            if comp:
                databytes = compress(databytes, comp)
            infobytes = pickle.dumps(
                (len(ids), ids[-1], maxweight, comp, length_to_byte(minlength), length_to_byte(maxlength)), 2
            )
            blocklength = len(infobytes) + len(databytes)
            write(pack_int(-blocklength if last else blocklength))
            write(infobytes)
            write(databytes)
            blockcount += 1
            ids, weights, values = array("I"), array("f"), []
            minlength, maxlength, maxweight = None, 0, 0

        def finish_term() -> None:
            if ids:
                write_block(True)
            terminfo.set_extent(startoffset, tell() - startoffset)
            assert lasttext is not None
            tindex_add(keyprefix + lasttext, terminfo.to_bytes())

        for fieldname, btext, docnum, weight, value in items:
            if lastfn is not None and fieldname < lastfn:
                raise OutOfOrderError(f"Field {lastfn!r} .. {fieldname!r}")
            if fieldname == lastfn and lasttext and btext < lasttext:
                raise OutOfOrderError(f"Term {lastfn}:{lasttext!r} .. {fieldname}:{btext!r}")
            if fieldname != lastfn:
                if lasttext is not None:
                    finish_term()
                if lastfn is not None:
                    self.finish_field()
                fieldobj = schema[fieldname]
                self.start_field(fieldname, fieldobj)
                fixedsize = fieldobj.format.fixed_value_size()
                keyprefix = pack_ushort(self._fieldid)
                lastfn = fieldname
                lasttext = None
            if docnum == -1:  # a spelling word, not a posting (Whoosh skips these too)
                continue
            if btext != lasttext:
                if lasttext is not None:
                    finish_term()
                self._btext = btext
                terminfo = W3TermInfo()
                blockcount = 0
                ids, weights, values = array("I"), array("f"), []
                minlength, maxlength, maxweight = None, 0, 0
                startoffset = tell()
                lasttext = btext
            length = dfl(docnum, fieldname) if dfl is not None else 0
            if len(ids) >= blocklimit:
                write_block(False)
            ids.append(docnum)
            weights.append(weight)
            if weight > maxweight:
                maxweight = weight
            if value:
                values.append(value)
            if length:
                if minlength is None or length < minlength:
                    minlength = length
                if length > maxlength:
                    maxlength = length
        if lasttext is not None:
            finish_term()
        if lastfn is not None:
            self.finish_field()
        return None


class _SegmentWriter(SegmentWriter):
    """Whoosh's writer, flushing with :class:`_FieldLengths` and :class:`_FieldWriter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if type(self.fieldwriter) is W3FieldWriter:
            # the same object, with the one-loop flush (the segment and its codec stay Whoosh's own, so
            # the table of contents names no Oasis class)
            self.fieldwriter.__class__ = _FieldWriter

    def per_document_reader(self) -> Any:
        return _FieldLengths(super().per_document_reader())


class DurableFileStorage(FileStorage):
    """FileStorage that fsyncs each file it closes and the directory after a rename, and keeps writer
    scratch space inside the index directory (Whoosh's default, ``$TMPDIR/MAIN.tmp``, is shared by every
    index named MAIN on the machine)."""

    def create_file(self, name: str, excl: bool = False, mode: str = "wb", **kwargs: Any) -> Any:
        previous: Callable[[Any], None] | None = kwargs.pop("onclose", None)

        def onclose(sf: Any) -> None:
            if previous is not None:
                previous(sf)
            sf.file.flush()
            os.fsync(sf.file.fileno())

        if excl or mode != "wb":
            return super().create_file(name, excl=excl, mode=mode, onclose=onclose, **kwargs)
        if self.readonly:
            raise ReadOnlyError
        fileobj = io.BufferedWriter(PositionedFileIO(os.path.abspath(os.path.join(self.folder, name))))
        return StructFile(fileobj, name=name, onclose=onclose, **kwargs)

    def rename_file(self, oldname: str, newname: str, safe: bool = False) -> None:
        super().rename_file(oldname, newname, safe=safe)
        _fsync_dir(self.folder)

    def temp_storage(self, name: str | None = None) -> FileStorage:
        # one scratch directory per process; writers are serialised by TopicIndex, and the directory is
        # removed after every commit (Whoosh destroys only some of its scratch storages)
        return FileStorage(str(self.scratch_dir())).create()

    def scratch_dir(self) -> Path:
        return Path(self.folder) / f"{TMP_PREFIX}{os.getpid()}"


def owner_lock(directory: Path) -> FolderLock:
    """The index directory's ``oasis-engine.lock`` (pid inside, for messages); released by the kernel when
    we die. :class:`IndexBusy` if another engine (or ``oasis-engine check|repair``) holds it."""
    try:
        return FolderLock(directory / OWNER_LOCK)
    except FolderBusy as exc:
        raise IndexBusy(
            f"index directory {directory} is in use by another engine (pid {exc.holder})"
        ) from None


def _recover_directory(directory: Path, storage: Storage, lock_timeout: float) -> None:
    """Run while holding the owner lock: clear what a dead engine left behind."""
    for entry in directory.iterdir():
        if entry.name.startswith(TMP_PREFIX) and entry.is_dir():
            logger.info("removing writer scratch left by a dead process: %s", entry)
            shutil.rmtree(entry, ignore_errors=True)
    lock = storage.lock(WHOOSH_WRITELOCK)
    deadline = time.monotonic() + lock_timeout
    while not lock.acquire(blocking=False):
        if time.monotonic() > deadline:
            raise IndexBusy(
                f"Whoosh write lock {directory / WHOOSH_WRITELOCK} is held by another live process"
            )
        time.sleep(0.05)
    lock.release()


def _text_field(field_boost: float = 1.0) -> TEXT:
    field = TEXT(stored=True, analyzer=make_analyzer(), field_boost=field_boost)
    field.format = FusedPositions(field_boost=field_boost)  # Whoosh's Positions, computed in one loop
    return field


def make_schema() -> Schema:
    return Schema(
        url=ID(stored=True, unique=True),
        title=_text_field(TITLE_BOOST),
        text=_text_field(),
        fetch_time=STORED,
        relevance=STORED,
    )


def _leaf_term_stats(leaf: Any) -> tuple[dict[str, int], dict[str, int]]:
    """(df, cf) of one segment's title and text terms: df the larger of the two fields, cf their sum."""
    df: dict[str, int] = {}
    cf: dict[str, int] = {}
    terms = getattr(leaf, "_terms", None)
    if terms is not None and hasattr(terms, "items"):  # whoosh3 codec: one pass over the term index
        items: Iterable[tuple[tuple[str, bytes], Any]] = terms.items()
    else:  # any other codec: the public (slower) API
        items = (((f, t), info) for f in ("text", "title") for t, info in leaf.iter_field(f))
    for (field, tbytes), info in items:
        if field not in ("text", "title"):
            continue
        t = tbytes.decode("utf-8") if isinstance(tbytes, bytes) else str(tbytes)
        d = int(info.doc_frequency())
        df[t] = max(df.get(t, 0), d)
        cf[t] = cf.get(t, 0) + int(info.weight())
    return df, cf


class _DeadlineCollector(collectors.WrappingCollector):
    """Stops collecting with :class:`SearchTimeout` once ``deadline`` (time.monotonic) has passed, or the
    index is closing (a draining engine never waits for a search to end)."""

    CHECK_EVERY = 256  # documents between clock reads

    def __init__(self, child: Any, deadline: float, closing: threading.Event) -> None:
        super().__init__(child)
        self.deadline = deadline
        self.closing = closing

    def collect_matches(self) -> None:
        child = self.child
        for n, docnum in enumerate(child.matches(), start=1):
            child.collect(docnum)
            if n % self.CHECK_EVERY == 0 and (time.monotonic() > self.deadline or self.closing.is_set()):
                raise SearchTimeout("search stopped at its deadline (or the engine is stopping)")
        if time.monotonic() > self.deadline:
            raise SearchTimeout("search stopped at its deadline")


SURFACE_DOCUMENTS = 5  # documents read for the written forms of a corrected word
SURFACE_CHARS = 32 * 1024  # characters read of each


def _surface(searcher: Any, term: str, typed: str) -> str | None:
    """A word of the collection that the analyser turns into ``term`` (a stem: ``connect`` for "connection"),
    lower-cased: of the forms the first :data:`SURFACE_DOCUMENTS` documents holding it write (in their first
    :data:`SURFACE_CHARS` characters), the one closest to ``typed`` (then the first); None if none."""
    postings = searcher.reader().postings("text", term)
    analyzer = searcher.schema["text"].analyzer
    forms: dict[str, None] = {}
    for _ in range(SURFACE_DOCUMENTS):
        if not postings.is_active():
            break
        text = str(searcher.stored_fields(postings.id()).get("text", ""))[:SURFACE_CHARS]
        for token in analyzer(text, keeporiginal=True, removestops=False):
            if token.text == term:
                forms.setdefault(str(token.original).lower())
        postings.next()
    return min(forms, key=lambda form: distance(form, typed), default=None)


def _use_union_trees(q: wquery.Query) -> None:
    """Make every ``Or`` in ``q`` use a tree of union matchers. Whoosh picks an array matcher for indexes
    under 5,000 documents, which fills and clears a 2,048-slot array in Python per segment per query: 58 %
    of the matching time of a 300-page index (profiled; same hits, measured in tests)."""
    if isinstance(q, wquery.Or):
        q.matcher_type = wquery.Or.DEFAULT_MATCHER
    if not q.is_leaf():
        for child in q.children():
            _use_union_trees(child)


def _top_collector(limit: int) -> Any:
    """The top ``limit`` hits and the exact number of matches in one pass: without block-quality skipping
    (with it, ``len(results)`` runs the query a second time) and without matcher replacement (which drops
    sub-matchers below the heap's minimum score, and with them matches from the count)."""
    return collectors.TopCollector(limit=limit, usequality=False, replace=0)


# --- the index -----------------------------------------------------------------------------------------


class TopicIndex:
    """Thread-safe wrapper: one writer at a time, searches on a shared searcher refreshed after commits."""

    def __init__(
        self,
        ix: Any,
        topic: Topic,
        *,
        folder: Path | None = None,
        owner: FolderLock | None = None,
        limits: IndexLimits | None = None,
        limitmb: int = 256,
        clock: Callable[[], float] = time.time,
        stats_max_age: float = 2.0,
        snippet_chars: int = 240,
        wal: WriteAheadLog | None = None,
        commit_seconds: float = COMMIT_SECONDS,
        commit_docs: int = COMMIT_DOCS,
        idle_commit_docs: int = IDLE_COMMIT_DOCS,
    ) -> None:
        self.topic = topic
        self.limits = limits or IndexLimits()
        self._ix = ix
        self._folder = folder
        self._owner = owner
        self._limitmb = limitmb
        self._clock = clock
        self._stats_max_age = stats_max_age
        self._weighting = scoring.BM25F(B=0.75, K1=1.2)
        self._parser = qlang.make_parser(ix.schema, ["title", "text"])
        self._parsed: dict[str, wquery.Query] = {}  # query string -> parsed and checked
        self._parsed_lock = threading.Lock()
        self._snippeter = Snippeter(maxchars=snippet_chars, surround=60, top=2)
        self._write_lock = threading.Lock()
        self._read_lock = threading.RLock()
        self._closing = threading.Event()  # set by close(): running searches stop
        self._searcher = ix.searcher(weighting=self._weighting)  # for reads under the read lock only
        # Searches run on searchers of their own (:meth:`_leased`): a Whoosh reader's files are shared
        # objects read by seek + read, so two threads on one searcher read each other's positions (corrupt
        # postings and stored fields: "invalid load key", "Error -5 while decompressing data").
        self._idle: list[Any] = []  # searchers of the current generation no search is using
        self._commit_lock = threading.Lock()  # a commit (which deletes merged segments' files) or an open
        self._generation = 0
        self._last_commit = self._toc_time()
        self._stats: _CollectionStats | None = None
        self._filter: tuple[_CollectionStats, BloomFilter] | None = None
        self._segment_stats: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
        self._stats_time = -math.inf
        self._closed = False
        self._model_lock = threading.Lock()
        self._model_stale = False
        self._instance = secrets.token_hex(4)  # names this opening's model builds (``RelevanceModel.build``)
        self._builds = 0
        self._model = self._build_model(self._collection_stats(force=True))
        # the write-ahead log, and the applier thread that moves logged batches into Whoosh commits
        self._wal = wal
        self._commit_seconds = commit_seconds
        self._commit_docs = commit_docs
        self._idle_commit_docs = idle_commit_docs
        self._writer_before: set[str] = set()  # the directory's files when the last writer was opened
        self._cv = threading.Condition(self._write_lock)  # guards everything below
        self._queue: deque[tuple[int, list[str], dict[str, dict[str, Any]]]] = deque()  # logged, unapplied
        self._queued_ops = 0
        self._oldest: float | None = None  # when the oldest queued batch was logged
        self._logged = 0  # number of the last batch logged
        self._committed = 0  # every batch up to this number is in a finished commit
        self._pending: dict[str, tuple[bool, int]] = {}  # URL -> (upserted, batch) not yet committed
        self._refresh_wanted = False
        self._apply_error: BaseException | None = None
        self._applier: threading.Thread | None = None
        if wal is not None:
            self._replay()
            self._applier = threading.Thread(target=self._apply_loop, name="index-applier", daemon=True)
            self._applier.start()

    # construction

    @classmethod
    def open(
        cls, directory: Path, topic: Topic, *, lock_timeout: float = 5.0, recover: bool = False, **kwargs: Any
    ) -> TopicIndex:
        """Open (or create) the index in ``directory``, recovering from a killed engine.

        Raises :class:`~oasis.engine.integrity.IndexDamaged` on a damaged index unless ``recover``, which
        repairs it (salvaging what is readable) before opening."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        owner = owner_lock(directory)
        try:
            storage = DurableFileStorage(str(directory))
            _recover_directory(directory, storage, lock_timeout)
            report = integrity.verify(directory)
            if not report.ok:
                if not recover:
                    raise integrity.IndexDamaged(directory, report.problems)
                integrity.repair(directory, make_schema())
                report = integrity.verify(directory)
            integrity.set_aside_unlisted(directory, report.unlisted)
            if storage.index_exists():
                ix = storage.open_index()
                missing = {"url", "title", "text"} - set(ix.schema.names())
                if missing:
                    raise ValueError(f"{directory} holds a Whoosh index without fields {sorted(missing)}")
            else:
                ix = storage.create_index(make_schema())
            integrity.record(directory)
            wal = WriteAheadLog(directory)
            try:
                index = cls(ix, topic, folder=directory, owner=owner, wal=wal, **kwargs)
            except BaseException:
                wal.close()
                raise
        except BaseException:
            owner.release()
            raise
        logger.info("opened index %s: %d documents", directory, index.stats().documents)
        return index

    @classmethod
    def in_memory(cls, topic: Topic, **kwargs: Any) -> TopicIndex:
        return cls(RamStorage().create_index(make_schema()), topic, **kwargs)

    def close(self) -> None:
        """Commit what is logged (the applier's last cycle), then close; a failure leaves it in the log."""
        self._closing.set()
        if self._applier is not None and self._applier is not threading.current_thread():
            with self._cv:
                self._cv.notify_all()
            self._applier.join(timeout=120)
        with self._write_lock, self._read_lock:
            if self._closed:
                return
            self._closed = True
            if self._wal is not None:
                self._wal.close()
            self._searcher.close()
            for searcher in self._idle:
                searcher.close()
            self._idle = []
            self._ix.close()
            if self._owner is not None:
                self._owner.release()

    # writing

    def apply(self, ops: Sequence[Op]) -> CommitResult:
        """Apply a batch atomically (durable on return) and report what happened.

        Within a batch the last operation on a URL wins. An upsert of a URL already in the index replaces it;
        a delete of a URL not in the index is a no-op. Rejected operations are passed through untouched.
        """
        if not ops:
            raise ValueError("empty batch")
        rejected = tuple(op for op in ops if isinstance(op, Rejected))
        final: dict[str, Upsert | Delete] = {}
        for op in ops:
            if not isinstance(op, Rejected):
                final.pop(op.url, None)  # keep the order of last occurrence
                final[op.url] = op
        docs: dict[str, dict[str, Any]] = {}
        for op in final.values():
            if isinstance(op, Upsert):
                r = (
                    op.relevance
                    if op.relevance is not None
                    else self.relevance_model().score(op.title, op.text)
                )
                docs[op.url] = {
                    "url": op.url,
                    "title": op.title,
                    "text": op.text,
                    "fetch_time": op.fetch_time,
                    "relevance": r,
                }
        acked = max(op.seq for op in ops)
        if not final:
            return CommitResult(acked_through=acked, rejected=rejected)
        with self._write_lock:
            self._check_open()
            if self._wal is None:
                added, replaced, deleted = self._commit_batch(final, docs)
            else:
                added, replaced, deleted = self._log_batch(final, docs)
        return CommitResult(
            acked_through=acked, added=added, replaced=replaced, deleted=deleted, rejected=rejected
        )

    @staticmethod
    def _write(
        writer: Any, searcher: Any, urls: Iterable[str], docs: Mapping[str, dict[str, Any]]
    ) -> tuple[int, int, int]:
        """Delete each URL from ``writer``'s committed documents, add ``docs``: (added, replaced, deleted)."""
        added = replaced = deleted = 0
        for url in urls:
            existed = writer.delete_by_term("url", url, searcher=searcher) > 0
            if url not in docs:
                deleted += int(existed)
            elif existed:
                replaced += 1
            else:
                added += 1
        for doc in docs.values():
            writer.add_document(**doc)
        return added, replaced, deleted

    def _new_writer(self) -> Any:
        self._writer_before = set(os.listdir(self._folder)) if self._folder is not None else set()
        return _SegmentWriter(self._ix, limitmb=self._limitmb)

    def _commit_writer(self, writer: Any) -> None:
        """Commit ``writer`` (durable on return) and refresh the searcher; on failure cancel it, remove the
        files the failed commit wrote, and re-raise (call with the write lock)."""
        with self._commit_lock:
            started = time.perf_counter()
            try:
                docs = writer.doc_count()
                writer.commit()
                if self._folder is not None:
                    integrity.record(self._folder)
                logger.debug("committed %d documents in %.3f s", docs, time.perf_counter() - started)
            except BaseException:
                with contextlib.suppress(Exception):
                    writer.cancel()
                if self._folder is not None:
                    integrity.remove_uncommitted(self._folder, self._writer_before)
                raise
            finally:
                self._remove_scratch()
            self._after_commit()

    def _commit_batch(
        self, final: Mapping[str, Upsert | Delete], docs: Mapping[str, dict[str, Any]]
    ) -> tuple[int, int, int]:
        """One batch, one Whoosh commit (an index without a write-ahead log)."""
        writer = self._new_writer()
        try:
            with writer.searcher() as s:
                counts = self._write(writer, s, final, docs)
        except BaseException:
            with contextlib.suppress(Exception):
                writer.cancel()
            self._remove_scratch()
            raise
        self._commit_writer(writer)
        return counts

    def _log_batch(
        self, final: Mapping[str, Upsert | Delete], docs: Mapping[str, dict[str, Any]]
    ) -> tuple[int, int, int]:
        """Append the batch to the write-ahead log (durable) and queue it for the applier (call with the write
        lock). The counts come from the batches logged before it and the last commit."""
        assert self._wal is not None
        if self._apply_error is not None and self._closing.is_set():
            raise RuntimeError(f"the index could not commit: {self._apply_error}")
        added = replaced = deleted = 0
        with self._read_lock:
            searcher = self._searcher
            for url in final:
                pending = self._pending.get(url)
                existed = pending[0] if pending is not None else searcher.document_number(url=url) is not None
                if url not in docs:
                    deleted += int(existed)
                elif existed:
                    replaced += 1
                else:
                    added += 1
        entries: list[Any] = [
            ["u", *(docs[url][f] for f in ("url", "title", "text", "fetch_time", "relevance"))]
            if url in docs
            else ["d", url]
            for url in final
        ]
        self._wal.append(entries)
        self._logged += 1
        for url in final:
            self._pending[url] = (url in docs, self._logged)
        self._queue.append((self._logged, list(final), dict(docs)))
        self._queued_ops += len(final)
        if self._oldest is None:
            self._oldest = time.monotonic()
        self._cv.notify_all()
        return added, replaced, deleted

    def _apply_loop(self) -> None:
        """The applier: write each logged batch into an open Whoosh writer as soon as it is logged (outside
        the lock: appends go on meanwhile), so analysing and adding documents keeps pace with the appends
        instead of waiting for the commit; commit when a read waits for it, ``commit_docs`` operations are
        logged but not committed, the oldest of them has waited ``commit_seconds``, the applier has caught up
        (:meth:`_caught_up`), or the index is closing.
        Before a commit the log file holding every batch written so far is sealed; it is dropped after."""
        assert self._wal is not None
        batches = _BatchWriter(self)
        written_through = self._committed  # the last batch written into the open writer
        while True:
            with self._cv:
                while True:
                    closing = self._closing.is_set()
                    due = (bool(self._queue) or batches.open) and (
                        closing
                        or self._refresh_wanted
                        or self._queued_ops >= self._commit_docs
                        or time.monotonic() - (self._oldest or 0.0) >= self._commit_seconds
                        or self._caught_up()
                    )
                    if due or self._queue:
                        break
                    if closing:
                        return
                    self._cv.wait(timeout=min(0.25, self._commit_seconds * IDLE_COMMIT_FRACTION))
                taken = list(self._queue)
                self._queue.clear()
                sealed = None
                if due:
                    self._queued_ops = 0
                    self._oldest = None
                    self._refresh_wanted = False
                    sealed = self._wal.rotate()
            try:
                for number, urls, docs in taken:
                    batches.write(urls, docs)
                    written_through = number
                if due:
                    batches.commit()
            except Exception as exc:
                batches.cancel()
                logger.exception("writing or committing logged batches failed; replaying the log")
                with self._cv:
                    self._apply_error = exc
                    self._cv.notify_all()
                if not self._recover_loop():
                    return
                written_through = self._committed
                continue
            if due:
                with self._cv:
                    self._wal.drop(sealed)
                    self._done_through(written_through)

    def _caught_up(self) -> bool:
        """True when at least ``idle_commit_docs`` operations are written but not committed, fewer than that
        wait to be written (the applier keeps up), and the oldest has waited ``IDLE_COMMIT_FRACTION`` of
        ``commit_seconds`` (call with the lock). A trickle of small batches (a robot) is then committed in
        segments of about ``idle_commit_docs``, each flushed while the next batches arrive; a bulk load,
        whose batches queue up, keeps committing every ``commit_seconds`` or ``commit_docs``."""
        backlog = sum(len(urls) for _, urls, _ in self._queue)
        return (
            self._queued_ops - backlog >= self._idle_commit_docs
            and backlog < self._idle_commit_docs
            and time.monotonic() - (self._oldest or 0.0) >= IDLE_COMMIT_FRACTION * self._commit_seconds
        )

    def _done_through(self, last: int) -> None:
        """Every batch up to ``last`` is committed (call with the lock): wake the readers waiting for it."""
        self._committed = max(self._committed, last)
        for url in [u for u, (_, n) in self._pending.items() if n <= last]:
            del self._pending[url]
        self._apply_error = None
        self._cv.notify_all()

    def _recover_loop(self) -> bool:
        """After a failed commit: replay the whole log (it holds every batch not committed) until it works or
        the index closes; False when closing gave up."""
        assert self._wal is not None
        delay = 0.1
        while True:
            try:
                with self._cv:
                    self._queue.clear()  # the log holds them all
                    self._queued_ops = 0
                    self._oldest = None
                    last = self._logged
                    self._wal.rotate()
                    sealed = self._wal.sealed()  # every batch up to ``last``; later appends go to a new file
                self._replay(sealed)
                with self._cv:
                    self._done_through(last)
                return True
            except Exception as exc:
                logger.exception("replaying the write-ahead log failed; retrying in %.1f s", delay)
                with self._cv:
                    self._apply_error = exc
                    self._cv.notify_all()
                if self._closing.wait(delay):
                    return False
                delay = min(delay * 2, 5.0)

    def _write_batches(self, batches: Sequence[tuple[Iterable[str], Mapping[str, dict[str, Any]]]]) -> None:
        """Write batches in order with one Whoosh writer (:class:`_BatchWriter`) and commit them."""
        writer = _BatchWriter(self)
        try:
            for urls, docs in batches:
                writer.write(urls, docs)
            writer.commit()
        finally:
            writer.cancel()  # a no-op once committed

    def _replay(self, sealed: list[Path] | None = None) -> None:
        """Apply every batch of the write-ahead log in one commit, then drop what was applied: at open the
        whole log (then emptied); after a failed commit the ``sealed`` files only, since batches appended
        while they are replayed (acknowledged, in the current file) are not in them and must stay logged.
        Replaying is idempotent: batches already committed are applied again unchanged."""
        assert self._wal is not None
        batches = self._wal.replay(sealed)
        final: dict[str, dict[str, Any] | None] = {}  # URL -> document, or None for a delete; last wins
        for batch in batches:
            for entry in batch:
                if entry[0] == "u":
                    url, title, text, fetch_time, relevance = entry[1:6]
                    final.pop(url, None)
                    final[url] = dict(
                        url=url, title=title, text=text, fetch_time=fetch_time, relevance=relevance
                    )
                elif entry[0] == "d":
                    final.pop(entry[1], None)
                    final[entry[1]] = None
        if final:
            self._write_batches([(list(final), {u: d for u, d in final.items() if d is not None})])
            logger.info("replayed %d batch(es), %d URL(s) from the write-ahead log", len(batches), len(final))
        with self._cv:
            if sealed is None:
                self._wal.reset()
            else:
                self._wal.drop_all(sealed)

    def _refresh(self) -> None:
        """Wait until every batch logged before this call is committed: a read sees every acknowledged one."""
        if self._wal is None or self._committed >= self._logged:
            return
        with self._cv:
            target = self._logged
            self._refresh_wanted = True
            self._cv.notify_all()
            while self._committed < target:
                self._check_open()
                if self._apply_error is not None:  # the applier is replaying the log: fail, never hang
                    raise RuntimeError(f"the index could not commit: {self._apply_error}")
                self._cv.wait(timeout=0.5)

    def delete_urls(self, urls: Iterable[str]) -> int:
        """Delete documents by URL (canonicalised); returns how many existed. Raises InvalidURL."""
        ops = [Delete(seq=i, url=canonicalize(u)) for i, u in enumerate(urls)]
        return self.apply(ops).deleted if ops else 0

    def _after_commit(self) -> None:
        with self._read_lock:
            old = self._searcher
            self._searcher = self._ix.searcher(weighting=self._weighting)
            old.close()  # read only under this lock: no search holds it
            self._generation += 1
            stale, self._idle = self._idle, []
            for searcher in stale:
                searcher.close()
            self._last_commit = self._clock()
            documents = self._searcher.doc_count()
        n_model = self._model.n_docs
        if documents != n_model and (n_model < 100 or abs(documents - n_model) >= MODEL_REFRESH * n_model):
            self._model_stale = True  # rebuilt when next needed, so a pure indexing load never pays for it

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("index is closed")

    # reading

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
        timeout: float | None = None,
        suggest: bool = False,
    ) -> SearchPage:
        """Ranked hits (BM25F, title boosted) ``offset .. offset+limit`` and the total number of matches, with
        the words of the query the index lacks, and their correction ("did you mean") when nothing matched or
        ``suggest`` asks for it.

        The search runs on a searcher leased outside every lock (a commit or ``stats`` never waits for it)
        and stops with :class:`SearchTimeout` after ``timeout`` seconds (at most
        ``limits.max_search_seconds``).
        """
        q = self.parse_query(query)
        self._refresh()
        if not 1 <= limit <= self.limits.max_limit:
            raise InvalidQuery(f"limit must be in [1, {self.limits.max_limit}], got {limit}")
        if not 0 <= offset <= self.limits.max_offset:
            raise InvalidQuery(f"offset must be in [0, {self.limits.max_offset}], got {offset}")
        seconds = min(timeout if timeout is not None else math.inf, self.limits.max_search_seconds)
        deadline = time.monotonic() + seconds
        with self._leased() as searcher:
            results = self._search_until(searcher, q, offset + limit, deadline)
            total = len(results)
            max_score = float(results.top_n[0][0]) if results.top_n else 0.0
            terms = frozenset(
                t.decode("utf-8") if isinstance(t, bytes) else str(t)
                for _f, t in results.query_terms(expand=True, fieldname="text")
            )
            prefixes = candidate_prefixes(terms)
            hits = []
            for hit in results[offset : offset + limit]:
                stored = hit.fields()
                text = stored.get("text", "")
                snippet = self._snippeter.snippet(text, terms, prefixes)
                hits.append(
                    Hit(
                        url=stored["url"],
                        title=stored.get("title", ""),
                        snippet=snippet,
                        score=float(hit.score),
                        relevance=float(stored.get("relevance", 0.0)),
                        fetch_time=float(stored.get("fetch_time", 0.0)),
                    )
                )
            suggestion, suggested = None, 0
            reader = searcher.reader()
            unknown = qlang.unknown_words(q, reader)
            # a query that matched nothing; or, asked, one whose other words matched ("gradient bosting" finds
            # "gradient" pages): a word one engine lacks is often another's, so the broker asks only when
            # every engine lacks it (a correction costs 13-33 ms on real docs, more than most searches)
            if unknown and (total == 0 or suggest):
                suggestion = qlang.suggestion(
                    q, query, reader, lambda t, typed: _surface(searcher, t, typed), deadline
                )
                if suggestion is not None:
                    try:  # how much it finds here: the broker keeps the suggestion that finds most
                        # (uncached: the suggestion evicts no query a user typed from the parse cache)
                        found = self._search_until(searcher, self._parse_query(suggestion), 1, deadline)
                        suggested = len(found)
                    except (InvalidQuery, SearchTimeout):  # (out of time: the answer goes without it)
                        suggestion, suggested = None, 0
        return SearchPage(
            hits=tuple(hits),
            total=total,
            max_score=max_score,
            suggestion=suggestion or "",
            suggestion_matches=suggested,
            unknown=unknown,
        )

    def parse_query(self, query: str) -> wquery.Query:
        """The checked Whoosh query of ``query`` (:class:`InvalidQuery` when refused), from a bounded cache of
        recent queries: parsing costs ~0.4 ms, which every engine a broker asks pays again (issue 14). The
        cached tree is shared, never changed (expansion and matcher choice work on a copy: ``bounded``)."""
        q = self._parsed.get(query)
        if q is None:
            q = self._parse_query(query)
            with self._parsed_lock:
                if len(self._parsed) >= PARSED_QUERIES:
                    self._parsed.pop(next(iter(self._parsed)))  # the oldest
                self._parsed[query] = q
        return q

    def _parse_query(self, query: str) -> wquery.Query:
        if not query or not query.strip():
            raise InvalidQuery("query is empty")
        if len(query) > self.limits.max_query_chars:
            raise InvalidQuery(f"query has {len(query)} characters, limit {self.limits.max_query_chars}")
        try:
            q = qlang.exclusions(self._parser.parse(query))
        except NotImplementedError as exc:  # Whoosh's "Minus": a group of -words and nothing else
            raise InvalidQuery(
                "a group of -words alone excludes from nothing: put each -word beside the words it "
                "excludes from (socket -tcp, not socket (-tcp))"
            ) from exc
        except Exception as exc:  # the parser is forgiving; anything it raises is the query's fault
            raise InvalidQuery(f"cannot parse query {query[:100]!r}: {exc}") from exc
        if isinstance(q, type(wquery.NullQuery)):
            if qlang.EXCLUDED_WORD.search(query):  # "-socket": excluded words and nothing else
                raise InvalidQuery("a query needs at least one word that is not negated")
            raise InvalidQuery(
                f"query {query[:100]!r} has no searchable terms (only stop words or operators)"
            )
        try:
            qlang.check(q)
        except qlang.QueryRefused as exc:
            raise InvalidQuery(str(exc)) from exc
        return q

    @contextlib.contextmanager
    def _leased(self) -> Iterator[Any]:
        """A searcher of the current index for this search alone (no other thread reads through it while it
        runs), kept open until released even if a commit replaces the index meanwhile; returned to the idle
        pool if the index is unchanged, closed otherwise."""
        with self._read_lock:
            self._check_open()
            generation = self._generation
            searcher = self._idle.pop() if self._idle else None
        if searcher is None:
            with self._commit_lock, self._read_lock:  # no commit deletes files while they are opened
                self._check_open()
                generation = self._generation
                searcher = self._ix.searcher(weighting=self._weighting)
        try:
            yield searcher
        finally:
            with self._read_lock:
                if generation == self._generation and not self._closed and len(self._idle) < IDLE_SEARCHERS:
                    self._idle.append(searcher)
                    searcher = None
            if searcher is not None:
                searcher.close()

    def _search_until(self, searcher: Any, q: wquery.Query, limit: int, deadline: float) -> Any:
        try:
            q = qlang.bounded(q, searcher.reader())
        except qlang.QueryRefused as exc:
            raise InvalidQuery(str(exc)) from exc
        _use_union_trees(q)
        collector = _DeadlineCollector(_top_collector(limit), deadline, self._closing)
        searcher.search_with_collector(q, collector)
        return collector.results()

    def contains(self, url: str) -> bool:
        self._refresh()
        with self._read_lock:
            return self._searcher.document_number(url=canonicalize(url)) is not None

    def document(self, url: str) -> dict[str, Any] | None:
        self._refresh()
        with self._read_lock:
            doc = self._searcher.document(url=canonicalize(url))
            return dict(doc) if doc is not None else None

    def documents(self, limit: int = 0) -> Generator[dict[str, Any], None, None]:
        """The stored fields of every document (at most ``limit``; 0: all) from a reader of the index as it is
        now: commits made while the caller iterates are not seen. The reader is closed when the iteration
        ends or the generator is closed."""
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        self._refresh()
        with self._commit_lock, self._read_lock:  # as in _leased: no commit deletes files while they open
            self._check_open()
            reader = self._ix.reader()
        try:
            for n, (_docnum, stored) in enumerate(reader.iter_docs(), start=1):
                yield dict(stored)
                if n == limit:
                    break
        finally:
            reader.close()

    def list_documents(self, *, after: str = "", limit: int = 1000) -> tuple[list[ListedDocument], bool]:
        """Documents with URL > ``after`` in URL order, at most ``limit``, and whether more follow."""
        stored = [
            ListedDocument(
                url=str(d["url"]),
                title=str(d.get("title", "")),
                fetch_time=float(d.get("fetch_time") or 0.0),
                relevance=float(d.get("relevance") or 0.0),
            )
            for d in self.documents()
            if str(d["url"]) > after
        ]
        stored.sort(key=lambda d: d.url)
        return stored[:limit], len(stored) > limit

    def relevance_model(self) -> RelevanceModel:
        """The topic model with IDF from this collection (refreshed when it changed size by 25 %)."""
        if self._model_stale:
            with self._model_lock:
                if self._model_stale:
                    self._model = self._build_model(self._collection_stats(force=True))
                    self._model_stale = False
        return self._model

    def score(self, pages: Iterable[tuple[str, str]]) -> list[float]:
        """r(i) for (title, text) pages with the current collection statistics. Each text's analysis is kept
        for indexing the same text soon after (a robot scores a page, then indexes it)."""
        return self.score_with_model(pages)[0]

    def score_with_model(self, pages: Iterable[tuple[str, str]]) -> tuple[list[float], RelevanceModel]:
        """:meth:`score`, and the model that scored them all (its ``build`` names it: the same build, the
        same score for the same text)."""
        model = self.relevance_model()
        return [model.score(title, text, remember=True) for title, text in pages], model

    def stats(self) -> IndexStats:
        self._refresh()
        with self._read_lock:
            documents = self._searcher.doc_count()
        return IndexStats(documents=documents, last_commit=self._last_commit, index_bytes=self._index_bytes())

    @property
    def generation(self) -> int:
        """Number of commits since open (changes whenever the collection may have changed)."""
        return self._generation

    def summary(self, max_terms: int = 500) -> Summary:
        """Collection size, length in tokens, and the ``max_terms`` most useful terms with df and cf.

        Usefulness for resource selection: the topic profile's terms first (the directory must see
        them), then the terms in the most documents (CORI ranks collections by df), ties by cf.
        """
        if max_terms < 0:
            raise ValueError(f"max_terms must be >= 0, got {max_terms}")
        self._refresh()
        model = self.relevance_model()
        stats = self._collection_stats(force=False)
        profile = [t for t in model.profile_terms if t in stats.df]
        rest = sorted(
            (t for t in stats.df if t not in model.profile),
            key=lambda t: (-stats.df[t], -stats.cf[t], t),
        )
        chosen = (profile + rest)[:max_terms]
        return Summary(
            topic=self.topic.name,
            documents=stats.documents,
            total_terms=stats.total_terms,
            terms=tuple(TermStat(term=t, df=stats.df[t], cf=stats.cf[t]) for t in chosen),
            keywords=self.topic.keywords,
            term_filter=self._term_filter(stats),
            vocabulary=len(stats.df),
        )

    def _term_filter(self, stats: _CollectionStats) -> BloomFilter:
        """A Bloom filter of every term, so routing never mistakes a term cut from the summary for an
        absent one (issue 15, item 7); built once per collection statistics."""
        cached = self._filter
        if cached is not None and cached[0] is stats:
            return cached[1]
        built = BloomFilter.build(stats.df, len(stats.df))
        self._filter = (stats, built)
        return built

    # internals

    def _collection_stats(self, *, force: bool) -> _CollectionStats:
        """Term statistics of the title and text fields (df: the larger of the two, cf: the sum), cached
        per commit and recomputed at most every ``stats_max_age`` seconds unless forced.

        Whoosh segments are immutable, so each segment's term table is read once (one pass over its term
        index) and cached by segment id; a commit costs a read of its new segment (and of any merged one).
        Like Whoosh's own df, counts include deleted documents until their segment is merged away.
        """
        cached = self._stats
        now = time.monotonic()
        if cached is not None and (
            cached.generation == self._generation
            or (not force and now - self._stats_time < self._stats_max_age)
        ):
            return cached
        with self._read_lock:
            reader = self._searcher.reader()
            generation = self._generation
            documents = reader.doc_count()
            total = int(reader.field_length("text")) + int(reader.field_length("title"))
            per_segment: dict[str, tuple[dict[str, int], dict[str, int]]] = {}
            uncached: list[tuple[dict[str, int], dict[str, int]]] = []
            for leaf, _base in reader.leaf_readers():
                segment = leaf.segment() if hasattr(leaf, "segment") else None
                if segment is None:  # an empty or non-segment reader: nothing stable to cache by
                    uncached.append(_leaf_term_stats(leaf))
                    continue
                key = segment.segment_id()
                per_segment[key] = self._segment_stats.get(key) or _leaf_term_stats(leaf)
            self._segment_stats = per_segment  # drops segments merged away
        df: dict[str, int] = {}
        cf: dict[str, int] = {}
        for seg_df, seg_cf in [*per_segment.values(), *uncached]:
            for t, d in seg_df.items():
                df[t] = df.get(t, 0) + d
            for t, c in seg_cf.items():
                cf[t] = cf.get(t, 0) + c
        stats = _CollectionStats(generation, documents, total, df, cf)
        self._stats = stats
        self._stats_time = now
        return stats

    def _build_model(self, stats: _CollectionStats) -> RelevanceModel:
        """The topic model with IDF from ``stats``, named by this opening's instance token and a build count
        (a rebuild at a collection size seen before is another model: the IDF may differ)."""
        n = stats.documents
        table = idf_table(n, stats.df) if n > 0 else None
        self._builds += 1
        model = RelevanceModel.from_topic(
            self.topic, table, default_idf=idf(n, 0) if n > 0 else None, n_docs=n
        )
        return replace(model, build=f"{self._instance}.{self._builds}")

    def _remove_scratch(self) -> None:
        storage = self._ix.storage
        if isinstance(storage, DurableFileStorage):
            shutil.rmtree(storage.scratch_dir(), ignore_errors=True)

    def _toc_time(self) -> float:
        if self._folder is None:
            return 0.0
        tocs = list(self._folder.glob("_MAIN_*.toc"))
        return max((p.stat().st_mtime for p in tocs), default=0.0)

    def _index_bytes(self) -> int:
        if self._folder is None:
            return 0
        total = 0
        for p in self._folder.iterdir():
            with contextlib.suppress(OSError):
                if p.is_file():
                    total += p.stat().st_size
        return total


class _BatchWriter:
    """Batches written in order into one open Whoosh writer until :meth:`commit`. A batch that touches a URL
    the open writer already wrote commits it first (a writer cannot replace a document it has not
    committed). After a failure, :meth:`cancel` (the batches are in the write-ahead log)."""

    def __init__(self, index: TopicIndex) -> None:
        self._index = index
        self._writer: Any = None
        self._searcher: Any = None
        self._written: set[str] = set()

    @property
    def open(self) -> bool:
        """True while written batches wait for a commit."""
        return self._writer is not None

    def write(self, urls: Iterable[str], docs: Mapping[str, dict[str, Any]]) -> None:
        urls = list(urls)
        if self._writer is not None and any(u in self._written for u in urls):
            self.commit()
        if self._writer is None:
            self._writer = self._index._new_writer()
            self._searcher = self._writer.searcher()
            self._written = set()
        self._index._write(self._writer, self._searcher, urls, docs)
        self._written.update(urls)

    def commit(self) -> None:
        """Commit the open writer (durable on return); nothing when none is open."""
        if self._writer is None:
            return
        self._searcher.close()
        writer, self._writer, self._searcher = self._writer, None, None
        self._index._commit_writer(writer)  # cancels it and removes its files if the commit fails

    def cancel(self) -> None:
        if self._searcher is not None:
            with contextlib.suppress(Exception):
                self._searcher.close()
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.cancel()
            self._index._remove_scratch()
        self._writer = self._searcher = None
