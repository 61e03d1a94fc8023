"""Shared gRPC server runtime: health, reflection, message limits, graceful drain, address file.

Every Oasis service builds its server with :func:`build_server`, adds its servicer, and calls
:func:`run_until_signal`. The server binds to loopback on an ephemeral port by default and writes its
address to ``address_file`` (JSON) once it is SERVING, which is how the launcher finds it.

Bind vs advertise (as Elasticsearch's ``network.host`` / ``network.publish_host``): ``host`` is where the
server listens, ``advertise`` what it tells others (the directory, the address file). A wildcard bind
(``0.0.0.0``, ``::``) needs an explicit ``advertise``; an advertised wildcard is refused at start, because
another host handed ``0.0.0.0:PORT`` would connect to itself.
"""

from __future__ import annotations

import argparse
import hmac
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from oasis.runtime.addresses import check_advertised, check_port, join_host_port, split_host_port
from oasis.runtime.files import FileWriteError, write_json_atomic
from oasis.runtime.logs import add_log_arguments
from oasis.runtime.logs import configure_logging as configure_logging  # re-exported: entry points use it
from oasis.runtime.metrics import (
    MetricsInterceptor,
    MetricsServer,
    add_metrics_argument,
    start_metrics_server,
)

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 8 * 1024 * 1024  # explicit limit for every request and reply (8 MiB)


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 0
    max_workers: int = 16
    max_message_bytes: int = MAX_MESSAGE_BYTES
    grace_seconds: float = 5.0
    # NOT_SERVING is visible for this long before the server stops taking new calls (lets balancers and
    # health probes see it), then in-flight calls get grace_seconds to finish.
    not_serving_seconds: float = 0.2
    address_file: Path | None = None
    metrics_port: int | None = None  # Prometheus /metrics on host (0: ephemeral); None: no metrics at all
    security: Security = field(default_factory=lambda: Security.from_env())
    # what others are told: HOST (the bound port is added) or HOST:PORT (a NAT / Service port); None: host
    advertise: str | None = None

    def __post_init__(self) -> None:
        check_port(self.port)
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"metrics_port must be in [0, 65535] or None, got {self.metrics_port}")
        check_advertised(self.host, self.advertise)
        if self.max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        if self.grace_seconds < 0 or self.not_serving_seconds < 0:
            raise ValueError("grace_seconds and not_serving_seconds must be >= 0")
        if self.max_message_bytes < 1024:
            raise ValueError("max_message_bytes must be >= 1024")


def advertised_address(host: str, bound_port: int, advertise: str | None) -> str:
    """The address others are told: ``advertise`` (with the bound port unless it names one), else the bind."""
    check_advertised(host, advertise)
    if advertise is None:
        return join_host_port(host, bound_port)
    advertised_host, port = split_host_port(advertise.strip())
    return join_host_port(advertised_host, bound_port if port is None else port)


def add_advertise_argument(parser: Any) -> None:
    """The ``--advertise`` flag every service takes beside ``--host`` (the bind address)."""
    parser.add_argument(
        "--advertise",
        default=os.environ.get("OASIS_ADVERTISE") or None,
        help="address to publish (HOST or HOST:PORT; default $OASIS_ADVERTISE, else --host); "
        "required when --host is a wildcard such as 0.0.0.0",
    )


@dataclass(frozen=True, kw_only=True)
class Security:
    """Transport security and authentication between Oasis services (off by default: loopback only).

    - ``tls_cert``/``tls_key``: the server presents this certificate (PEM); clients then need ``tls_ca``.
    - ``tls_ca``: clients verify servers against this CA bundle (PEM) and connect with TLS.
    - ``token``: a shared secret; servers refuse calls without ``authorization: Bearer <token>``
      (UNAUTHENTICATED), except the standard health service, so probes keep working.

    Built from the environment (``OASIS_TLS_CERT``, ``OASIS_TLS_KEY``, ``OASIS_TLS_CA``, ``OASIS_TOKEN``) so
    the launcher hands one setting to every process of a cluster.
    """

    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_ca: Path | None = None
    token: str | None = None

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together")
        if self.token is not None and (not self.token or any(c.isspace() for c in self.token)):
            raise ValueError("token must be non-empty and contain no whitespace")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Security:
        env = os.environ if env is None else env

        def path(name: str) -> Path | None:
            value = env.get(name)
            return Path(value) if value else None

        return cls(
            tls_cert=path("OASIS_TLS_CERT"),
            tls_key=path("OASIS_TLS_KEY"),
            tls_ca=path("OASIS_TLS_CA"),
            token=env.get("OASIS_TOKEN") or None,
        )

    def server_credentials(self) -> grpc.ServerCredentials | None:
        if self.tls_cert is None or self.tls_key is None:
            return None
        return grpc.ssl_server_credentials([(self.tls_key.read_bytes(), self.tls_cert.read_bytes())])


AUTH_HEADER = "authorization"
UNAUTHENTICATED_EXEMPT = ("/grpc.health.v1.Health/",)


