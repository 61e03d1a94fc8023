"""TLS (a server certificate from a CA made in the test) and the shared token across a WHOLE cluster started
by the launcher, configured only through the environment (``OASIS_TLS_CERT``/``OASIS_TLS_KEY``/
``OASIS_TLS_CA``/``OASIS_TOKEN``): every service serves TLS and demands the token, every service-to-service
client (engine -> directory, broker -> directory and engines, robot -> engine) and the CLI honour them, and a
client without the token, without the CA, or in plaintext is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import requests
import trustme

from oasis.cluster.config import ClusterConfig, RobotSettings, TopicConfig
from oasis.cluster.launcher import Cluster, bring_up
from oasis.runtime.clients import EngineClient, RobotClient
from oasis.runtime.service import Security, open_channel
from oasis.v1 import broker_pb2, broker_pb2_grpc, directory_pb2, engine_pb2, robot_pb2

TOKEN = "test-token-4f1c"


@pytest.fixture(scope="module")
def secure_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    d = tmp_path_factory.mktemp("pki")
    ca.cert_pem.write_to_path(str(d / "ca.pem"))
    cert.cert_chain_pems[0].write_to_path(str(d / "cert.pem"))
    cert.private_key_pem.write_to_path(str(d / "key.pem"))
    return {
        "OASIS_TLS_CERT": str(d / "cert.pem"),
        "OASIS_TLS_KEY": str(d / "key.pem"),
        "OASIS_TLS_CA": str(d / "ca.pem"),
        "OASIS_TOKEN": TOKEN,
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, secure_env: dict[str, str]) -> Iterator[Cluster]:
    config = ClusterConfig(
        topics=(
            TopicConfig(name="databases", description="SQL databases", keywords=("sql", "database", "query")),
            TopicConfig(name="python", description="Python", keywords=("python", "module", "function")),
        ),
        heartbeat_seconds=0.3,
        lease_seconds=3.0,
        web_corpus="synthetic:pages=60,hosts=2,topics=2,seed=3",
        robot=RobotSettings(min_delay=0.005, max_in_flight=4, max_pages=40, min_relevance=0.0),
    )
    saved = {k: os.environ.get(k) for k in secure_env}
    os.environ.update(secure_env)  # the launcher's children inherit it; so do this process's clients
    try:
        running = bring_up(config, tmp_path_factory.mktemp("secure"), log_level="WARNING")
    except BaseException:
        _restore(saved)
        raise
    try:
        yield running
    finally:
        running.down(grace=5.0)
        _restore(saved)


def _restore(saved: dict[str, str | None]) -> None:
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def cli(state: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OASIS_")}
    return subprocess.run(
        [sys.executable, "-m", "oasis.cli", *args, "--state-dir", str(state)],
        capture_output=True, text=True, timeout=60, env={**base, **env},
    )  # fmt: skip


def test_whole_cluster_runs_on_tls_and_token_from_the_environment(
    cluster: Cluster, secure_env: dict[str, str]
) -> None:
    # the robots crawled the replayed web and indexed through their TLS + token channels to the engines
    deadline = time.monotonic() + 60
    for name in ("databases", "python"):
        robot = RobotClient(cluster.get(f"robot-{name}").address)
        try:
            while robot.status().state != "done":
                assert time.monotonic() < deadline, robot.status()
                time.sleep(0.2)
            assert robot.status().pages_indexed > 0
        finally:
            robot.close()
        engine = EngineClient(cluster.get(name).address)
        try:
            assert engine.document_count() > 0
        finally:
            engine.close()
    # the CLI with the environment: status (health, document counts) and search (broker -> directory ->
    # engines, all over TLS with the token)
    status = cli(cluster.state_dir, secure_env, "status", "--json")
    assert status.returncode == 0, status.stderr
    services = json.loads(status.stdout)["services"]
    grpc_services = [s for s in services if s["kind"] not in ("web", "gateway")]
    assert len(grpc_services) == 6 and all(s["health"] == "SERVING" for s in grpc_services), services
    (gateway,) = [s for s in services if s["kind"] == "gateway"]  # HTTP; it reaches the broker over TLS
    assert gateway["health"] == "SERVING", gateway
    deadline = time.monotonic() + 10  # engines' summaries reach the directory with their next heartbeat
    while True:
        found = cli(cluster.state_dir, secure_env, "search", "sql database query", "--json")
        assert found.returncode == 0, found.stderr
        result = json.loads(found.stdout)
        if result["hits"] or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert result["hits"] and result["engines"]["databases"] == "ok", result
    # the HTTP gateway searches through the same TLS + token broker
    params = {"q": "sql database query", "format": "json"}
    reply = requests.get(f"http://{gateway['address']}/search", params=params, timeout=10)
    assert reply.status_code == 200 and reply.json()["results"], reply.text[:300]


@pytest.mark.parametrize(
    ("drop", "code"),
    [
        (("OASIS_TOKEN",), grpc.StatusCode.UNAUTHENTICATED),  # TLS but no token
        (("OASIS_TLS_CA", "OASIS_TLS_CERT", "OASIS_TLS_KEY", "OASIS_TOKEN"), grpc.StatusCode.UNAVAILABLE),
    ],
)
def test_clients_without_the_token_or_tls_are_refused(
    cluster: Cluster, secure_env: dict[str, str], drop: tuple[str, ...], code: grpc.StatusCode
) -> None:
    env = {k: v for k, v in secure_env.items() if k not in drop}
    proc = cli(cluster.state_dir, env, "search", "sql database")
    assert proc.returncode != 0
    assert code.name in proc.stderr, proc.stderr
    security = Security.from_env(env)
    calls = {
        "broker": ("/oasis.v1.Broker/Search", broker_pb2.BrokerSearchRequest(query="sql")),
        "directory": ("/oasis.v1.Directory/ListEngines", directory_pb2.ListEnginesRequest()),
        "databases": ("/oasis.v1.Engine/Stats", engine_pb2.StatsRequest()),
        "robot-databases": ("/oasis.v1.Robot/Status", robot_pb2.StatusRequest()),
    }
    for name, (method, request) in calls.items():
        with open_channel(cluster.get(name).address, security) as channel:
            with pytest.raises(grpc.RpcError) as info:
                channel.unary_unary(method)(request.SerializeToString(), timeout=5)
            assert info.value.code() == code, (name, info.value.code(), info.value.details())


def test_wrong_token_and_untrusted_ca_are_refused(cluster: Cluster, secure_env: dict[str, str]) -> None:
    address = cluster.get("broker").address
    request = broker_pb2.BrokerSearchRequest(query="sql")
    wrong = Security(tls_ca=Path(secure_env["OASIS_TLS_CA"]), token="not-the-token")
    with open_channel(address, wrong) as channel, pytest.raises(grpc.RpcError) as info:
        broker_pb2_grpc.BrokerStub(channel).Search(request, timeout=5)
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "token" in (info.value.details() or "")
    other = Path(secure_env["OASIS_TLS_CA"]).parent / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    untrusted = Security(tls_ca=other, token=TOKEN)
    with open_channel(address, untrusted) as channel, pytest.raises(grpc.RpcError) as info:
        broker_pb2_grpc.BrokerStub(channel).Search(request, timeout=5)
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE  # the server's certificate is not trusted
    good = Security(tls_ca=Path(secure_env["OASIS_TLS_CA"]), token=TOKEN)
    with open_channel(address, good) as channel:
        reply = broker_pb2_grpc.BrokerStub(channel).Search(request, timeout=5)
    assert {e.name for e in reply.engines} >= {"databases"}


def test_index_writes_for_another_topic_or_host_are_refused(tmp_path: Path) -> None:
    """Index writes go only through the engine's API: a writer naming another topic (``oasis-topic``
    metadata) is refused with NOT_FOUND and nothing is written; with allowed hosts configured, a URL on any
    other host is rejected in the acknowledgement while the rest of the batch is indexed."""
    from robot_testweb import TOPIC

    from oasis.engine.config import EngineConfig
    from oasis.engine.index import TopicIndex
    from oasis.engine.servicer import TOPIC_METADATA_KEY, EngineServicer, add_engine_servicer
    from oasis.runtime.service import ServerConfig, build_server
    from oasis.v1 import engine_pb2_grpc

    config = EngineConfig(
        name="db", topic=TOPIC, index_dir=tmp_path / "ix", allowed_hosts=frozenset({"db.test"})
    )
    index = TopicIndex.open(config.index_dir, TOPIC, limits=config.limits)
    running = build_server(
        ServerConfig(security=Security()), lambda s: add_engine_servicer(s, EngineServicer(index, config))
    )
    try:
        with open_channel(running.address, Security()) as channel:
            stub = engine_pb2_grpc.EngineStub(channel)

            def ops() -> Iterator[engine_pb2.IndexRequest]:
                for seq, url in enumerate(
                    ("http://db.test/a", "http://spam.test/b", "http://x.db.test/c"), 1
                ):
                    doc = engine_pb2.Document(url=url, title="t", text="sql table")
                    yield engine_pb2.IndexRequest(seq=seq, upsert=doc, flush=seq == 3)

            with pytest.raises(grpc.RpcError) as info:
                list(stub.Index(ops(), timeout=10, metadata=[(TOPIC_METADATA_KEY, "python")]))
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
            assert "serves topic 'databases'" in (info.value.details() or "")
            assert stub.Stats(engine_pb2.StatsRequest(), timeout=5).documents == 0

            acks = list(stub.Index(ops(), timeout=10, metadata=[(TOPIC_METADATA_KEY, TOPIC.name)]))
            rejected = [(r.seq, r.reason) for a in acks for r in a.rejected]
            assert [seq for seq, _ in rejected] == [2] and "allowed-hosts" in rejected[0][1]
            assert acks[-1].acked_through == 3
            hits = stub.Search(engine_pb2.SearchRequest(query="sql"), timeout=5).hits
            assert sorted(h.url for h in hits) == ["http://db.test/a", "http://x.db.test/c"]
    finally:
        running.stop(0)
        index.close()
