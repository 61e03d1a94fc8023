"""kill -9 of a real engine process: every acknowledged document survives, and the index reopens cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc

from oasis.runtime.service import channel_options
from oasis.runtime.spawn import spawn_service
from oasis.v1 import engine_pb2, engine_pb2_grpc

BATCH = 40


def start_engine(tmp_path: Path, tag: str) -> tuple[subprocess.Popen[bytes], str]:
    engine = spawn_service(
        [
            sys.executable, "-m", "oasis.engine", "--name", "e1", "--topic", "space",
            "--description", "space", "--keywords", "rocket,orbit", "--index-dir", str(tmp_path / "ix"),
            "--batch-size", str(BATCH), "--log-level", "WARNING",
        ],
        tmp_path / f"engine-{tag}.json",
        timeout=30,
        name="engine",
        log=tmp_path / f"engine-{tag}.log",
        cwd=tmp_path,
    )  # fmt: skip
    assert engine.info["pid"] == engine.pid
    return engine.process, engine.address


def run_engine(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m oasis.engine ARGS`` run to completion (stdout and stderr captured as text)."""
    return subprocess.run(
        [sys.executable, "-m", "oasis.engine", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def requests(n: int) -> Iterator[engine_pb2.IndexRequest]:
    for i in range(1, n + 1):
        text = f"rocket token{i} " + "filler words about orbital mechanics " * 20
        yield engine_pb2.IndexRequest(
            seq=i, upsert=engine_pb2.Document(url=f"http://space.org/{i}", text=text)
        )


def test_acknowledged_documents_survive_kill_9(tmp_path: Path) -> None:
    proc, address = start_engine(tmp_path, "a")
    acked = 0
    try:
        with grpc.insecure_channel(address, options=channel_options()) as channel:
            stub = engine_pb2_grpc.EngineStub(channel)
            for ack in stub.Index(requests(100_000), timeout=60):
                acked = ack.acked_through
                if acked >= 3 * BATCH:
                    os.kill(
                        proc.pid, signal.SIGKILL
                    )  # right after the ack, while the next batch is in flight
                    break
    except grpc.RpcError:
        pass  # the stream dies with the process
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert acked >= 3 * BATCH

    proc, address = start_engine(tmp_path, "b")  # same directory: must open cleanly, no stale lock
    try:
        with grpc.insecure_channel(address, options=channel_options()) as channel:
            stub = engine_pb2_grpc.EngineStub(channel)
            documents = stub.Stats(engine_pb2.StatsRequest(), timeout=10).documents
            # every acknowledged document is there; batches are atomic, so at most whole unacked batches more
            assert documents >= acked and (documents - acked) % BATCH == 0
            assert stub.Search(engine_pb2.SearchRequest(query="rocket"), timeout=10).total == documents
            for i in range(1, acked + 1, 7):
                reply = stub.Search(engine_pb2.SearchRequest(query=f"token{i}"), timeout=10)
                assert [h.url for h in reply.hits] == [f"http://space.org/{i}"]
            # and the restarted engine indexes again (the Whoosh write lock is free)
            acks = list(
                stub.Index(
                    iter([engine_pb2.IndexRequest(seq=1, delete_url="http://space.org/1")]), timeout=10
                )
            )
            assert acks[-1].deleted == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0  # drains and closes the index cleanly
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_second_engine_on_the_same_directory_is_refused(tmp_path: Path) -> None:
    proc, _ = start_engine(tmp_path, "a")
    try:
        second = run_engine(
            tmp_path,
            "--name",
            "e2",
            "--topic",
            "space",
            "--keywords",
            "rocket",
            "--index-dir",
            str(tmp_path / "ix"),
        )
        assert second.returncode == 1
        assert f"in use by another engine (pid {proc.pid})" in second.stderr
    finally:
        proc.kill()
        proc.wait()


def test_bad_arguments_exit_2_with_a_message(tmp_path: Path) -> None:
    done = run_engine(
        tmp_path, "--name", "e1", "--topic", "t", "--keywords", "the,and", "--index-dir", str(tmp_path / "ix")
    )
    assert done.returncode == 2
    assert "no indexable terms" in done.stderr
    assert not (tmp_path / "ix").exists()