class TokenAuthInterceptor(grpc.ServerInterceptor):
    """Refuse every call (but health checks) that lacks the shared bearer token."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or details.method.startswith(UNAUTHENTICATED_EXEMPT):
            return handler
        metadata = dict(details.invocation_metadata or ())
        given = str(metadata.get(AUTH_HEADER, "")).encode()
        if hmac.compare_digest(given, self._expected):
            return handler
        return _deny(handler, "missing or wrong bearer token" if given else "authentication required")


class MalformedRequestInterceptor(grpc.ServerInterceptor):
    """Turn an undecodable request (corrupt wire format, invalid UTF-8 in a string field) into
    INVALID_ARGUMENT with the decoder's message, instead of gRPC's generic INTERNAL error.

    Unary-request methods receive raw bytes and decode them here; streaming requests keep gRPC's handling.
    """

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or handler.request_streaming or handler.request_deserializer is None:
            return handler
        decode = handler.request_deserializer
        inner = handler.unary_stream if handler.response_streaming else handler.unary_unary

        def behavior(raw: bytes, context: grpc.ServicerContext) -> Any:
            try:
                request = decode(raw)
            except Exception as exc:  # the protobuf runtime raises DecodeError (or ValueError)
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"malformed request for {details.method}: {exc}"
                )
            return inner(request, context)

        factory = (
            grpc.unary_stream_rpc_method_handler
            if handler.response_streaming
            else grpc.unary_unary_rpc_method_handler
        )
        return factory(behavior, request_deserializer=None, response_serializer=handler.response_serializer)


def _deny(handler: Any, message: str) -> Any:
    def abort(request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    kwargs = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(abort, **kwargs)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(abort, **kwargs)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(abort, **kwargs)
    return grpc.unary_unary_rpc_method_handler(abort, **kwargs)


class _TokenClientInterceptor(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    def __init__(self, token: str) -> None:
        self._header = (AUTH_HEADER, f"Bearer {token}")

    def _details(self, details: Any) -> Any:
        metadata = [*(details.metadata or ()), self._header]
        return _CallDetails(
            details.method,
            details.timeout,
            metadata,
            details.credentials,
            getattr(details, "wait_for_ready", None),
            getattr(details, "compression", None),
        )

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


@dataclass(frozen=True)
class _CallDetails(grpc.ClientCallDetails):
    method: str
    timeout: float | None
    metadata: Any
    credentials: Any
    wait_for_ready: Any
    compression: Any


def open_channel(
    address: str, security: Security | None = None, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> grpc.Channel:
    """A client channel to another Oasis service: TLS when a CA is configured, the bearer token when one is,
    and the same explicit message limits as the servers."""
    security = Security.from_env() if security is None else security
    options = channel_options(max_message_bytes)
    if security.tls_ca is not None:
        creds = grpc.ssl_channel_credentials(root_certificates=security.tls_ca.read_bytes())
        channel = grpc.secure_channel(address, creds, options=options)
    else:
        channel = grpc.insecure_channel(address, options=options)
    if security.token:
        channel = grpc.intercept_channel(channel, _TokenClientInterceptor(security.token))
    return channel


# A restarted peer is found again within about this (gRPC adds +-20 % jitter), not gRPC's default of up to
# 120 s. The back-off does not grow: a reconnect attempt to a dead loopback peer every 250 ms costs nothing,
# and a growing back-off (it was allowed to reach 1 s) delayed re-registration after a directory restart to
# ~1.2 s, four heartbeats of a 0.3 s heartbeat (tests/test_reliability_faults.py).
RECONNECT_BACKOFF_MS = 250


def channel_options(max_message_bytes: int = MAX_MESSAGE_BYTES) -> list[tuple[str, int]]:
    return [
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.initial_reconnect_backoff_ms", RECONNECT_BACKOFF_MS),
        ("grpc.min_reconnect_backoff_ms", RECONNECT_BACKOFF_MS),
        ("grpc.max_reconnect_backoff_ms", RECONNECT_BACKOFF_MS),
    ]


@dataclass
class RunningServer:
    """A started gRPC server with its health servicer, advertised address and bound address."""

    server: grpc.Server
    health: health.HealthServicer
    address: str  # advertised: what the directory and the address file get
    service_names: tuple[str, ...]
    config: ServerConfig
    metrics: MetricsServer | None = None
    bound: str = ""  # where it listens (HOST:PORT of the bind)
    _stopped: threading.Event = field(default_factory=threading.Event)

    def set_serving(self, serving: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        for name in ("", *self.service_names):
            self.health.set(name, status)

    def stop(self, grace: float | None = None) -> None:
        """Report NOT_SERVING, refuse new calls, and drain in-flight calls for up to ``grace`` seconds."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.set_serving(False)
        if self.config.not_serving_seconds:
            time.sleep(self.config.not_serving_seconds)
        self.server.stop(self.config.grace_seconds if grace is None else grace).wait()
        if self.metrics is not None:
            self.metrics.stop()
        logger.info("server on %s stopped", self.address)

    def wait(self) -> None:
        self.server.wait_for_termination()


