"""Engine registration with a directory over real gRPC: register, heartbeat with summaries, survive a
directory that forgets the engine or goes away and comes back, deregister on stop.

The directory here is a minimal in-test Directory servicer that records what it is told (the real one is
tested in test_directory_*.py), so these tests can make it forget and restart at will."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from oasis.engine.directory_client import (
    OWNER_FILE,
    DirectoryClient,
    DirectoryUnavailable,
    Registration,
    owner_token,
)
from oasis.engine.index import IndexLimits, TopicIndex, Upsert, make_upsert
from oasis.engine.servicer import summary_to_proto
from oasis.engine.topic import Topic
from oasis.runtime.service import RunningServer, ServerConfig, build_server
from oasis.v1 import directory_pb2, directory_pb2_grpc

LEASE = 0.6  # heartbeat every lease/3 = 0.2 s
TOPIC = Topic(name="space", description="space", keywords=("rocket",))


class RecordingDirectory(directory_pb2_grpc.DirectoryServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        self.engines: dict[str, directory_pb2.EngineInfo] = {}
        self.registers = 0
        self.lock = threading.Lock()

    def Register(self, request: directory_pb2.RegisterRequest, context: grpc.ServicerContext) -> object:
        with self.lock:
            self.engines[request.engine.name] = request.engine
            self.registers += 1
        return directory_pb2.RegisterReply(lease_seconds=LEASE)

    def Heartbeat(self, request: directory_pb2.HeartbeatRequest, context: grpc.ServicerContext) -> object:
        with self.lock:
            info = self.engines.get(request.name)
            if info is not None and request.HasField("summary"):
                info.summary.CopyFrom(request.summary)
        return directory_pb2.HeartbeatReply(known=info is not None, lease_seconds=LEASE)

    def Deregister(self, request: directory_pb2.DeregisterRequest, context: grpc.ServicerContext) -> object:
        with self.lock:
            removed = self.engines.pop(request.name, None) is not None
        return directory_pb2.DeregisterReply(removed=removed)


def serve(directory: RecordingDirectory, port: int = 0) -> RunningServer:
    def add(server: grpc.Server) -> list[str]:
        directory_pb2_grpc.add_DirectoryServicer_to_server(directory, server)
        return ["oasis.v1.Directory"]

    return build_server(ServerConfig(port=port, grace_seconds=0), add)


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[TopicIndex]:
    ix = TopicIndex.open(tmp_path / "ix", TOPIC, stats_max_age=0.0)
    yield ix
    ix.close()


def registration(index: TopicIndex, address: str) -> Registration:
    return Registration(
        DirectoryClient(address, timeout=1.0),
        name="e1",
        address="127.0.0.1:4242",
        summary_fn=lambda: (index.generation, summary_to_proto(index.summary(100))),
        heartbeat_seconds=5.0,  # the lease (0.6 s) sets the pace: every lease/3
    )


def test_register_heartbeat_summary_and_deregister(index: TopicIndex) -> None:
    directory = RecordingDirectory()
    server = serve(directory)
    reg = registration(index, server.address)
    try:
        reg.start()
        wait_for(lambda: "e1" in directory.engines)
        info = directory.engines["e1"]
        assert info.address == "127.0.0.1:4242" and info.summary.topic == "space"
        assert info.summary.documents == 0 and list(info.summary.keywords) == ["rocket"]
        doc = make_upsert(
            seq=1,
            url="http://a.org/",
            title="",
            text="rocket rocket",
            fetch_time=0,
            relevance=None,
            limits=IndexLimits(),
        )
        assert isinstance(doc, Upsert)
        index.apply([doc])
        wait_for(lambda: directory.engines["e1"].summary.documents == 1)
        assert [(t.term, t.df, t.cf) for t in directory.engines["e1"].summary.terms] == [("rocket", 1, 2)]
        wait_for(lambda: reg.heartbeats >= 3, timeout=3.0)  # every lease/3, not every 5 s
    finally:
        reg.stop()
        server.stop(0)
    assert "e1" not in directory.engines  # deregistered on stop
    assert not reg.registered


def test_reregisters_after_directory_forgets_or_restarts(index: TopicIndex) -> None:
    directory = RecordingDirectory()
    server = serve(directory)
    port = int(server.address.rsplit(":", 1)[1])
    reg = registration(index, server.address)
    try:
        reg.start()
        wait_for(lambda: reg.registrations == 1)
        with directory.lock:
            directory.engines.clear()  # lease expired on the directory's side: Heartbeat says known=false
        wait_for(lambda: reg.registrations == 2 and "e1" in directory.engines)
        server.stop(0)  # the directory goes away ...
        wait_for(lambda: not reg.registered)
        fresh = RecordingDirectory()
        server = serve(fresh, port=port)  # ... and a new one comes back on the same address
        # the directory records the engine before the client's Register call returns and counts it
        wait_for(lambda: "e1" in fresh.engines and reg.registrations == 3)
        assert reg.registrations == 3
    finally:
        reg.stop()
        server.stop(0)


def test_client_maps_rpc_errors_to_a_domain_error() -> None:
    client = DirectoryClient("127.0.0.1:1", timeout=0.5)
    try:
        with pytest.raises(DirectoryUnavailable, match="UNAVAILABLE"):
            client.deregister("e1")
    finally:
        client.close()


@pytest.mark.parametrize(
    "damage", [b"\xbb\x00\xff garbage", b"\0" * 32, b"short", "t\u00f6ken-with-an-umlaut-0123".encode()]
)
def test_a_damaged_owner_token_file_is_replaced_with_a_warning(
    tmp_path: Path, damage: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """The engine read its owner token with ``read_text``: bytes that are not UTF-8 stopped it at start with a
    ``UnicodeDecodeError`` traceback, and any other damage was sent to the directory as the token. Now a file
    that holds no token is replaced by a new one (the engine a new owner of its name), said once."""
    first = owner_token(tmp_path)
    assert owner_token(tmp_path) == first  # kept across restarts
    (tmp_path / OWNER_FILE).write_bytes(damage)
    with caplog.at_level(logging.WARNING):
        token = owner_token(tmp_path)
    assert token != first and len(token) == 32 and token.replace("-", "").replace("_", "").isalnum()
    assert (tmp_path / OWNER_FILE).read_text(encoding="ascii") == token
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        f"owner token file {tmp_path / OWNER_FILE} is damaged"
    ]
    assert owner_token(tmp_path) == token
