"""The living cluster's quality series (oasis.cluster.quality / evaluator) on a disk that fills: a sample the
disk refuses is skipped and leaves no torn line, the evaluator goes on, and the next sample after space
comes back is read (real tmpfs, when the suite runs as root)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from disk_testmounts import mount_skip_reason, tmpfs

from oasis.cluster.evaluator import sample_once
from oasis.cluster.quality import append_row, read_series


def test_rows_append_and_read_back(tmp_path: Path) -> None:
    out = tmp_path / "quality.jsonl"
    for t in range(3):
        append_row(out, {"t": t, "R": 0.5})
    assert read_series(out) == [{"t": t, "R": 0.5} for t in range(3)]


@pytest.mark.skipif(mount_skip_reason() is not None, reason=str(mount_skip_reason()))
def test_a_full_disk_skips_a_sample_without_a_torn_line(tmp_path: Path) -> None:
    """The series' first page is allocated; the rest of the disk is filled. A 6,000-byte sample fits its
    first part in that page and fails on the next: before, that part stayed as a torn line and the next
    sample, appended to it, was lost too. Now the failed part is cut back off, the evaluator's loop logs it
    and goes on, and once space is back the next sample reads back whole."""
    with tmpfs(tmp_path / "disk", "size=64k") as disk:
        out = disk / "quality.jsonl"
        append_row(out, {"t": 0})
        stat = os.statvfs(disk)
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize))
        size = out.stat().st_size
        big = {"t": 1, "pad": "x" * 6000}
        with pytest.raises(OSError, match="No space left on device"):
            append_row(out, big)
        assert out.stat().st_size == size  # cut back: no torn line
        assert sample_once(out, lambda: big) is False  # the evaluator's loop: logged, skipped, not raised
        assert out.stat().st_size == size
        filler.unlink()  # space again
        assert sample_once(out, lambda: {"t": 2}) is True
        assert read_series(out) == [{"t": 0}, {"t": 2}]