def build_server(
    config: ServerConfig,
    add_servicers: Callable[[grpc.Server], Iterable[str]],
) -> RunningServer:
    """Create, populate and start a server.

    ``add_servicers`` registers the service's servicers on the server and returns their full service names
    (e.g. ``oasis.v1.Engine``) for health and reflection.
    """
    interceptors: list[grpc.ServerInterceptor] = []
    if config.metrics_port is not None:  # first: it also counts the calls the others refuse
        interceptors.append(MetricsInterceptor())
    if config.security.token:
        interceptors.append(TokenAuthInterceptor(config.security.token))
    interceptors.append(MalformedRequestInterceptor())
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=config.max_workers, thread_name_prefix="grpc"),
        options=channel_options(config.max_message_bytes),
        maximum_concurrent_rpcs=config.max_workers * 4,
        interceptors=interceptors,
    )
    names = tuple(add_servicers(server))
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (*names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME), server
    )
    credentials = config.security.server_credentials()
    if credentials is None:
        port = server.add_insecure_port(f"{config.host}:{config.port}")
    else:
        port = server.add_secure_port(f"{config.host}:{config.port}", credentials)
    if port == 0:
        raise OSError(f"could not bind {config.host}:{config.port}")
    metrics = None if config.metrics_port is None else start_metrics_server(config.host, config.metrics_port)
    server.start()
    address = advertised_address(config.host, port, config.advertise)
    bound = join_host_port(config.host, port)
    running = RunningServer(server, health_servicer, address, names, config, metrics, bound=bound)
    running.set_serving(True)
    if config.address_file is not None:
        extra: dict[str, Any] = {}
        if metrics is not None:  # published like the service: on the advertised host
            metrics_port = split_host_port(metrics.address)[1]
            advertised_host = split_host_port(address)[0]
            extra["metrics"] = join_host_port(advertised_host, metrics_port or 0)
        try:
            write_address_file(config.address_file, running.address, os.getpid(), extra, bound=bound)
        except FileWriteError as exc:
            # a full or read-only disk: the service stops with one line (the launcher shows it), no traceback
            running.stop(grace=0)
            raise SystemExit(f"error: {exc}") from None
    logger.info("serving %s on %s (advertised as %s)", ", ".join(names), bound, running.address)
    return running


def write_address_file(
    path: Path, address: str, pid: int, extra: Mapping[str, Any] | None = None, *, bound: str | None = None
) -> None:
    """Write ``{"address", "pid", **extra}`` (``extra``: e.g. ``"metrics"``; and ``bound``, the listening
    address, when it differs from the advertised one) atomically: a reader never sees a half-written file."""
    data: dict[str, Any] = {**(extra or {}), "address": address, "pid": pid}
    if bound is not None and bound != address:
        data["bound"] = bound
    write_json_atomic(path, data)


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags every gRPC service shares: ``--metrics-port`` and ``--log-format``."""
    add_metrics_argument(parser)
    add_log_arguments(parser)


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """A gRPC service's command line: where it binds (``--host``, ``--port``) and what it publishes
    (``--advertise``), the file it writes once SERVING (``--address-file``), ``--log-level`` and
    :func:`add_service_arguments`' flags. :func:`server_config` reads them back."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    add_advertise_argument(parser)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--address-file", type=Path, default=None, help="write {address, pid} JSON once SERVING"
    )
    parser.add_argument("--log-level", default="INFO")
    add_service_arguments(parser)


def server_config(args: argparse.Namespace, *, max_workers: int | None = None) -> ServerConfig:
    """The :class:`ServerConfig` of a command line built with :func:`add_server_arguments` (ValueError: a
    port out of range, a wildcard host with nothing to advertise)."""
    return ServerConfig(
        host=args.host,
        port=args.port,
        address_file=args.address_file,
        advertise=args.advertise,
        metrics_port=args.metrics_port,
        max_workers=ServerConfig.max_workers if max_workers is None else max_workers,
    )


def stop_signal(what: str = "stopping") -> threading.Event:
    """An event that SIGTERM or SIGINT sets (logged as ``signal N: WHAT``); wait for it with
    :func:`wait_until_set`."""
    done = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        logger.info("signal %d: %s", signum, what)
        done.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return done


def wait_until_set(done: threading.Event) -> None:
    """Block until ``done`` is set, waking up now and then: a signal delivered to another thread (gRPC's, the
    metrics server's) does not interrupt the main thread's blocking wait, and Python runs signal handlers
    only in the main thread."""
    while not done.wait(0.25):
        pass


def run_until_signal(running: RunningServer, on_stop: Callable[[], None] | None = None) -> None:
    """Block until SIGTERM or SIGINT, then go NOT_SERVING, drain in-flight calls and run ``on_stop``."""
    wait_until_set(stop_signal("draining"))
    running.stop()
    if on_stop is not None:
        on_stop()
