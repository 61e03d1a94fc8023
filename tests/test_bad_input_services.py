"""Bad gRPC input against real service processes: empty, huge (over the message limit), invalid UTF-8 and
malformed requests get a clear status code and message; no service crashes or leaks threads."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from oasis.cluster.config import ClusterConfig, TopicConfig
from oasis.cluster.launcher import Cluster, bring_up, health_status
from oasis.runtime.clients import EngineClient, IndexDocument
from oasis.runtime.service import MAX_MESSAGE_BYTES
from oasis.v1 import broker_pb2, directory_pb2, engine_pb2

INVALID_UTF8 = b"\x0a\x02\xff\xfe"  # field 1 (a string in every request below) holding bytes ff fe
CORRUPT = b"\x0a\x09ab"  # field 1 claims 9 bytes, 2 follow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    config = ClusterConfig(
        topics=(TopicConfig(name="databases", description="sql databases", keywords=("sql", "table")),)
    )
    running = bring_up(config, tmp_path_factory.mktemp("bad-input"), robots=False, log_level="WARNING")
    client = EngineClient(running.get("databases").address)
    try:
        client.index(
            [
                IndexDocument(url=f"http://db.test/{i}", title=f"table {i}", text="sql table index")
                for i in range(5)
            ]
        )
    finally:
        client.close()
    try:
        yield running
    finally:
        running.down()


def threads_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no Threads line")


def raw_call(address: str, method: str, payload: bytes) -> grpc.RpcError:
    with grpc.insecure_channel(address) as channel:
        call: Callable[..., bytes] = channel.unary_unary(method)
        with pytest.raises(grpc.RpcError) as info:
            call(payload, timeout=10)
    return info.value


INVALID = grpc.StatusCode.INVALID_ARGUMENT
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
CASES = {
    "engine": ("/oasis.v1.Engine/Search", engine_pb2.SearchRequest),
    "directory": ("/oasis.v1.Directory/Route", directory_pb2.RouteRequest),
    "broker": ("/oasis.v1.Broker/Search", broker_pb2.BrokerSearchRequest),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_bad_requests_get_clear_errors_and_service_keeps_serving(cluster: Cluster, kind: str) -> None:
    record = cluster.get("databases") if kind == "engine" else cluster.get(kind)
    method, message = CASES[kind]
    before = threads_of(record.pid)
    for _ in range(3):
        for payload, code, words in (
            (message(query="").SerializeToString(), INVALID, "empty"),
            (message(query="x" * 100_000).SerializeToString(), INVALID, "long|limit"),
            (message(query="x" * (MAX_MESSAGE_BYTES + 1)).SerializeToString(), EXHAUSTED, "larger than max"),
            (INVALID_UTF8, INVALID, "utf-8"),
            (CORRUPT, INVALID, "malformed"),
        ):  # fmt: skip
            error = raw_call(record.address, method, payload)
            assert error.code() == code, (payload[:20], error.code(), error.details())
            assert re.search(words, (error.details() or "").lower()), error.details()
    assert health_status(record.address) == "SERVING"
    with grpc.insecure_channel(record.address) as channel:
        ok = channel.unary_unary(method)(message(query="sql table").SerializeToString(), timeout=10)
    assert ok is not None
    assert threads_of(record.pid) <= before + 4  # no thread per bad request left behind
