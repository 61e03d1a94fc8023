"""The shared server runtime: health, reflection, message limits, drain on SIGTERM, address file."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from oasis.runtime.service import RunningServer, ServerConfig, build_server
from oasis.runtime.spawn import spawn_service

ECHO = "test.Echo"


def _add_echo(server: grpc.Server) -> list[str]:
    def echo(request: bytes, context: grpc.ServicerContext) -> bytes:
        if request.startswith(b"sleep:"):
            time.sleep(float(request[6:]))
        return request

    handler = grpc.method_handlers_generic_handler(ECHO, {"Call": grpc.unary_unary_rpc_method_handler(echo)})
    server.add_generic_rpc_handlers((handler,))
    return [ECHO]


@pytest.fixture
def running(tmp_path: Path) -> Iterator[RunningServer]:
    config = ServerConfig(max_message_bytes=64 * 1024, address_file=tmp_path / "addr.json", grace_seconds=1.0)
    server = build_server(config, _add_echo)
    yield server
    server.stop(0)


def _call(channel: grpc.Channel, payload: bytes, timeout: float = 5.0) -> bytes:
    method = channel.unary_unary(f"/{ECHO}/Call")
    return bytes(method(payload, timeout=timeout))


def test_binds_loopback_ephemeral_and_writes_address(running: RunningServer, tmp_path: Path) -> None:
    host, port = running.address.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    data = json.loads((tmp_path / "addr.json").read_text())
    assert data == {"address": running.address, "pid": os.getpid()}


def test_health_and_reflection(running: RunningServer) -> None:
    with grpc.insecure_channel(running.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", ECHO):
            reply = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        names = {s.name for r in replies for s in r.list_services_response.service}
        assert {ECHO, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= names
        running.set_serving(False)
        reply = health.Check(health_pb2.HealthCheckRequest(service=ECHO), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING


def test_message_size_limit_is_enforced_and_server_keeps_serving(running: RunningServer) -> None:
    with grpc.insecure_channel(running.address) as channel:
        with pytest.raises(grpc.RpcError) as info:
            _call(channel, b"x" * (128 * 1024))
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert _call(channel, b"still here") == b"still here"


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="port"):
        ServerConfig(port=70000)
    with pytest.raises(ValueError, match="max_workers"):
        ServerConfig(max_workers=0)


SERVER_SCRIPT = textwrap.dedent(
    """
    import sys, time, grpc
    from pathlib import Path
    from oasis.runtime.service import ServerConfig, build_server, run_until_signal

    def add(server):
        def echo(request, context):
            if request.startswith(b"sleep:"):
                time.sleep(float(request[6:]))
            return request
        call = grpc.unary_unary_rpc_method_handler(echo)
        h = grpc.method_handlers_generic_handler("test.Echo", {"Call": call})
        server.add_generic_rpc_handlers((h,))
        return ["test.Echo"]

    running = build_server(ServerConfig(address_file=Path(sys.argv[2]), grace_seconds=5.0,
                                        not_serving_seconds=0.5), add)
    run_until_signal(running, on_stop=lambda: print("stopped cleanly", flush=True))
    """
)


def test_sigterm_reports_not_serving_and_drains_in_flight_calls(tmp_path: Path) -> None:
    # sys.argv of ``python -c SCRIPT --address-file FILE`` is ["-c", "--address-file", FILE]
    log = tmp_path / "server.log"
    server = spawn_service(
        [sys.executable, "-c", SERVER_SCRIPT], tmp_path / "addr.json", timeout=30, name="server", log=log
    )
    proc = server.process
    try:
        with grpc.insecure_channel(server.address) as channel:
            method = channel.unary_unary(f"/{ECHO}/Call")
            in_flight = method.future(b"sleep:1.5", timeout=10)
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.2)
            health = health_pb2_grpc.HealthStub(channel)
            status = health.Check(health_pb2.HealthCheckRequest(service=ECHO), timeout=2).status
            assert status == health_pb2.HealthCheckResponse.NOT_SERVING
            assert in_flight.result() == b"sleep:1.5"  # drained, not cut off
        assert proc.wait(timeout=15) == 0
        assert "stopped cleanly" in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
