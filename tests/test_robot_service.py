"""The robot as a service: ``python -m oasis.robot`` over gRPC (Start / Status / Stop), and resume after
``kill -9`` from its checkpoint without losing a page the engine acknowledged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from robot_testweb import LocalEngine, LocalWeb, html, page

from oasis.runtime.spawn import spawn_service
from oasis.v1 import engine_pb2, engine_pb2_grpc, robot_pb2, robot_pb2_grpc

N_PAGES = 120
INTERVAL = 10


def build_web(web: LocalWeb) -> None:
    web.routes["/robots.txt"] = page("User-agent: *\nDisallow: /never/\n", ctype="text/plain")
    for i in range(N_PAGES):
        links = [f"/p{j}.html|chapter {j} sql" for j in (i + 1, i + 2, 2 * i + 1) if j < N_PAGES]
        links.append("/never/x.html|chapter sql")  # as relevant as the others: a best-first order reaches it
        links.append(f"/img/figure{i}.png|chapter {i} figure")  # not a page: never requested
        web.routes[f"/p{i}.html"] = page(html(f"Chapter {i}", f"chapter {i} sql database table query", links))


@pytest.fixture
def web() -> Iterator[LocalWeb]:
    w = LocalWeb().start()
    build_web(w)
    yield w
    w.stop()


def start_robot(tmp_path: Path, engine: LocalEngine, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    cmd = [
        sys.executable, "-m", "oasis.robot", "--name", "r1", "--engine", engine.address,
        "--state-dir", str(tmp_path / "state"),
        "--min-delay", "0.01", "--max-in-flight", "4", "--checkpoint-interval", str(INTERVAL),
        "--log-level", "WARNING", *extra,
    ]  # fmt: skip
    robot = spawn_service(
        cmd, tmp_path / f"robot-{time.monotonic_ns()}.json", timeout=30, name="robot", cwd=tmp_path
    )
    return robot.process, robot.address


def status(address: str) -> robot_pb2.RobotStatus:
    with grpc.insecure_channel(address) as ch:
        return robot_pb2_grpc.RobotStub(ch).Status(robot_pb2.StatusRequest(), timeout=5)


def engine_urls(engine: LocalEngine) -> set[str]:
    with grpc.insecure_channel(engine.address) as ch:
        reply = engine_pb2_grpc.EngineStub(ch).Search(
            engine_pb2.SearchRequest(query="chapter", limit=1000), timeout=10
        )
    return {h.url for h in reply.hits}


def wait_for(pred: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_start_status_stop_over_grpc(tmp_path: Path, engine: LocalEngine, web: LocalWeb) -> None:
    proc, address = start_robot(tmp_path, engine, "--allow-host", web.host)
    try:
        assert status(address).state == "idle"
        with grpc.insecure_channel(address) as ch:
            stub = robot_pb2_grpc.RobotStub(ch)
            with pytest.raises(grpc.RpcError) as err:
                stub.Start(robot_pb2.StartRequest(seeds=["ftp://nope/"]), timeout=5)
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            started = stub.Start(robot_pb2.StartRequest(seeds=[web.url("/p0.html")], max_pages=30), timeout=5)
            assert started.state == "running" and started.policy == "whittle"
            wait_for(lambda: status(address).state == "done", 30)
            s = status(address)
            assert s.pages_fetched == 30 and s.pages_indexed == 30
            assert s.errors["robots_disallowed"] >= 1 and s.harvest_rate > 0
            assert s.frontier_size > 0 and s.in_flight == 0
            assert s.links_skipped["not_a_page"] >= 30  # one figure per fetched page, none requested
            assert not any(a.path.startswith("/img/") for a in web.log)
            stopped = stub.Stop(robot_pb2.StopRequest(), timeout=30)
            assert stopped.state == "done"
        assert len(engine_urls(engine)) == 30
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


def test_kill_9_resumes_from_checkpoint(tmp_path: Path, engine: LocalEngine, web: LocalWeb) -> None:
    seed = web.url("/p0.html")
    proc, address = start_robot(tmp_path, engine, "--autostart", "--seeds", seed)
    checkpoint = tmp_path / "state" / "checkpoint.json"
    try:
        wait_for(lambda: checkpoint.exists() and len(engine_urls(engine)) >= 45, 60)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    acked_before = engine_urls(engine)
    fetched_before = [a.path for a in web.log if a.path.startswith("/p")]
    assert len(fetched_before) < N_PAGES
    state = json.loads(checkpoint.read_text())
    assert state["counters"]["pages_indexed"] <= len(
        acked_before
    )  # a checkpoint never runs ahead of the engine

    # restart without seeds: it resumes from the checkpoint and finishes the crawl
    proc, address = start_robot(tmp_path, engine)
    try:
        wait_for(lambda: status(address).state == "done", 60)
        final = status(address)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    page_paths = [a.path for a in web.log if a.path.startswith("/p")]
    refetched = len(page_paths) - len(set(page_paths))
    # nothing lost: every page the engine acknowledged is still there, and the crawl completed
    after = engine_urls(engine)
    assert acked_before <= after
    assert after == {web.url(f"/p{i}.html") for i in range(N_PAGES)}
    # at most about one checkpoint interval refetched (plus what was in flight or queued at the crash)
    print(f"refetched {refetched} of {len(fetched_before)} fetched before the kill")
    assert refetched <= INTERVAL + 4 + 16, refetched
    assert final.pages_fetched >= N_PAGES
    assert not any(p.startswith("/never/") for p in page_paths)
