"""The one service spawner (oasis.runtime.spawn): a real directory process, early exit, a late service."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from oasis.runtime.spawn import SpawnError, spawn_service

EXIT_EARLY = "import sys; print('bad flag: --address-file'); sys.exit(3)"
NEVER_READY = "import time; time.sleep(60)"
IGNORES_SIGTERM = (
    "import json, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
    "open(sys.argv[2], 'w').write(json.dumps({'address': 'x:1', 'pid': 0})); time.sleep(60)"
)


def test_spawns_a_service_returns_its_address_and_stops_it(tmp_path: Path) -> None:
    stale = tmp_path / "directory.json"
    stale.write_text('{"address": "127.0.0.1:1", "pid": 1}')  # from an earlier run: must not be believed
    service = spawn_service(
        [sys.executable, "-m", "oasis.directory", "--log-level", "WARNING"],
        stale,
        timeout=30,
        log=tmp_path / "directory.log",
    )
    try:
        assert service.name == "oasis.directory"
        assert service.info["pid"] == service.pid == service.process.pid
        assert service.address.startswith("127.0.0.1:") and service.address != "127.0.0.1:1"
        with grpc.insecure_channel(service.address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        code = service.stop(grace=20)
    assert code == 0  # SIGTERM: drained and exited cleanly
    assert service.process.poll() == 0


def test_early_exit_raises_with_the_log_tail(tmp_path: Path) -> None:
    started = time.monotonic()
    log = tmp_path / "x.log"
    with pytest.raises(SpawnError, match=r"bad exited with code 3; log tail:\nbad flag: --address-file"):
        spawn_service([sys.executable, "-c", EXIT_EARLY], tmp_path / "a.json", name="bad", log=log)
    assert time.monotonic() - started < 20  # noticed at once, not at the timeout


def test_a_late_service_is_killed_and_reported(tmp_path: Path) -> None:
    with pytest.raises(SpawnError, match="slow did not report its address within 1s") as info:
        spawn_service([sys.executable, "-c", NEVER_READY], tmp_path / "a.json", timeout=1.0, name="slow")
    assert "(no log)" in str(info.value)


def test_stop_kills_after_the_grace(tmp_path: Path) -> None:
    service = spawn_service([sys.executable, "-c", IGNORES_SIGTERM], tmp_path / "a.json", timeout=30)
    assert service.address == "x:1"
    started = time.monotonic()
    assert service.stop(grace=0.5) == -9  # SIGTERM ignored: SIGKILL after the grace
    assert 0.5 <= time.monotonic() - started < 10
