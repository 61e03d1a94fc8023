"""Durable atomic file writes and JSON reads with errors that name the file.

Every file the project rewrites in place (address files, checkpoints, Q-tables, the cluster state file,
caches) goes through :func:`write_bytes_atomic`: a reader, or a crash at any instant, sees either the old
file or the new one, never half of one, and once the call returns the new contents are on disk.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

logger = logging.getLogger(__name__)


class FileWriteError(OSError):
    """A durable write failed (full or read-only disk, missing permissions); the old file is intact.

    Its text is the message alone, which already says the reason (``cannot write X: No space left on
    device``), without ``OSError``'s ``[Errno 28]`` prefix; ``errno`` keeps the number."""

    def __str__(self) -> str:
        return str(self.strerror) if self.strerror is not None else super().__str__()


def _reason(path: Path, exc: OSError) -> str:
    """Why ``path`` (a file or folder to create) could not be: for "File exists" / "Not a directory" from
    creating its folders, the file that stands where a folder has to be; otherwise the system's reason."""
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        for ancestor in (path, *path.parents):
            if ancestor.exists() or ancestor.is_symlink():
                if not ancestor.is_dir():
                    return f"{ancestor} is a file, not a folder"
                break
    return str(exc.strerror or exc)


class JSONFileError(ValueError):
    """A JSON file is missing, unreadable or not valid JSON."""


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory file descriptors
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


fsync_directory = _fsync_directory  # public: the engine's write-ahead log creates its file with it


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` durably (:func:`atomic_writer`); a failure raises
    :class:`FileWriteError` naming ``path`` and leaves the old file (if any) as it was.
    ``durable=False`` skips both fsyncs (still atomic: a reader sees the old file or the new one)."""
    with atomic_writer(path, durable=durable) as fh:
        fh.write(data)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], *, durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file that replaces ``path`` durably when the ``with`` block ends without an exception: a temp
    file in the same directory, write, flush, fsync, ``os.replace``, fsync the directory. If the block or
    any step fails the temp file is removed and the old file (if any) is left as it was; an ``OSError``
    becomes :class:`FileWriteError` naming ``path``. For contents too large to hold in memory (exports).
    ``durable=False`` skips both fsyncs (still atomic)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # 0o666 less the umask, like any new file (mkstemp's 0o600 would hide address files from others)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise FileWriteError(exc.errno, f"cannot write {target}: {_reason(target.parent, exc)}") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, FileWriteError):
            raise FileWriteError(exc.errno, f"cannot write {target}: {exc.strerror or exc}") from exc
        raise
    if durable:
        _fsync_directory(target.parent)


def write_json_atomic(
    path: str | os.PathLike[str],
    data: object,
    *,
    indent: int | None = None,
    compact: bool = False,
    durable: bool = True,
    default: Callable[[Any], Any] | None = None,
) -> None:
    """Write ``data`` as JSON with :func:`write_bytes_atomic`. Serialisation happens before any file is
    touched, so an unserialisable object leaves nothing behind (``TypeError``/``ValueError``); ``default``
    as for :func:`json.dumps`."""
    separators = (",", ":") if compact else None
    text = json.dumps(data, indent=indent, separators=separators, default=default)
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


def read_json(path: str | os.PathLike[str], what: str = "JSON") -> Any:
    """The parsed contents of ``path``; :class:`JSONFileError` naming the ``what`` file and its path if it
    is missing, unreadable or not valid JSON (the original error is chained)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JSONFileError(f"cannot read {what} file {path}: {exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONFileError(f"{what} file {path} is not valid JSON: {exc}") from exc


def read_json_lines(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every whole JSON object of an append-only series, one per line (the living cluster's
    ``quality.jsonl``); a line that is not one is skipped, not fatal: a torn last line (a crash mid-append),
    a block of zeros or garbage bytes (a crash or a damaged disk), a value that is not an object. A missing
    file is an empty series; another read error (:class:`OSError`) is raised."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    rows = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def writable_folder(path: str | os.PathLike[str]) -> Path:
    """``path`` as a folder that exists and takes a file now: created with its parents, then a one-page probe
    file written and removed. A command that writes its results at the end checks its output folder with
    this before it starts, so a read-only, full or missing-permission disk is a clear error up front, not
    after the work. :class:`FileWriteError` names the folder (nothing is left behind)."""
    folder = Path(path)
    probe = folder / f".oasis-probe.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise _folder_error(folder, exc) from exc
    try:
        try:
            os.write(fd, b"\0" * 4096)  # a full disk refuses the first page, not the empty file
        finally:
            os.close(fd)
    except OSError as exc:
        raise _folder_error(folder, exc) from exc
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
    return folder


def _folder_error(folder: Path, exc: OSError) -> FileWriteError:
    return FileWriteError(exc.errno, f"cannot write to folder {folder}: {_reason(folder, exc)}")


class FolderBusy(OSError):
    """Another process holds a :class:`FolderLock` (``holder``: its pid as it wrote it, or "?")."""

    def __init__(self, path: Path, holder: str, message: str | None = None) -> None:
        super().__init__(message or f"{path} is held by pid {holder}")
        self.path = path
        self.holder = holder


class FolderLock:
    """An exclusive ``flock`` on the file ``path`` (created if missing), which holds the holder's pid for the
    message of the next one that tries. The kernel drops it when the holder exits, even by ``kill -9``, so a
    lock file left behind is never a held lock. :class:`FolderBusy` if another process holds it;
    :class:`OSError` if the file cannot be opened or written. One job per folder: a cluster's state folder
    (``oasis up``), an engine's index, a replay's ``--out``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise FolderBusy(self.path, holder) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            os.close(fd)
            raise
        self._fd: int | None = fd

    def release(self) -> None:
        """Drop the lock (the pid is cleared first: a reader never sees a pid that no longer holds it)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


OUTPUT_LOCK = ".oasis-lock"


def claim_output_folder(path: str | os.PathLike[str]) -> FolderLock:
    """An output folder for a command that writes its results at the end (``oasis replay --out``, the
    training-split tools): checked writable now (:func:`writable_folder`) and locked for this run
    (``OUTPUT_LOCK`` inside), so two runs given the same folder cannot leave it holding a mix of both. The
    caller releases the lock once its outputs are written (or exits). :class:`FileWriteError` or
    :class:`FolderBusy`, each naming the folder (both :class:`OSError`)."""
    folder = writable_folder(path)
    try:
        return FolderLock(folder / OUTPUT_LOCK)
    except FolderBusy as exc:
        message = f"{folder}: another run is writing to this folder ({exc})"
        raise FolderBusy(exc.path, exc.holder, message) from None
    except OSError as exc:
        raise _folder_error(folder, exc) from exc
