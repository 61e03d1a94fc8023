"""The engine's write-ahead log (oasis.engine.wal): an acknowledged batch that only the log holds survives
kill -9 of a real engine; a torn or damaged log tail loses only what was never acknowledged; replaying
batches the index already holds changes nothing."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.engine.index import Delete, IndexLimits, TopicIndex, Upsert, make_upsert
from oasis.engine.topic import Topic
from oasis.engine.wal import HEADER, WAL_FILE, read_log
from oasis.robot.engine_client import connect_engine
from oasis.runtime.engine_types import IndexDocument
from oasis.runtime.service import channel_options
from oasis.runtime.spawn import spawn_service
from oasis.v1 import engine_pb2, engine_pb2_grpc

TOPIC = Topic(name="space", description="space exploration", keywords=("rocket", "orbit"))
BATCH = 25


def up(seq: int, n: int) -> Upsert:
    op = make_upsert(
        seq=seq, url=f"http://space.org/{n}", title=f"page {n}", text=f"rocket token{n} orbit",
        fetch_time=1.0, relevance=0.5, limits=IndexLimits(),
    )  # fmt: skip
    assert isinstance(op, Upsert)
    return op


def crashed_copy(index_dir: Path, to: Path) -> Path:
    """The directory as a kill -9 at this moment leaves it (the open index's files, no live lock)."""
    shutil.copytree(index_dir, to, ignore=shutil.ignore_patterns("*.lock", "*LOCK*"))
    return to


def logged_index(tmp_path: Path, batches: int) -> tuple[TopicIndex, Path]:
    """An index whose last ``batches`` acknowledged batches are only in its write-ahead log."""
    ix = TopicIndex.open(tmp_path / "ix", TOPIC, commit_seconds=3600)
    for b in range(batches):
        ix.apply([up(b * BATCH + i, b * BATCH + i) for i in range(BATCH)])
    assert len(read_log(tmp_path / "ix" / WAL_FILE).batches) == batches  # nothing committed yet
    return ix, tmp_path / "ix"


def test_acknowledged_batches_only_in_the_log_survive_kill_9(tmp_path: Path) -> None:
    def start(tag: str) -> tuple[subprocess.Popen[bytes], str]:
        engine = spawn_service(
            [
                sys.executable, "-m", "oasis.engine", "--name", "e1", "--topic", "space",
                "--keywords", "rocket,orbit", "--index-dir", str(tmp_path / "ix"),
                "--commit-seconds", "3600", "--log-level", "WARNING",
            ],
            tmp_path / f"engine-{tag}.json", timeout=30, name="engine", log=tmp_path / f"engine-{tag}.log",
            cwd=tmp_path,
        )  # fmt: skip
        return engine.process, engine.address

    proc, address = start("a")
    robot = connect_engine(address)  # the robot's own engine client: index() returns once acknowledged
    try:
        for b in range(3):
            docs = [IndexDocument(url=f"http://space.org/{n}", text=f"rocket token{n}", relevance=0.5)
                    for n in range(1 + b * BATCH, 1 + (b + 1) * BATCH)]  # fmt: skip
            assert robot.index(docs).acknowledged == BATCH
    finally:
        robot.close()
    assert len(read_log(tmp_path / "ix" / WAL_FILE).batches) == 3  # acknowledged, not committed to Whoosh
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)

    proc, address = start("b")
    try:
        with grpc.insecure_channel(address, options=channel_options()) as channel:
            stub = engine_pb2_grpc.EngineStub(channel)
            assert stub.Stats(engine_pb2.StatsRequest(), timeout=10).documents == 3 * BATCH
            for n in range(1, 3 * BATCH + 1, 7):
                reply = stub.Search(engine_pb2.SearchRequest(query=f"token{n}"), timeout=10)
                assert [h.url for h in reply.hits] == [f"http://space.org/{n}"]
        assert read_log(tmp_path / "ix" / WAL_FILE).batches == []  # replayed, committed, emptied
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_torn_last_record_loses_only_that_batch(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ix, d = logged_index(tmp_path, 3)
    crashed = crashed_copy(d, tmp_path / "crashed")
    ix.close()
    wal = crashed / WAL_FILE
    data = wal.read_bytes()
    wal.write_bytes(data[:-10])  # the third append was cut short (its fsync never returned: not acked)
    with caplog.at_level(logging.WARNING, logger="oasis.engine.wal"):
        ix = TopicIndex.open(crashed, TOPIC)
    try:
        assert ix.stats().documents == 2 * BATCH
        assert ix.contains(f"http://space.org/{2 * BATCH - 1}")
        assert not ix.contains(f"http://space.org/{2 * BATCH}")
        assert "torn record" in caplog.text
        assert wal.stat().st_size == 0
    finally:
        ix.close()


def test_a_torn_header_and_a_damaged_record_are_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ix, d = logged_index(tmp_path, 3)
    torn = crashed_copy(d, tmp_path / "torn")
    damaged = crashed_copy(d, tmp_path / "damaged")
    ix.close()
    with open(torn / WAL_FILE, "ab") as f:
        f.write(b"\x07\x00")  # half a header
    ix = TopicIndex.open(torn, TOPIC)
    assert ix.stats().documents == 3 * BATCH
    ix.close()

    data = bytearray((damaged / WAL_FILE).read_bytes())
    first = HEADER.unpack_from(data, 0)[0]
    second_payload = HEADER.size + first + HEADER.size
    data[second_payload + 5] ^= 0xFF  # a flipped byte inside the second of three records
    (damaged / WAL_FILE).write_bytes(bytes(data))
    with caplog.at_level(logging.ERROR, logger="oasis.engine.wal"):
        ix = TopicIndex.open(damaged, TOPIC)
    try:
        assert ix.stats().documents == BATCH  # the records before the damage
        assert "damaged record" in caplog.text
        kept = [p for p in damaged.iterdir() if p.name.startswith(f"{WAL_FILE}.corrupt-")]
        assert len(kept) == 1 and kept[0].read_bytes() == bytes(data)  # the evidence is kept
    finally:
        ix.close()


def test_replaying_batches_the_index_holds_changes_nothing(tmp_path: Path) -> None:
    ix, d = logged_index(tmp_path, 2)
    log = (d / WAL_FILE).read_bytes()
    assert ix.stats().documents == 2 * BATCH  # a read commits everything logged, then empties the log
    assert (d / WAL_FILE).stat().st_size == 0
    crashed = crashed_copy(d, tmp_path / "crashed")
    ix.close()
    (crashed / WAL_FILE).write_bytes(log)  # a crash after the commit, before the log was emptied
    ix = TopicIndex.open(crashed, TOPIC)
    try:
        assert ix.stats().documents == 2 * BATCH
        for n in (0, 7, 2 * BATCH - 1):
            page = ix.search(f"token{n}")
            assert [h.url for h in page.hits] == [f"http://space.org/{n}"] and page.total == 1
    finally:
        ix.close()


def test_acknowledged_batches_are_visible_and_commit_in_the_background(tmp_path: Path) -> None:
    ix = TopicIndex.open(tmp_path / "ix", TOPIC, commit_seconds=0.2)
    try:
        r = ix.apply([up(i, i) for i in range(BATCH)])
        assert (r.added, r.replaced) == (BATCH, 0)
        r = ix.apply([up(100, 3), up(101, 1000)])  # /3 is pending: committed first, then replaced
        assert (r.added, r.replaced) == (1, 1)
        deadline = time.monotonic() + 10
        logged = tmp_path / "ix" / WAL_FILE  # (absent for an instant while the applier seals it)
        while (read_log(logged).batches or list(logged.parent.glob(f"{WAL_FILE}.[0-9]*"))) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.05)
        assert read_log(logged).batches == []  # the applier committed them and dropped the sealed file
        assert not list(logged.parent.glob(f"{WAL_FILE}.[0-9]*"))
        assert ix.search("token3").total == 1 and ix.stats().documents == BATCH + 1
    finally:
        ix.close()


