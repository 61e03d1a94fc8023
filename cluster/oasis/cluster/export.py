"""``oasis export --engine TOPIC --format jsonl|warc --out FILE``: every document of one engine, to a file.

The documents are streamed from the engine over gRPC (``Engine.Export``: a snapshot of the index taken when
the export starts) and written as they arrive, to a temporary file that replaces ``FILE`` only when the whole
export succeeded (a failed export leaves no partial file and an existing ``FILE`` untouched).

The format is ``--format``, or what ``FILE``'s name says (``.warc``, ``.warc.gz``: WARC; else JSONL); a
``--format`` that contradicts the name is refused. ``.gz``: gzipped.

* ``jsonl``: one JSON object per line: ``{"url", "title", "text", "fetch_time", "fetch_date", "relevance",
  "engine"}`` (``fetch_time`` in seconds since the epoch, ``fetch_date`` the same in ISO 8601 UTC).
* ``warc`` (warcio; gzip per record when ``FILE`` ends in ``.gz``): a ``warcinfo`` record, then one
  ``resource`` record per document: ``WARC-Target-URI`` the URL, ``WARC-Date`` the fetch time, the stored
  text as a ``text/plain; charset=utf-8`` block, and the title, relevance and engine in ``Oasis-Title``,
  ``Oasis-Relevance`` and ``Oasis-Engine`` headers. These are resource records, not response records: the
  engine keeps the extracted title and text, not the HTTP response.

Standard library only at import, and :mod:`oasis.runtime.addresses`, which is too (the command table imports
this module to build the parser).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import logging
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from oasis.runtime.addresses import address_arg

if TYPE_CHECKING:
    from oasis.runtime.clients import IndexDocument

logger = logging.getLogger(__name__)

FORMATS = ("jsonl", "warc")
WARC_CONTENT_TYPE = "text/plain; charset=utf-8"


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("export", help="write every document of one engine to a JSONL or WARC file")
    p.add_argument(
        "--state-dir", default=None, help="cluster state directory (default $OASIS_STATE_DIR or ./.oasis)"
    )
    p.add_argument("--engine", required=True, help="engine (topic) name in the running cluster")
    p.add_argument(
        "--address",
        default=None,
        type=address_arg,
        help="HOST:PORT of the engine (instead of the cluster state)",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="jsonl or warc (warcio); default: what --out's name says (.warc, .warc.gz: warc; else jsonl)",
    )
    p.add_argument(
        "--out", required=True, type=Path, help="output file (.gz: gzipped; .warc.gz: gzipped WARC records)"
    )
    p.add_argument("--limit", type=int, default=0, help="at most this many documents (0: all)")
    p.set_defaults(func=cmd_export)


def iso_date(seconds: float) -> str:
    return datetime.fromtimestamp(max(0.0, seconds), UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def document_json(doc: IndexDocument, engine: str) -> dict[str, Any]:
    return {
        "url": doc.url,
        "title": doc.title,
        "text": doc.text,
        "fetch_time": doc.fetch_time,
        "fetch_date": iso_date(doc.fetch_time),
        "relevance": doc.relevance,
        "engine": engine,
    }


def write_jsonl(out: IO[bytes] | gzip.GzipFile, docs: Iterable[IndexDocument], engine: str) -> int:
    n = 0
    for doc in docs:
        out.write(json.dumps(document_json(doc, engine), ensure_ascii=False).encode("utf-8") + b"\n")
        n += 1
    return n


def write_warc(out: IO[bytes], docs: Iterable[IndexDocument], engine: str, *, compress: bool) -> int:
    from io import BytesIO

    from warcio.warcwriter import WARCWriter

    writer = WARCWriter(out, gzip=compress)
    info = writer.create_warcinfo_record(
        f"oasis-export-{engine}",
        {"software": "oasis export", "format": "WARC File Format 1.1", "oasis-engine": engine},
    )
    writer.write_record(info)
    n = 0
    for doc in docs:
        body = doc.text.encode("utf-8")
        headers = {
            "WARC-Date": iso_date(doc.fetch_time),
            "Oasis-Title": doc.title,
            "Oasis-Relevance": f"{doc.relevance or 0.0:.6f}",
            "Oasis-Engine": engine,
        }
        record = writer.create_warc_record(
            doc.url,
            "resource",
            payload=BytesIO(body),
            length=len(body),
            warc_content_type=WARC_CONTENT_TYPE,
            warc_headers_dict=headers,
        )
        writer.write_record(record)
        n += 1
    return n


def _gzipped(path: Path) -> bool:
    return path.name.lower().endswith(".gz")


def is_export(path: Path) -> bool:
    """Whether ``path`` is named as an export (``.jsonl``, ``.warc``, either ``.gz``): what ``oasis index``
    reads back as documents rather than as one HTML page."""
    return path.name.lower().removesuffix(".gz").endswith((".jsonl", ".warc"))


def read_export(path: Path, skipped: list[str] | None = None) -> Iterator[IndexDocument]:
    """The documents of an export (:func:`export`'s JSONL or WARC, gzipped or not; a crawl's WARC of HTML
    ``response`` records too), streamed: each with its URL, title, text and fetch time, its relevance left to
    the engine it goes into (which scores it with its own topic model). Never raises: a line or record that
    holds no document, or a file that cannot be read on (missing, a gzip stream cut short), is skipped with a
    warning and noted in ``skipped``, and what was read before is kept."""
    try:
        if format_for(path, None) == "warc":
            yield from _read_warc(path, skipped)
        else:
            yield from _read_jsonl(path, skipped)
    except (OSError, EOFError) as exc:  # unreadable, or a gzip stream cut short: what was read is sent
        _skip(f"{path}: cannot read on ({type(exc).__name__}: {str(exc)[:100]})", skipped)


def _skip(why: str, skipped: list[str] | None) -> None:
    logger.warning("skipping %s", why)
    if skipped is not None:
        skipped.append(why)


def _read_jsonl(path: Path, skipped: list[str] | None) -> Iterator[IndexDocument]:
    from oasis.runtime.clients import IndexDocument

    opener = gzip.open if _gzipped(path) else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                doc = IndexDocument(
                    url=_text(row["url"], "url"),
                    title=_text(row.get("title", ""), "title"),
                    text=_text(row.get("text", ""), "text"),
                    fetch_time=float(row.get("fetch_time", 0.0)),
                )
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                _skip(f"{path} line {number}: no document ({type(exc).__name__}: {str(exc)[:100]})", skipped)
                continue
            yield doc


def _text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{field} is not a string")
    return value


def _read_warc(path: Path, skipped: list[str] | None) -> Iterator[IndexDocument]:
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    from oasis.runtime.clients import IndexDocument
    from oasis.runtime.html import MAX_BYTES, parse_html
    from oasis.web.corpus import WarcNoise, cut, warc_html_response

    noise = WarcNoise()  # muted only while warcio reads: between documents stderr is the caller's
    try:
        with path.open("rb") as stream:
            records = iter(ArchiveIterator(stream))
            while True:
                with contextlib.redirect_stderr(noise):
                    record = next(records, None)
                if record is None:
                    return
                when = _seconds(record.rec_headers.get_header("WARC-Date") or "")
                url = record.rec_headers.get_header("WARC-Target-URI") or ""
                if record.rec_type == "resource" and url:  # an Oasis export: the stored title and text
                    title = record.rec_headers.get_header("Oasis-Title") or ""
                    text = record.content_stream().read().decode("utf-8", errors="replace")
                    yield IndexDocument(url=url, title=title, text=text, fetch_time=when)
                elif (
                    page := warc_html_response(record)
                ) is not None:  # a crawl's WARC, as the replay reads it
                    url, charset = page
                    parsed = parse_html(record.content_stream().read(MAX_BYTES + 1), url, encoding=charset)
                    yield IndexDocument(url=url, title=parsed.title, text=parsed.text, fetch_time=when)
    except ArchiveLoadFailed as exc:
        _skip(f"{path}: the rest is not a readable WARC ({cut(str(exc), 100)})", skipped)
    finally:
        noise.report(path)


def _seconds(iso: str) -> float:
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def format_for(out: Path, fmt: str | None) -> str:
    """The format to write ``out`` in: ``fmt`` when given, else the one its name says (``.warc``,
    ``.warc.gz``: WARC; anything else JSONL). ValueError when ``fmt`` contradicts the name (JSONL written
    to ``x.warc.gz`` is a file no WARC reader opens, and WARC in ``x.jsonl`` is no JSON lines)."""
    name = out.name.lower().removesuffix(".gz")
    named = "warc" if name.endswith(".warc") else "jsonl" if name.endswith((".jsonl", ".json")) else None
    if fmt is None:
        return named or "jsonl"
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    if named is not None and named != fmt:
        raise ValueError(
            f"--out {out} names a {named.upper()} file but --format is {fmt}: drop --format or rename"
        )
    return fmt


def export(address: str, engine: str, fmt: str, out: Path, *, limit: int = 0) -> int:
    """Stream ``engine``'s documents from ``address`` into ``out``; the number written.

    Raises :class:`~oasis.runtime.errors.ServiceError` (the engine failed mid-stream: nothing is written),
    :class:`~oasis.runtime.files.FileWriteError`, or ``ValueError`` for bad arguments.
    """
    from tqdm import tqdm

    from oasis.runtime.clients import EngineClient
    from oasis.runtime.files import atomic_writer

    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    if limit < 0:
        raise ValueError(f"--limit must be >= 0, got {limit}")
    if fmt == "warc":
        try:
            import warcio  # noqa: F401  (the research extra; checked before the engine is asked)
        except ImportError:
            raise ValueError("--format warc needs warcio: pip install 'oasis-search[research]'") from None
    client = EngineClient(address)
    try:
        total = client.document_count()
        if limit:
            total = min(total, limit)
        docs = tqdm(client.export(limit=limit), total=total, unit="doc", file=sys.stderr, disable=None)
        with atomic_writer(out) as fh:
            if fmt == "warc":
                return write_warc(fh, docs, engine, compress=_gzipped(out))
            if not _gzipped(out):
                return write_jsonl(fh, docs, engine)
            with gzip.GzipFile(fileobj=fh, mode="wb") as packed:  # x.jsonl.gz: what its name says
                return write_jsonl(packed, docs, engine)
    finally:
        client.close()


def cmd_export(args: argparse.Namespace) -> int:
    from oasis.runtime.errors import ServiceError
    from oasis.runtime.files import FileWriteError

    address = args.address
    if address is None:
        from oasis.cluster.commands import find_engine

        record = find_engine(args, "oasis export")
        if isinstance(record, int):
            return record
        address = record.address
    try:
        fmt = format_for(args.out, args.format)
        n = export(address, args.engine, fmt, args.out, limit=args.limit)
    except ValueError as exc:
        print(f"oasis export: {exc}", file=sys.stderr)
        return 2
    except (ServiceError, FileWriteError) as exc:
        print(f"oasis export: {exc} (nothing written to {args.out})", file=sys.stderr)
        return 1
    print(f"{args.engine}: {n} documents written to {args.out} ({fmt})")
    return 0
