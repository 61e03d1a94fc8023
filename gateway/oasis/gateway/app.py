"""The gateway's ASGI app (Starlette): a list of routes to small async functions.

=====================  ====================================================================================
``GET /``              the search page (a form; no JavaScript)
``GET /search``        results: HTML, or SearXNG's JSON with ``format=json``; ``q``, ``pageno``
``GET /opensearch.xml``  OpenSearch description (browsers add Oasis as a search engine from it)
``GET /status``        the cluster dashboard (``format=json``: the same data as JSON)
``GET /healthz``       200 while the gateway serves (the broker's state is on ``/search`` and ``/status``)
``GET /metrics``       Prometheus metrics of the gateway itself
=====================  ====================================================================================

Bad input is a 400 that says what is wrong, in the format asked for; a broker that does not answer is a
503 (the page says so) until it answers again: the broker's channel reconnects by itself
(:data:`oasis.runtime.service.RECONNECT_BACKOFF_MS`). The blocking gRPC clients run in Starlette's thread
pool.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import jinja2
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.process_collector import ProcessCollector
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oasis.gateway.search import (
    MAX_QUERY_CHARS,
    BadRequest,
    Page,
    broker_k,
    make_page,
    max_pageno,
    page_links,
    parse_format,
    parse_search,
    requested_format,
    safe_href,
    searxng_json,
    snippet_markup,
)
from oasis.gateway.status import ClusterStatus, StatusSources, collect_status
from oasis.runtime.clients import SearchResult
from oasis.runtime.errors import ServiceError

logger = logging.getLogger(__name__)

# a search engine's result pages are not for crawlers (each query a new URL, the index's own pages again), nor
# its dashboard and metrics; the search page and the OpenSearch description are (as SearXNG's robots.txt)
ROBOTS_TXT = """User-agent: *
Allow: /$
Allow: /opensearch.xml
Disallow: /search
Disallow: /status
Disallow: /metrics
Disallow: /healthz
"""

ENDPOINTS = (
    "/",
    "/search",
    "/opensearch.xml",
    "/status",
    "/healthz",
    "/metrics",
    "/static/style.css",
    "/robots.txt",
)
SECURITY_HEADERS = {
    # no script runs on any page; styles only from the gateway's own stylesheet; forms post only here
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class SafeJSONResponse(JSONResponse):
    """JSON with ``<``, ``>`` and ``&`` written as ``\\u`` escapes: the same values to any JSON parser, and
    no markup in the bytes should something render the reply as HTML (the query is echoed in it)."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode("utf-8")


class Broker(Protocol):
    """What the gateway needs of the broker: :class:`oasis.runtime.clients.BrokerClient`."""

    address: str

    def search(self, query: str, k: int = 10, deadline_ms: int = 1000) -> SearchResult: ...


@dataclass(frozen=True, kw_only=True)
class GatewayConfig:
    page_size: int = 10
    deadline_ms: int = 1000  # the broker's whole-query deadline
    title: str = "Oasis"
    directory: str | None = None
    cluster_state: Path | None = None
    quality: Path | None = None
    self_address: str = ""

    def __post_init__(self) -> None:
        if not 1 <= self.page_size <= 100:
            raise ValueError(f"page_size must be in [1, 100], got {self.page_size}")
        if not 1 <= self.deadline_ms <= 60_000:
            raise ValueError(f"deadline_ms must be in [1, 60000], got {self.deadline_ms}")


@dataclass
class Metrics:
    """The gateway's own Prometheus metrics, in a registry of its own (one per app)."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        self.requests = Counter(
            "oasis_gateway_requests_total", "HTTP requests by endpoint and status code",
            ["endpoint", "code"], registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "oasis_gateway_request_seconds", "HTTP request latency by endpoint", ["endpoint"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
        )  # fmt: skip
        self.broker = Histogram(
            "oasis_gateway_broker_seconds", "broker Search calls made by the gateway, by outcome",
            ["outcome"], registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
        )  # fmt: skip
        ProcessCollector(registry=self.registry)


class MetricsMiddleware:
    """Counts every request by endpoint (the fixed :data:`ENDPOINTS`, else ``other``) and status code, and
    times it; adds the security headers to every reply."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        endpoint = path if path in ENDPOINTS else "other"
        code = 500
        start = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal code
            if message["type"] == "http.response.start":
                code = int(message["status"])
                headers = list(message.get("headers", []))
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.requests.labels(endpoint, str(code)).inc()
            self.metrics.latency.labels(endpoint).observe(time.perf_counter() - start)


