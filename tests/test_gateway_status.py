"""The dashboard's data (:func:`oasis.gateway.status.collect_status`) from real services: a robot crawling a
local web into a real engine shows its progress, the engine its size, a dead broker and an unreadable state
file are rows and messages, not errors."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from robot_testweb import LocalEngine, LocalWeb, html, page

from oasis.gateway.status import StatusSources, collect_status
from oasis.runtime.spawn import ServiceProcess, spawn_service


@pytest.fixture
def web() -> Iterator[LocalWeb]:
    w = LocalWeb().start()
    w.routes["/robots.txt"] = page("User-agent: *\n", ctype="text/plain")
    for i in range(30):
        links = [f"/p{j}.html|chapter {j} sql" for j in (i + 1, i + 2) if j < 30]
        w.routes[f"/p{i}.html"] = page(html(f"Chapter {i}", f"chapter {i} sql database table query", links))
    yield w
    w.stop()


@pytest.fixture
def robot(tmp_path: Path, engine: LocalEngine, web: LocalWeb) -> Iterator[ServiceProcess]:
    process = spawn_service(
        [sys.executable, "-m", "oasis.robot", "--name", "robot-db", "--engine", engine.address,
         "--state-dir", str(tmp_path / "robot"), "--min-delay", "0.01", "--autostart", "--allow-private",
         "--log-level", "WARNING", "--seeds", web.url("/p0.html")],
        tmp_path / "robot.json", timeout=30, name="robot", cwd=tmp_path,
    )  # fmt: skip
    yield process
    process.stop(grace=10)


def test_status_shows_robot_progress_engine_size_and_a_dead_broker(
    tmp_path: Path, engine: LocalEngine, robot: ServiceProcess
) -> None:
    state = tmp_path / "cluster.json"
    services = [
        {"name": "databases", "kind": "engine", "address": engine.address},
        {"name": "broker", "kind": "broker", "address": "127.0.0.1:1"},  # nothing listens there
        {"name": "robot-databases", "kind": "robot", "address": robot.address},
    ]
    state.write_text(json.dumps({"services": services}))
    sources = StatusSources(broker="127.0.0.1:1", cluster_state=state)
    deadline = time.monotonic() + 60
    while True:
        rows = {s.name: s for s in collect_status(sources).services}
        r = rows["robot-databases"].robot
        if r and r["pages_indexed"] >= 5 and (rows["databases"].documents or 0) >= 5:
            break
        assert time.monotonic() < deadline, rows
        time.sleep(0.2)
    assert rows["robot-databases"].health == "SERVING" and r is not None
    assert r["pages_fetched"] >= r["pages_indexed"] >= 5 and 0.0 <= r["harvest_rate"] <= 1.0
    assert rows["broker"].health == "UNREACHABLE"
    # an unreadable state file: what the gateway knows itself, and the reason, instead of an error
    state.write_text("{not json")
    status = collect_status(sources)
    assert [s.name for s in status.services] == ["broker"] and status.services[0].health == "UNREACHABLE"
    assert "cluster state" in status.errors[0]
    assert status.to_json()["errors"] == list(status.errors)
