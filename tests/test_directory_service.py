"""Directory service over real gRPC on loopback, and its command line."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from oasis.directory.__main__ import add_directory
from oasis.directory.registry import Registry
from oasis.runtime.service import RunningServer, ServerConfig, build_server
from oasis.runtime.spawn import spawn_service
from oasis.v1 import common_pb2, directory_pb2, directory_pb2_grpc


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def summary(topic: str, terms: dict[str, int], cw: int = 1000) -> common_pb2.TopicSummary:
    return common_pb2.TopicSummary(
        topic=topic,
        documents=50,
        total_terms=cw,
        terms=[common_pb2.TermStat(term=t, df=df, cf=2 * df) for t, df in terms.items()],
        keywords=[topic],
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def server(clock: FakeClock) -> Iterator[RunningServer]:
    registry = Registry(lease_seconds=5.0, clock=clock)
    running = build_server(ServerConfig(max_workers=4), lambda s: add_directory(s, registry))
    yield running
    running.stop(0)


@pytest.fixture
def stub(server: RunningServer) -> Iterator[directory_pb2_grpc.DirectoryStub]:
    with grpc.insecure_channel(server.address) as channel:
        yield directory_pb2_grpc.DirectoryStub(channel)


def register(
    stub: directory_pb2_grpc.DirectoryStub, name: str, port: int, s: common_pb2.TopicSummary
) -> float:
    info = directory_pb2.EngineInfo(name=name, address=f"127.0.0.1:{port}", summary=s)
    reply = stub.Register(directory_pb2.RegisterRequest(engine=info), timeout=5)
    return reply.lease_seconds


def test_register_route_heartbeat_expire(stub: directory_pb2_grpc.DirectoryStub, clock: FakeClock) -> None:
    assert register(stub, "pg", 7001, summary("postgres", {"databas": 40, "tabl": 30})) == 5.0
    register(stub, "py", 7002, summary("python", {"modul": 40, "databas": 2}))
    register(stub, "dj", 7003, summary("django", {"templat": 40}))
    reply = stub.Route(directory_pb2.RouteRequest(query="database tables", k=0), timeout=5)
    assert [e.name for e in reply.engines] == ["pg", "py"]
    assert reply.engines[0].address == "127.0.0.1:7001"
    assert reply.engines[0].score > reply.engines[1].score > 0.4
    assert list(reply.skipped) == ["dj"]
    assert [
        e.name for e in stub.Route(directory_pb2.RouteRequest(query="database", k=1), timeout=5).engines
    ] == ["pg"]

    clock.now += 4.0
    assert stub.Heartbeat(directory_pb2.HeartbeatRequest(name="pg"), timeout=5).known
    clock.now += 2.0  # py and dj silent for 6 s > 5 s lease
    names = [e.name for e in stub.ListEngines(directory_pb2.ListEnginesRequest(), timeout=5).engines]
    assert names == ["pg"]
    hb = stub.Heartbeat(directory_pb2.HeartbeatRequest(name="py"), timeout=5)
    assert hb.known is False
    assert stub.Deregister(directory_pb2.DeregisterRequest(name="pg"), timeout=5).removed
    assert stub.ListEngines(directory_pb2.ListEnginesRequest(), timeout=5).engines == []


def test_heartbeat_can_refresh_the_summary(stub: directory_pb2_grpc.DirectoryStub) -> None:
    register(stub, "pg", 7001, summary("postgres", {"databas": 40}))
    stub.Heartbeat(
        directory_pb2.HeartbeatRequest(name="pg", summary=summary("postgres", {"vacuum": 9})), timeout=5
    )
    info = stub.ListEngines(directory_pb2.ListEnginesRequest(), timeout=5).engines[0]
    assert [t.term for t in info.summary.terms] == ["vacuum"]
    assert info.summary.terms[0].df == 9


@pytest.mark.parametrize(
    ("query", "k", "message"),
    [
        ("", 0, "empty query"),
        ("   ", 0, "empty query"),
        ("x" * 100_000, 0, "longer than"),
        ("sql", -1, "k must"),
    ],
)
def test_bad_route_requests_are_invalid_argument_and_service_keeps_serving(
    stub: directory_pb2_grpc.DirectoryStub, query: str, k: int, message: str
) -> None:
    register(stub, "pg", 7001, summary("postgres", {"sql": 4}))
    with pytest.raises(grpc.RpcError) as info:
        stub.Route(directory_pb2.RouteRequest(query=query, k=k), timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (info.value.details() or "")
    assert [e.name for e in stub.Route(directory_pb2.RouteRequest(query="sql"), timeout=5).engines] == ["pg"]


@pytest.mark.parametrize(
    ("name", "address", "message"), [("", "127.0.0.1:1", "empty engine name"), ("a", "nowhere", "host:port")]
)
def test_bad_registration_is_invalid_argument(
    stub: directory_pb2_grpc.DirectoryStub, name: str, address: str, message: str
) -> None:
    with pytest.raises(grpc.RpcError) as info:
        stub.Register(
            directory_pb2.RegisterRequest(engine=directory_pb2.EngineInfo(name=name, address=address)),
            timeout=5,
        )
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (info.value.details() or "")
    assert stub.ListEngines(directory_pb2.ListEnginesRequest(), timeout=5).engines == []


def test_command_line_serves_writes_address_file_and_drains_on_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "directory.log"
    directory = spawn_service(
        [sys.executable, "-m", "oasis.directory", "--lease-seconds", "0.5"],
        tmp_path / "directory.json",
        timeout=20,
        name="directory",
        log=log,
    )
    proc = directory.process
    try:
        assert directory.info["pid"] == proc.pid
        with grpc.insecure_channel(directory.address) as channel:
            stub = directory_pb2_grpc.DirectoryStub(channel)
            assert register(stub, "pg", 7001, summary("postgres", {"sql": 4})) == 0.5
            assert stub.Heartbeat(directory_pb2.HeartbeatRequest(name="pg"), timeout=5).known
            time.sleep(0.7)  # real lease of 0.5 s runs out
            assert not stub.Heartbeat(directory_pb2.HeartbeatRequest(name="pg"), timeout=5).known
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        assert proc.returncode == 0, log.read_text()
