"""Prometheus metrics of every Oasis service (prometheus-client, one registry per process).

* gRPC server metrics: :class:`MetricsInterceptor` (installed by :func:`oasis.runtime.service.build_server`
  when the service has a metrics port) counts every handled call and times it, by gRPC service, method
  and status code: ``oasis_rpc_server_handled_total`` and the histogram ``oasis_rpc_server_handling_seconds``.
* A service's own metrics: module-level counters/gauges it updates (:func:`counter`, :func:`gauge`,
  :func:`histogram`), or a :class:`SnapshotCollector` that reads the service's status once per scrape
  (no work on the hot path), registered by the entry point with :func:`register_collector`.
* Exposition: :func:`start_metrics_server` serves ``GET /metrics`` over HTTP on the service's host
  (port 0: an ephemeral port); the service writes the bound ``HOST:PORT`` into its address file as
  ``"metrics"``, where the launcher and ``oasis status --json`` find it.

Names follow ``oasis_<component>_<what>_<unit>``, counters end in ``_total``, and labels are few and bounded
(never a URL or a query). docs/grafana-oasis.json charts them; tests/test_metrics.py checks that every
expression of that dashboard names a metric a live service exposes.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIServer

import grpc
import prometheus_client
from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from oasis.runtime.addresses import join_host_port

logger = logging.getLogger(__name__)

__all__ = [
    "REGISTRY",
    "CounterMetricFamily",
    "GaugeMetricFamily",
    "Metric",
    "MetricsInterceptor",
    "MetricsServer",
    "add_metrics_argument",
    "counter",
    "gauge",
    "histogram",
    "register_collector",
    "start_metrics_server",
]

REGISTRY = prometheus_client.REGISTRY  # the one registry of the process
CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST

# Latency buckets (seconds) from a sub-millisecond engine lookup to a long index stream.
RPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

RPC_HANDLED = Counter(
    "oasis_rpc_server_handled_total",
    "gRPC calls completed by this server, by gRPC service, method and status code",
    ["service", "method", "code"],
)
RPC_SECONDS = Histogram(
    "oasis_rpc_server_handling_seconds",
    "time from the start of a gRPC call to its last reply message, by gRPC service and method",
    ["service", "method"],
    buckets=RPC_BUCKETS,
)


def counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
    return Counter(name, doc, list(labels))


def gauge(name: str, doc: str, labels: Sequence[str] = ()) -> Gauge:
    return Gauge(name, doc, list(labels))


def histogram(name: str, doc: str, buckets: Sequence[float], labels: Sequence[str] = ()) -> Histogram:
    return Histogram(name, doc, list(labels), buckets=list(buckets))


# ------------------------------------------------------------------------------------------ interceptor
def split_method(full: str) -> tuple[str, str]:
    """``/oasis.v1.Engine/Search`` -> (``oasis.v1.Engine``, ``Search``)."""
    service, _, method = full.lstrip("/").rpartition("/")
    return service or "unknown", method or "unknown"


def _code_name(context: grpc.ServicerContext, default: grpc.StatusCode) -> str:
    code = context.code()  # set by context.abort / set_code; None when the handler just returned
    if isinstance(code, grpc.StatusCode):
        return str(code.name)
    return default.name


class _MethodMetrics:
    """The label children of one method, resolved once (each labels() lookup costs a lock and a dict)."""

    def __init__(self, service: str, method: str) -> None:
        self._service = service
        self._method = method
        self.seconds = RPC_SECONDS.labels(service, method)
        self._handled: dict[str, Any] = {}

    def done(self, start: float, code: str) -> None:
        self.seconds.observe(time.perf_counter() - start)
        child = self._handled.get(code)
        if child is None:
            child = self._handled[code] = RPC_HANDLED.labels(self._service, self._method, code)
        child.inc()


class MetricsInterceptor(grpc.ServerInterceptor):
    """Count and time every call of a known method (unknown methods, which have no handler, are not
    counted: their names would be unbounded labels)."""

    def __init__(self) -> None:
        self._methods: dict[str, _MethodMetrics] = {}
        self._lock = threading.Lock()

    def _metrics(self, full: str) -> _MethodMetrics:
        m = self._methods.get(full)
        if m is None:
            with self._lock:
                m = self._methods.get(full)
                if m is None:
                    m = self._methods[full] = _MethodMetrics(*split_method(full))
        return m

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None:
            return None
        m = self._metrics(details.method)
        if handler.response_streaming:
            inner = handler.stream_stream if handler.request_streaming else handler.unary_stream

            def streaming(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
                start = time.perf_counter()
                code = grpc.StatusCode.OK
                try:
                    yield from inner(request, context)
                except GeneratorExit:  # the client went away (or the stream was abandoned)
                    code = grpc.StatusCode.CANCELLED
                    raise
                except BaseException:
                    code = grpc.StatusCode.UNKNOWN
                    raise
                finally:
                    m.done(start, _code_name(context, code))

            behavior: Callable[..., Any] = streaming
        else:
            inner = handler.stream_unary if handler.request_streaming else handler.unary_unary

            def unary(request: Any, context: grpc.ServicerContext) -> Any:
                start = time.perf_counter()
                code = grpc.StatusCode.OK
                try:
                    return inner(request, context)
                except BaseException:
                    code = grpc.StatusCode.UNKNOWN
                    raise
                finally:
                    m.done(start, _code_name(context, code))

            behavior = unary
        factory = {
            (False, False): grpc.unary_unary_rpc_method_handler,
            (False, True): grpc.unary_stream_rpc_method_handler,
            (True, False): grpc.stream_unary_rpc_method_handler,
            (True, True): grpc.stream_stream_rpc_method_handler,
        }[(bool(handler.request_streaming), bool(handler.response_streaming))]
        return factory(
            behavior,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


# ------------------------------------------------------------------------------------------ collectors
class SnapshotCollector(Collector):
    """A collector that builds its metric families from a status snapshot at scrape time.

    ``describe`` is empty, so registering never probes the service (and a second instance in one process,
    as in-process tests do, is not refused); each entry point registers one with :func:`register_collector`.
    """

    def __init__(self, families: Callable[[], Iterable[Metric]]) -> None:
        self._families = families

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        try:
            return list(self._families())
        except Exception:  # a scrape must not take the service down; the scrape shows what it could
            logger.warning("metrics collector failed", exc_info=True)
            return []


def register_collector(families: Callable[[], Iterable[Metric]]) -> Callable[[], None]:
    """Register a snapshot collector in the process registry; returns the function that unregisters it."""
    collector = SnapshotCollector(families)
    REGISTRY.register(collector)
    return lambda: REGISTRY.unregister(collector)


# ------------------------------------------------------------------------------------------ exposition
@dataclass
class MetricsServer:
    """The HTTP exposition server of one process (``GET /metrics``)."""

    address: str
    _server: WSGIServer
    _thread: threading.Thread

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


def start_metrics_server(host: str, port: int = 0) -> MetricsServer:
    """Serve the process registry on ``host:port`` (0: an ephemeral port) in a daemon thread."""
    server, thread = prometheus_client.start_http_server(port, addr=host.strip("[]"), registry=REGISTRY)
    address = join_host_port(host.strip("[]"), int(server.server_port))
    logger.info("metrics on http://%s/metrics", address)
    return MetricsServer(address, server, thread)


def metrics_port(value: str) -> int | None:
    """argparse type of ``--metrics-port``: a port (0 = ephemeral), or ``off`` / -1 for no metrics."""
    if value.strip().lower() in ("off", "-1", "none"):
        return None
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port: {value!r} (0 = ephemeral, off = no metrics)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be in [0, 65535] or off, got {port}")
    return port


def add_metrics_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics-port",
        type=metrics_port,
        default=0,
        help="Prometheus /metrics over HTTP on --host: a port, 0 = ephemeral (default), off = none",
    )
