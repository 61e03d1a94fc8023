"""The one durable atomic write and the JSON reader (oasis.runtime.files)."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from oasis.runtime import files
from oasis.runtime.files import (
    FileWriteError,
    JSONFileError,
    read_json,
    write_bytes_atomic,
    write_json_atomic,
)


def test_written_json_reads_back_and_no_temp_file_is_left(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "state.json"  # the parent is created
    write_json_atomic(target, {"a": [1, 2.5, "x"]}, indent=2)
    assert read_json(target) == {"a": [1, 2.5, "x"]}
    assert "\n" in target.read_text()  # indent honoured
    write_json_atomic(target, {"b": 1}, compact=True)
    assert target.read_text() == '{"b":1}'
    assert list(target.parent.iterdir()) == [target]


def test_bytes_replace_the_old_file_and_keep_its_readers_mode(tmp_path: Path) -> None:
    target = tmp_path / "blob"
    write_bytes_atomic(target, b"old")
    write_bytes_atomic(target, b"new")
    assert target.read_bytes() == b"new"
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # a new file's mode, not mkstemp's 0o600


def test_unserialisable_object_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    write_json_atomic(target, {"ok": True})
    with pytest.raises(TypeError):
        write_json_atomic(target, {"bad": object()})
    assert read_json(target) == {"ok": True}
    assert list(tmp_path.iterdir()) == [target]


def test_failed_rename_removes_the_temp_file_and_names_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "state.json"
    write_json_atomic(target, {"version": 1})

    def full_disk(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full_disk)
    with pytest.raises(FileWriteError, match=re.escape(f"cannot write {target}: No space left on device")):
        write_json_atomic(target, {"version": 2})
    monkeypatch.undo()
    assert read_json(target) == {"version": 1}
    assert list(tmp_path.iterdir()) == [target]


def test_failed_write_names_the_path_and_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "q.json"
    write_json_atomic(target, [1])

    def no_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(files.os, "fsync", no_fsync)
    with pytest.raises(FileWriteError, match=r"cannot write .*q\.json"):
        write_json_atomic(target, [2])
    monkeypatch.undo()
    assert read_json(target) == [1]
    assert list(tmp_path.iterdir()) == [target]


def test_unwritable_directory_is_a_clear_error(tmp_path: Path) -> None:
    # chmod does not stop root; a parent that is a regular file stops everyone
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(FileWriteError) as info:
        write_json_atomic(blocker / "deeper" / "state.json", {})
    # the message names the file in the way (it was "[Errno 20] ...: Not a directory"), and errno stays
    target = blocker / "deeper" / "state.json"
    assert str(info.value) == f"cannot write {target}: {blocker} is a file, not a folder"
    assert info.value.errno == errno.ENOTDIR
    assert isinstance(FileWriteError(1, "x"), OSError)  # callers that catch OSError keep working
    assert list(tmp_path.iterdir()) == [blocker]


def test_read_json_names_the_file_when_missing_or_corrupt(tmp_path: Path) -> None:
    with pytest.raises(JSONFileError, match=re.escape(f"cannot read model file {tmp_path / 'missing.json'}")):
        read_json(tmp_path / "missing.json", "model")
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"a": ')
    with pytest.raises(JSONFileError, match=re.escape(f"sources file {corrupt} is not valid JSON")) as info:
        read_json(corrupt, "sources")
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value.__cause__, json.JSONDecodeError)


def test_writable_folder_creates_the_folder_and_leaves_no_probe(tmp_path: Path) -> None:
    folder = files.writable_folder(tmp_path / "a" / "b")
    assert folder == tmp_path / "a" / "b" and folder.is_dir()
    assert list(folder.iterdir()) == []  # the probe page was written and removed
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(FileWriteError) as info:
        files.writable_folder(blocker / "out")
    assert str(info.value) == f"cannot write to folder {blocker / 'out'}: {blocker} is a file, not a folder"
    with pytest.raises(FileWriteError) as info:  # the folder itself a file ("File exists", before)
        files.writable_folder(blocker)
    assert str(info.value) == f"cannot write to folder {blocker}: {blocker} is a file, not a folder"


def test_writable_folder_reports_a_disk_that_refuses_the_first_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "write", full)
    with pytest.raises(FileWriteError, match=r"cannot write to folder .*No space left on device"):
        files.writable_folder(tmp_path)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []  # the empty probe file was removed too


def test_a_folder_lock_refuses_another_process_and_dies_with_its_holder(tmp_path: Path) -> None:
    """The one lock of a cluster's state folder, an engine's index and a replay's ``--out``: another process
    is refused with the holder's pid, a holder killed by SIGKILL leaves a file that is no longer a lock."""
    path = tmp_path / ".oasis-lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from oasis.runtime.files import FolderLock; "
            "lock = FolderLock(sys.argv[1]); print('held', flush=True); time.sleep(60)",
            str(path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(files.FolderBusy, match=f"held by pid {holder.pid}") as info:
            files.FolderLock(path)
        assert info.value.holder == str(holder.pid)
        with pytest.raises(files.FolderBusy):  # claiming the folder as an output folder meets the same lock
            files.claim_output_folder(tmp_path)
    finally:
        holder.kill()
        holder.communicate()  # (waits, and closes its pipe)
    assert path.read_text() == f"{holder.pid}\n"  # left behind by the kill ...
    with files.FolderLock(path) as lock:  # ... and not a held lock
        assert path.read_text() == f"{os.getpid()}\n"
        with pytest.raises(files.FolderBusy):  # one holder at a time, in one process too
            files.FolderLock(path)
    assert lock._fd is None and path.read_text() == ""  # released: no stale pid to blame
    files.claim_output_folder(tmp_path).release()
