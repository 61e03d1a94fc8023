"""Helpers for the robot tests: a programmable HTTP server on 127.0.0.1 (with an access log and hostile
routes) and an in-process engine served over real gRPC."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from oasis.engine.config import EngineConfig
from oasis.engine.index import TopicIndex
from oasis.engine.servicer import EngineServicer, add_engine_servicer
from oasis.engine.topic import Topic
from oasis.runtime.service import RunningServer, ServerConfig, build_server

Route = Callable[[BaseHTTPRequestHandler], None]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # clients that hang up mid-response are the point of several routes


@dataclass
class Access:
    t: float  # monotonic seconds when the request line arrived
    host: str
    path: str
    user_agent: str


@dataclass
class LocalWeb:
    """One HTTP host: ``routes`` maps a path to a handler; unknown paths are 404."""

    routes: dict[str, Route] = field(default_factory=dict)
    prefixes: dict[str, Route] = field(default_factory=dict)  # path prefix -> handler (exact routes first)
    log: list[Access] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None
    thread: threading.Thread | None = None

    @property
    def host(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.server_address[1]}"

    def url(self, path: str) -> str:
        return f"http://{self.host}{path}"

    def start(self) -> LocalWeb:
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                web.log.append(
                    Access(time.monotonic(), web.host, self.path, self.headers.get("User-Agent", ""))
                )
                route = web.routes.get(self.path)
                if route is None:
                    route = next((r for p, r in web.prefixes.items() if self.path.startswith(p)), None)
                try:
                    if route is None:
                        send(self, 404, b"not found", "text/plain")
                    else:
                        route(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def paths(self) -> list[str]:
        return [a.path for a in self.log]


def send(
    h: BaseHTTPRequestHandler,
    status: int,
    body: bytes,
    ctype: str = "text/html; charset=utf-8",
    headers: dict[str, str] | None = None,
) -> None:
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(body)


def page(body: str, status: int = 200, ctype: str = "text/html; charset=utf-8", **headers: str) -> Route:
    data = body.encode("utf-8")
    return lambda h: send(h, status, data, ctype, {k.replace("_", "-"): v for k, v in headers.items()})


def raw(data: bytes, ctype: str = "text/html") -> Route:
    return lambda h: send(h, 200, data, ctype)


def html(title: str, text: str, links: list[str] = ()) -> str:  # type: ignore[assignment]
    anchors = "".join(
        f'<a href="{u}">{a}</a> ' for u, a in (ln.split("|", 1) if "|" in ln else (ln, ln) for ln in links)
    )
    return f"<html><head><title>{title}</title></head><body><p>{text}</p>{anchors}</body></html>"


def redirect(location: str, status: int = 302) -> Route:
    return lambda h: send(h, status, b"", "text/html", {"Location": location})


def endless_chunked(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    chunk = b"<p>" + b"x" * 65536 + b"</p>"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        h.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")


def gzip_bomb(decoded_mb: int = 64) -> Route:
    # text (NUL bytes would be refused as binary after their first 1,445 bytes, before the size cap acts)
    body = gzip.compress(b"<p>" + b"a" * (decoded_mb * 1024 * 1024), compresslevel=9)

    def route(h: BaseHTTPRequestHandler) -> None:
        send(h, 200, body, "text/html", {"Content-Encoding": "gzip"})

    return route


def slowloris(seconds: float = 20.0, interval: float = 0.2) -> Route:
    def route(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/html")
        h.send_header("Connection", "close")  # no length: the body ends when the server closes
        h.end_headers()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            h.wfile.write(b"x")
            h.wfile.flush()
            time.sleep(interval)

    return route


TOPIC = Topic(
    name="databases",
    description="Relational databases, SQL queries, indexes and transactions",
    keywords=("database", "sql", "query", "index", "transaction", "table"),
)


class LocalEngine:
    """A real engine (Whoosh index in a temp dir) served over gRPC on 127.0.0.1."""

    def __init__(self, index_dir: Path, topic: Topic = TOPIC) -> None:
        self.config = EngineConfig(name="test-engine", topic=topic, index_dir=index_dir, batch_size=64)
        self.index = TopicIndex.open(index_dir, topic, limits=self.config.limits)
        servicer = EngineServicer(self.index, self.config)
        self.running: RunningServer = build_server(ServerConfig(), lambda s: add_engine_servicer(s, servicer))
        self.address = self.running.address

    def close(self) -> None:
        self.running.stop(0)
        self.index.close()
