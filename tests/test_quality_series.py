"""The living cluster's quality series (oasis.cluster.quality / evaluator): on a disk that fills, a sample the
disk refuses is skipped and leaves no torn line, the evaluator goes on, and the next sample after space
comes back is read (real tmpfs, when the suite runs as root); the evaluator's cached r(i) follow the
engine's model (a real engine)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from disk_testmounts import mount_skip_reason, tmpfs
from robot_testweb import LocalEngine

from oasis.cluster.evaluator import LiveEvaluator, sample_once
from oasis.cluster.quality import append_row
from oasis.engine.index import Delete, Upsert
from oasis.runtime.clients import EngineClient
from oasis.runtime.files import read_json_lines


def test_rows_append_and_read_back(tmp_path: Path) -> None:
    out = tmp_path / "quality.jsonl"
    for t in range(3):
        append_row(out, {"t": t, "R": 0.5})
    assert read_json_lines(out) == [{"t": t, "R": 0.5} for t in range(3)]


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
        assert read_json_lines(out) == [{"t": 0}, {"t": 2}]


def test_a_model_rebuilt_under_a_name_seen_before_is_not_taken_for_the_old_one(
    engine: LocalEngine, tmp_path: Path
) -> None:
    """Under 100 documents the engine rebuilds its relevance model at every size change, and names a model by
    that size: 3 documents, then 2 (a robot's Score rebuilds it), then 3 again is a second model "3" with
    other IDF (a deleted page's terms still count until its segment merges). Before: an evaluator that did
    not sample while the collection had 2 kept its cached scores from the first "3" (a flaky recall in the
    living-cluster test). Now every Score reply names the model's build, a rebuild under the same size is
    another build, and the evaluator drops its cache: its r(i) is the engine's now."""
    index = engine.index

    def up(seq: int, url: str, text: str) -> Upsert:
        return Upsert(seq=seq, url=url, title="", text=text, fetch_time=1.0, relevance=0.5)

    index.apply([up(1, "http://a/1", "sql database query"), up(2, "http://a/2", "sql table index")])
    index.apply([up(3, "http://a/3", "cake recipe")])
    index.stats()  # (a read commits what was applied)
    texts = {
        "http://w/1": "sql database transaction table",
        "http://w/2": "query index sql",
        "http://w/3": "transaction",
    }
    pages = {url: (1, 0.0) for url in texts}
    evaluator = LiveEvaluator(tmp_path, min_relevance=0.15)
    evaluator._texts = {(url, 1): ("", text) for url, text in texts.items()}
    client = EngineClient(engine.address)
    try:
        first = evaluator._scores("databases", client, pages)
        index.apply([Delete(seq=4, url="http://a/3")])
        index.stats()
        index.score([("", "sql")])  # a robot scores a page: the model is rebuilt at 2 documents
        index.apply([up(5, "http://a/4", "sql sql query transaction")])
        index.stats()
        now, model = client.score_with_model([("", texts[url]) for url in texts])
        cached = evaluator._model["databases"]
        assert index.relevance_model().n_docs == 3  # the same collection size as the cached model's ...
        assert now != [first[url] for url in texts]  # ... other scores ...
        assert model and cached and model != cached  # ... and another build
        assert evaluator._scores("databases", client, pages) == dict(zip(texts, now, strict=True))
    finally:
        client.close()


def test_a_damaged_series_keeps_its_whole_samples_and_oasis_report_plots_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``quality.jsonl`` after a crash or on a damaged disk: garbage bytes (not UTF-8), a block of zeros, a
    value that is not an object, a row of another shape, a torn last line. Before, ``oasis report`` died on
    the first (``UnicodeDecodeError``); now every whole sample is read and plotted, the rest skipped."""
    from oasis.cli import main
    from oasis.freshness.series import read_series

    series = tmp_path / "quality.jsonl"

    def sample(t: float, recall: float) -> dict[str, object]:
        q = {"recall": recall, "freshness": 0.9, "M": min(recall, 0.9), "P_mean": 0.5, "documents": 4}
        return {"time": t, "elapsed": t, "web": {"modified": 1}, "topics": {"databases": q}}

    append_row(series, sample(0.0, 0.25))
    with series.open("ab") as f:
        f.write(b"\xff\xfe\x80 garbage\n" + b"\0" * 64 + b"\n5\n" + b'{"time": 1, "topics": {"x": 3}}\n')
    append_row(series, sample(2.0, 0.75))
    with series.open("ab") as f:
        f.write(json.dumps(sample(4.0, 1.0)).encode()[:40])  # torn
    assert [row["time"] for row in read_series(series)] == [0.0, 2.0]
    out = tmp_path / "plots"
    assert main(["report", "--state-dir", str(tmp_path), "--out", str(out)]) == 0
    assert "databases" in capsys.readouterr().out
    assert all((out / name).read_bytes().startswith(b"\x89PNG") for name in ("quality.png", "estimates.png"))
    blocked = tmp_path / "a-file"  # an --out that cannot be a folder: one line, before any plot (a traceback)
    blocked.write_text("x", encoding="utf-8")
    assert main(["report", "--state-dir", str(tmp_path), "--out", str(blocked / "plots")]) == 1
    captured = capsys.readouterr()
    assert (
        f"oasis report: cannot write to folder {blocked / 'plots'}: {blocked} is a file, not a folder"
        in captured.err
    )
    assert captured.out == ""


def test_the_last_sample_skips_a_damaged_or_foreign_tail(tmp_path: Path) -> None:
    """``oasis status`` and the demo read the newest sample from the end of the series: a foreign object or
    garbage written after it is skipped (before, a foreign object was returned and ``oasis status`` failed on
    its missing keys)."""
    from oasis.cluster.quality import last_row

    series = tmp_path / "quality.jsonl"
    q = {"recall": 0.5, "freshness": 1.0, "M": 0.5, "documents": 3}
    append_row(series, {"time": 1.0, "topics": {"databases": q}})
    with series.open("ab") as f:
        f.write(b'{"time": 2, "topics": ["databases"]}\n{"note": "x"}\n\xff\xfe\n')
    row = last_row(series)
    assert row is not None and row["time"] == 1.0 and row["topics"]["databases"] == q
    assert last_row(tmp_path / "missing.jsonl") is None