def test_an_idle_applier_commits_once_enough_operations_wait(tmp_path: Path) -> None:
    """With nothing more queued, ``idle_commit_docs`` logged operations are committed after
    ``IDLE_COMMIT_FRACTION`` of ``commit_seconds`` (here 2.5 s of 20), without a read asking for it; fewer
    stay only in the log until ``commit_seconds`` (issue 14: the commit a robot's last read waits for then
    flushes only what arrived since)."""
    from oasis.engine.index import IDLE_COMMIT_FRACTION

    assert IDLE_COMMIT_FRACTION * 20.0 < 5.0
    ix = TopicIndex.open(tmp_path / "ix", TOPIC, commit_seconds=20.0, idle_commit_docs=BATCH)
    logged = tmp_path / "ix" / WAL_FILE
    try:
        ix.apply([up(i, i) for i in range(BATCH - 1)])  # one short of idle_commit_docs
        time.sleep(IDLE_COMMIT_FRACTION * 20.0 + 1.0)
        assert len(read_log(logged).batches) == 1  # still only in the log
        ix.apply([up(BATCH, BATCH)])
        started = time.monotonic()
        while read_log(logged).batches and time.monotonic() - started < 10:
            time.sleep(0.05)
        assert read_log(logged).batches == [] and time.monotonic() - started < 10  # committed, no read
        assert ix.stats().documents == BATCH
    finally:
        ix.close()