def templates() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("oasis.gateway", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "xml"), default=True),
        undefined=jinja2.StrictUndefined,
    )
    env.filters["snippet"] = snippet_markup
    env.globals["safe_href"] = safe_href
    return env


def create_app(broker: Broker, config: GatewayConfig, metrics: Metrics | None = None) -> ASGIApp:
    """The gateway app over ``broker`` (a :class:`~oasis.runtime.clients.BrokerClient`)."""
    env = templates()
    metrics = metrics or Metrics()
    stylesheet = resources.files("oasis.gateway").joinpath("static/style.css").read_text(encoding="utf-8")
    sources = StatusSources(
        broker=broker.address,
        directory=config.directory,
        cluster_state=config.cluster_state,
        quality=config.quality,
        self_address=config.self_address,
    )
    base = {"title": config.title, "max_query_chars": MAX_QUERY_CHARS}

    def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**base, **context), status_code=status)

    def error(
        fmt: str, status: int, message: str, typed: str = "", extra: dict[str, Any] | None = None
    ) -> Response:
        """An error reply in the format asked for; ``typed`` goes back into the page's search box."""
        if fmt == "json":
            return SafeJSONResponse({"error": message, **(extra or {})}, status_code=status)
        return render("error.html", status=status, message=message, query=typed, code=status)

    async def index(request: Request) -> Response:
        return render("index.html", query="")

    async def search(request: Request) -> Response:
        raw: bytes = request.scope.get("query_string", b"")
        try:
            params = parse_search(raw, config.page_size)
        except BadRequest as exc:
            return error(requested_format(raw), 400, str(exc))
        start = time.perf_counter()
        k = broker_k(params.pageno, config.page_size)
        try:
            result = await run_in_threadpool(broker.search, params.query, k, config.deadline_ms)
        except ServiceError as exc:
            metrics.broker.labels(exc.code.lower()).observe(time.perf_counter() - start)
            if exc.code == "INVALID_ARGUMENT":
                return error(params.format, 400, exc.reason, params.query)
            logger.warning("search %r: broker failed: %s", params.query[:80], exc)
            message = f"the search broker is unavailable ({exc.code}); try again shortly"
            extra = {"query": params.query, "unresponsive_engines": [["broker", exc.code]]}
            reply = error(params.format, 503, message, params.query, extra)
            reply.headers["retry-after"] = "1"
            return reply
        metrics.broker.labels("ok").observe(time.perf_counter() - start)
        page = make_page(params, result, config.page_size)
        if params.format == "json":
            return SafeJSONResponse(searxng_json(page))
        return results_page(page)

    def results_page(page: Page) -> Response:
        return render(
            "results.html",
            page=page,
            query=page.params.query,
            links=page_links(page.params.query, page.params.pageno, page.has_next),
            last_page=max_pageno(config.page_size),
        )

    async def opensearch(request: Request) -> Response:
        origin = f"{request.url.scheme}://{request.url.netloc}"
        body = env.get_template("opensearch.xml").render(**base, origin=origin)
        return Response(body, media_type="application/opensearchdescription+xml")

    async def status(request: Request) -> Response:
        raw: bytes = request.scope.get("query_string", b"")
        try:
            fmt = parse_format(dict(request.query_params).get("format"))
        except BadRequest as exc:
            return error(requested_format(raw), 400, str(exc))
        data: ClusterStatus = await run_in_threadpool(collect_status, sources)
        if fmt == "json":
            return SafeJSONResponse(data.to_json())
        return render("status.html", cluster=data, query="")

    async def healthz(request: Request) -> Response:
        return Response("OK\n", media_type="text/plain")

    async def robots_txt(request: Request) -> Response:
        return Response(ROBOTS_TXT, media_type="text/plain", headers={"cache-control": "max-age=86400"})

    async def metrics_endpoint(request: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def style(request: Request) -> Response:
        return Response(stylesheet, media_type="text/css", headers={"cache-control": "max-age=3600"})

    async def not_found(request: Request, exc: Exception) -> Response:
        return error("html", 404, "no such page: try the search page at /")

    routes = [
        Route("/", index, methods=["GET"]),
        Route("/search", search, methods=["GET"]),
        Route("/opensearch.xml", opensearch, methods=["GET"]),
        Route("/status", status, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/robots.txt", robots_txt, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        Route("/static/style.css", style, methods=["GET"]),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {404: not_found}
    app = Starlette(routes=routes, exception_handlers=handlers)
    return MetricsMiddleware(app, metrics)
