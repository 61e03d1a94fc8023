"""Bind vs advertise: what a service publishes is always an address another host can reach."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from oasis.runtime.addresses import check_advertised, check_target, split_host_port
from oasis.runtime.service import ServerConfig, advertised_address, build_server


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", ""])
def test_wildcard_bind_without_advertise_is_refused_at_start(host: str) -> None:
    with pytest.raises(ValueError, match="--advertise"):
        ServerConfig(host=host)


@pytest.mark.parametrize("advertise", ["0.0.0.0", "0.0.0.0:7401", "[::]:7401", "::"])
def test_wildcard_advertise_is_refused(advertise: str) -> None:
    with pytest.raises(ValueError, match="wildcard"):
        ServerConfig(host="0.0.0.0", advertise=advertise)


@pytest.mark.parametrize(
    ("host", "port", "advertise", "expected"),
    [
        ("127.0.0.1", 5000, None, "127.0.0.1:5000"),
        ("0.0.0.0", 5000, "10.0.0.2", "10.0.0.2:5000"),
        ("0.0.0.0", 5000, "engine-0.engines:7410", "engine-0.engines:7410"),  # a Service port
        ("::", 5000, "fd00::2", "[fd00::2]:5000"),
        ("::", 5000, "[fd00::2]:81", "[fd00::2]:81"),
    ],
)
def test_advertised_address(host: str, port: int, advertise: str | None, expected: str) -> None:
    assert advertised_address(host, port, advertise) == expected
    assert split_host_port(expected)[1] == int(expected.rsplit(":", 1)[1])


def test_bad_advertised_port_is_refused() -> None:
    with pytest.raises(ValueError, match="port"):
        check_advertised("0.0.0.0", "host:http")
    with pytest.raises(ValueError, match="port"):
        check_advertised("0.0.0.0", "host:70000")


def test_server_on_every_interface_publishes_the_advertised_address(tmp_path: Path) -> None:
    config = ServerConfig(host="0.0.0.0", advertise="127.0.0.1", address_file=tmp_path / "a.json")
    running = build_server(config, lambda server: [])
    try:
        port = running.bound.rsplit(":", 1)[1]
        assert running.bound == f"0.0.0.0:{port}"
        assert running.address == f"127.0.0.1:{port}"
        data = json.loads((tmp_path / "a.json").read_text())
        assert data == {"address": running.address, "bound": running.bound, "pid": os.getpid()}
        with grpc.insecure_channel(running.address) as channel:  # reachable where it says it is
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        running.stop(0)


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "oasis.directory"],
        ["-m", "oasis.broker", "--directory", "127.0.0.1:1"],
        ["-m", "oasis.engine", "--name", "a", "--topic", "a", "--keywords", "sql", "--index-dir", "IDX"],
        ["-m", "oasis.robot", "--name", "r", "--engine", "127.0.0.1:1", "--state-dir", "IDX"],
    ],
)
def test_every_service_refuses_a_wildcard_without_advertise_with_a_clear_error(
    argv: list[str], tmp_path: Path
) -> None:
    argv = [a.replace("IDX", str(tmp_path / "idx")) for a in argv]
    env = {k: v for k, v in os.environ.items() if k != "OASIS_ADVERTISE"}
    proc = subprocess.run(
        [sys.executable, *argv, "--host", "0.0.0.0", "--address-file", str(tmp_path / "a.json")],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "--advertise" in proc.stderr and "0.0.0.0" in proc.stderr
    assert not (tmp_path / "a.json").exists()  # never published


ENGINE = ["-m", "oasis.engine", "--name", "a", "--topic", "a", "--keywords", "sql", "--index-dir", "IDX"]
ROBOT = ["-m", "oasis.robot", "--name", "r", "--engine", "127.0.0.1:1", "--state-dir", "IDX"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-m", "oasis.directory", "--port", "70000"], "error: port must be in [0, 65535]"),
        (
            ["-m", "oasis.directory", "--lease-seconds", "-1"],
            "error: lease_seconds must be > 0",
        ),  # a traceback
        (["-m", "oasis.directory", "--max-engines", "0"], "error: max_engines must be >= 1"),
        (
            ["-m", "oasis.broker", "--directory", "127.0.0.1:1", "--metrics-port", "-2"],
            "error: argument --metrics-port: port must be in [0, 65535] or off",
        ),
        ([*ENGINE, "--port", "-1"], "error: port must be in [0, 65535]"),
        ([*ROBOT, "--port", "99999"], "error: port must be in [0, 65535]"),
        # an OverflowError traceback before
        (["-m", "oasis.gateway", "--broker", "127.0.0.1:1", "--port", "70000"], "port must be in [0, 65535]"),
        (  # accepted before: no page would ever count as the topic's
            ["-m", "oasis.cluster.evaluator", "--state-dir", "IDX", "--min-relevance", "2"],
            "error: --min-relevance must be in [0, 1]",
        ),
    ],
)
def test_every_service_refuses_a_bad_setting_with_one_line(
    argv: list[str], message: str, tmp_path: Path
) -> None:
    argv = [a.replace("IDX", str(tmp_path / "idx")) for a in argv]
    cmd = [sys.executable, *argv, "--address-file", str(tmp_path / "a.json")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "a.json").exists()  # never published


def test_the_evaluator_whose_address_file_cannot_be_written_says_so_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    cmd = [sys.executable, "-m", "oasis.cluster.evaluator", "--state-dir", str(tmp_path)]
    proc = subprocess.run(
        [*cmd, "--address-file", str(blocker / "a.json")], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"cannot write {blocker / 'a.json'}" in proc.stderr and proc.stderr.startswith("error: ")


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("127.0.0.1:99999", "port must be in [1, 65535], got 99999"),
        ("127.0.0.1:0", "port must be in [1, 65535], got 0"),
        ("notanaddress", "is not HOST:PORT"),
        (":7000", "is not HOST:PORT"),
        ("host:http", "bad port"),
        ("[::1]", "is not HOST:PORT"),
    ],
)
def test_an_address_to_call_is_checked(address: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        check_target(address)
    assert check_target(" 127.0.0.1:7401 ") == "127.0.0.1:7401"
    assert check_target("[::1]:7401") == "[::1]:7401"


def test_a_port_past_65535_is_refused_not_wrapped_onto_another_service() -> None:
    """gRPC reads ``127.0.0.1:99999`` as port 34463 (99999 modulo 65536): ``oasis search --broker`` with a
    mistyped port asked whatever listened there. A real listener on port P stands for that service; the search
    given P + 65536 must not reach it (before: it connected)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "oasis.cli", "search", "--broker", f"127.0.0.1:{port + 65536}", "socket"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2
        wrapped = port + 65536
        said = f"argument --broker: '127.0.0.1:{wrapped}': port must be in [1, 65535], got {wrapped}"
        assert done.stderr.strip().splitlines()[-1] == f"oasis search: error: {said}"
        listener.settimeout(0.5)  # the search has ended: a connection it made would be waiting here
        with pytest.raises(TimeoutError):
            listener.accept()[0].close()  # nobody came
