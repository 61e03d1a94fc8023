"""``--json-out`` of the commands that write it at the end (every benchmark, ``oasis crawl``): a place where
no file can be written is one line before the work, not a traceback after it (tried: ``oasis bench parse
--json-out /proc/x.json`` printed its table and died with a ``FileNotFoundError``)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    message = f"oasis: --json-out {target}: [Errno 17] cannot write to folder {blocker}: File exists"
    assert message in captured.err
    assert captured.out == ""  # nothing ran
    assert blocker.read_text(encoding="utf-8") == "x"
