"""TLS with a certificate made in the test, and the shared-token option, on the shared server runtime."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import trustme
from grpc_health.v1 import health_pb2, health_pb2_grpc

from oasis.runtime.service import RunningServer, Security, ServerConfig, build_server, open_channel

SERVICE = "test.Echo"


def _add_echo(server: grpc.Server) -> list[str]:
    def echo(request: bytes, context: grpc.ServicerContext) -> bytes:
        return request

    def echo_stream(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        yield from requests

    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Call": grpc.unary_unary_rpc_method_handler(echo),
            "Stream": grpc.stream_stream_rpc_method_handler(echo_stream),
        },
    )
    server.add_generic_rpc_handlers((handler,))
    return [SERVICE]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    d = tmp_path_factory.mktemp("pki")
    paths = {"ca": d / "ca.pem", "cert": d / "cert.pem", "key": d / "key.pem"}
    ca.cert_pem.write_to_path(str(paths["ca"]))
    cert.cert_chain_pems[0].write_to_path(str(paths["cert"]))
    cert.private_key_pem.write_to_path(str(paths["key"]))
    return paths


def _serve(security: Security) -> RunningServer:
    return build_server(ServerConfig(security=security, not_serving_seconds=0), _add_echo)


def _call(channel: grpc.Channel, payload: bytes = b"hi") -> bytes:
    return bytes(channel.unary_unary(f"/{SERVICE}/Call")(payload, timeout=5))


def test_tls_server_accepts_verified_clients_only(pki: dict[str, Path]) -> None:
    server = _serve(Security(tls_cert=pki["cert"], tls_key=pki["key"]))
    try:
        with open_channel(server.address, Security(tls_ca=pki["ca"])) as channel:
            assert _call(channel) == b"hi"
        with open_channel(server.address, Security()) as plain, pytest.raises(grpc.RpcError) as info:
            _call(plain)  # a plaintext client cannot talk to a TLS server
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        other_ca = Path(pki["ca"].parent / "other.pem")
        trustme.CA().cert_pem.write_to_path(str(other_ca))
        with open_channel(server.address, Security(tls_ca=other_ca)) as wrong, pytest.raises(grpc.RpcError):
            _call(wrong)  # a certificate from a CA the client does not trust is refused
    finally:
        server.stop(0)


def test_token_is_required_except_for_health(pki: dict[str, Path]) -> None:
    server = _serve(Security(tls_cert=pki["cert"], tls_key=pki["key"], token="s3cret"))
    try:
        with open_channel(server.address, Security(tls_ca=pki["ca"], token="s3cret")) as good:
            assert _call(good) == b"hi"
            stream = good.stream_stream(f"/{SERVICE}/Stream")
            assert [bytes(b) for b in stream(iter([b"a", b"b"]), timeout=5)] == [b"a", b"b"]
        for token in (None, "wrong"):
            with open_channel(server.address, Security(tls_ca=pki["ca"], token=token)) as bad:
                with pytest.raises(grpc.RpcError) as info:
                    _call(bad)
                assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
                assert "token" in (info.value.details() or "") or "authentication" in (
                    info.value.details() or ""
                )
                with pytest.raises(grpc.RpcError) as sinfo:
                    list(bad.stream_stream(f"/{SERVICE}/Stream")(iter([b"a"]), timeout=5))
                assert sinfo.value.code() == grpc.StatusCode.UNAUTHENTICATED
                health = health_pb2_grpc.HealthStub(bad).Check(health_pb2.HealthCheckRequest(), timeout=5)
                assert health.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        server.stop(0)


def test_security_from_environment_and_validation(pki: dict[str, Path]) -> None:
    env = {"OASIS_TLS_CA": str(pki["ca"]), "OASIS_TOKEN": "t"}
    sec = Security.from_env(env)
    assert sec.tls_ca == pki["ca"] and sec.token == "t" and sec.tls_cert is None
    assert Security.from_env({}) == Security()
    with pytest.raises(ValueError, match="go together"):
        Security(tls_cert=pki["cert"])
    with pytest.raises(ValueError, match="whitespace"):
        Security(token="a b")