urls = st.sampled_from([f"http://h.org/{i}" for i in range(6)])
batches_st = st.lists(
    st.lists(
        st.tuples(st.booleans(), urls, st.sampled_from(["rocket", "orbit", "cake"])), min_size=1, max_size=8
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=8, deadline=None)
@given(batches_st, st.sampled_from([0.0, 0.05, 3600.0]))
def test_logged_batches_count_and_end_like_a_dict(
    batches: list[list[tuple[bool, str, str]]], wait: float
) -> None:
    """Counts of batches acknowledged before any commit (taken from the batches logged before them), and
    the index after the applier's commits (some batches replace documents the open writer holds)."""
    with tempfile.TemporaryDirectory() as tmp:
        ix = TopicIndex.open(Path(tmp) / "ix", TOPIC, commit_seconds=max(wait, 0.01))
        model: dict[str, str] = {}
        seq = 0
        try:
            for batch in batches:
                ops: list[Upsert | Delete] = []
                before = dict(model)
                for is_upsert, url, word in batch:
                    seq += 1
                    if is_upsert:
                        op = make_upsert(seq=seq, url=url, title="", text=word, fetch_time=1.0, relevance=0.5,
                                         limits=IndexLimits())  # fmt: skip
                        assert isinstance(op, Upsert)
                        ops.append(op)
                        model[url] = word
                    else:
                        ops.append(Delete(seq=seq, url=url))
                        model.pop(url, None)
                r = ix.apply(ops)
                assert r.added == len(model.keys() - before.keys())
                assert r.deleted == len(before.keys() - model.keys())
                assert r.replaced == len([u for u in model if u in before and any(o.url == u for o in ops)])
                if wait:
                    time.sleep(wait / 1000)
            assert ix.stats().documents == len(model)
            for url, word in model.items():
                doc = ix.document(url)
                assert doc is not None and doc["text"] == word
        finally:
            ix.close()


def test_a_batch_acknowledged_while_a_failed_commit_is_replayed_stays_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a failed commit the applier replays the log; a batch acknowledged meanwhile is only in the log
    (and the applier's queue) until the next commit, so the replay must not empty the file holding it: a
    kill -9 then would lose an acknowledged page."""
    ix, index_dir = logged_index(tmp_path, 2)
    real_commit = TopicIndex._commit_writer
    failures = [RuntimeError("disk full (test)")]

    def commit_once_failing(self: TopicIndex, writer: object) -> None:
        if failures:
            with contextlib.suppress(Exception):
                writer.cancel()  # type: ignore[attr-defined]
            raise failures.pop()
        real_commit(self, writer)

    monkeypatch.setattr(TopicIndex, "_commit_writer", commit_once_failing)
    wal = ix._wal
    assert wal is not None
    real_replay = wal.replay
    late = up(10_000, 10_000)

    def replay_with_a_late_batch(paths: list[Path] | None = None) -> list[list[object]]:
        batches = real_replay(paths)
        t = threading.Thread(target=ix.apply, args=([late],))  # a client's batch, acknowledged meanwhile
        t.start()
        t.join(timeout=30)
        return batches

    monkeypatch.setattr(wal, "replay", replay_with_a_late_batch)
    try:
        with pytest.raises(RuntimeError, match="could not commit"):
            ix.stats()  # the read asks for a commit, which fails: the applier replays the log
        deadline = time.monotonic() + 30  # wait for the replay without asking for a commit (a read would)
        while not (ix._committed >= 2 and ix._logged == 3 and ix._apply_error is None):
            assert time.monotonic() < deadline, "the applier did not replay the log"
            time.sleep(0.05)
        assert not failures
        copy = crashed_copy(index_dir, tmp_path / "crashed")
    finally:
        monkeypatch.undo()
        ix.close()
    reopened = TopicIndex.open(copy, TOPIC)
    try:
        assert reopened.contains(late.url), "the batch acknowledged during the replay was lost"
        assert reopened.stats().documents == 2 * BATCH + 1
    finally:
        reopened.close()
