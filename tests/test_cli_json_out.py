"""``--json-out`` of the commands that write it at the end (every benchmark, ``oasis crawl``): a place where
no file can be written is one line before the work, not a traceback after it (tried: ``oasis bench parse
--json-out /proc/x.json`` printed its table and died with a ``FileNotFoundError``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from disk_testmounts import mount_skip_reason, tmpfs

from oasis.bench import parse
from oasis.cli import main


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "parse", "--pages", "2", "--repeats", "1"],
        ["bench", "checkpoint"],
        ["crawl", "--keywords", "sql", "--seeds", "http://127.0.0.1:1/"],
    ],
)
def test_a_json_out_that_cannot_be_written_is_one_line_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    target = blocker / "result.json"
    assert main([*argv, "--json-out", str(target)]) == 2
    captured = capsys.readouterr()
    message = (
        f"oasis: --json-out {target}: cannot write to folder {blocker}: {blocker} is a file, not a folder"
    )
    assert message in captured.err
    assert captured.out == ""  # nothing ran
    assert blocker.read_text(encoding="utf-8") == "x"


def test_a_json_out_that_is_a_folder_is_refused_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the benchmark ran, then ``IsADirectoryError`` from ``write_text`` (a traceback, the result
    lost)."""
    assert main(["bench", "parse", "--pages", "2", "--repeats", "1", "--json-out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert f"oasis: --json-out {tmp_path}: a folder; name the file to write" in captured.err
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_a_result_the_disk_refuses_at_the_end_is_one_line_and_the_old_result_stays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A benchmark writes its JSON with the atomic writer, so a disk that refuses it at the end (a real
    tmpfs with one page left, which the up-front probe takes and gives back; the real benchmark's rows padded
    to three pages, the one thing not real here) is one line, exit 1, with the table already shown and the old
    result intact. Before: ``write_text`` truncated the old result, wrote what fitted (a torn file of two
    pages) and died with a traceback."""
    reason = mount_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    with tmpfs(tmp_path / "disk", "size=16k") as disk:
        old = disk / "result.json"
        old_text = json.dumps({"old": "x" * 1000})  # one page
        old.write_text(old_text, encoding="utf-8")
        (disk / "filler").write_bytes(b"\0" * 8192)  # two pages: one page left, for the probe
        real_measure = parse.measure

        def padded(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
            rows = real_measure(*args, **kwargs)
            rows[0]["padding"] = "y" * 10000  # three pages: more than is left, with the old one's page too
            return rows

        monkeypatch.setattr(parse, "measure", padded)
        argv = ["bench", "parse", "--pages", "2", "--repeats", "1", "--json-out", str(old)]
        assert main(argv) == 1
        captured = capsys.readouterr()
        assert "python3.11-doc" in captured.out  # the table was printed: the work was done and shown
        last = captured.err.strip().splitlines()[-1]
        assert last == f"oasis bench: cannot write {old}: No space left on device"
        assert "Traceback" not in captured.err
        assert old.read_text(encoding="utf-8") == old_text
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "result.json"]  # no temp file left
