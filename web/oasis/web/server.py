"""The replayed web: a :class:`~oasis.web.model.Corpus` served over HTTP on loopback, one port per host.

Every corpus host (``http://postgresql.docs.local``, ``http://host0.synthetic.test``, ...) gets its own
``ThreadingHTTPServer`` on ``127.0.0.1`` with an ephemeral port, so per-host politeness in the robot is
per-port here. Pages keep their paths: ``http://host0.synthetic.test/web/p42.html`` is served as
``http://127.0.0.1:PORT/web/p42.html`` (:meth:`ReplayedWeb.url_for`, and back with
:meth:`ReplayedWeb.corpus_url_for`).

Links in served HTML are rewritten (the simplest robust choice: the robot needs no name resolution): every
``href``/``src`` value is resolved against the page's corpus URL, passed through the corpus's URL rewrites
(absolute filesystem paths mapped to other hosts) and, if it lands on a served host, replaced by the
absolute served URL (fragment kept). Everything else is left as it was.

Each host serves ``/robots.txt`` from a :class:`RobotsPolicy`, answers 404 for unknown paths, and can be
given a :class:`Behaviour` for tests (latency, 429/503 with ``Retry-After``, redirects). A thread-safe
access log records ``(time.monotonic(), host, path, status, user-agent)`` for every request, so tests can
check politeness: nothing disallowed fetched, no two requests to one host closer than the crawl delay.
"""

from __future__ import annotations

import html as html_lib
import logging
import re
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from types import TracebackType
from typing import NamedTuple
from urllib.parse import urljoin, urlsplit

from oasis.runtime.urls import InvalidURL, canonicalize
from oasis.web.living import LivingWeb, LoopbackHTTPServer
from oasis.web.model import Corpus, origin_of

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
MAX_HOSTS = 512


@dataclass(frozen=True, kw_only=True)
class RobotsPolicy:
    """What one host's ``/robots.txt`` says. ``text`` (verbatim) overrides the rest; ``missing`` -> 404."""

    disallow: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    crawl_delay: float | None = None
    user_agent: str = "*"
    text: str | None = None
    missing: bool = False

    def __post_init__(self) -> None:
        if self.crawl_delay is not None and self.crawl_delay < 0:
            raise ValueError("crawl_delay must be >= 0")
        for path in (*self.disallow, *self.allow):
            if not path.startswith("/"):
                raise ValueError(f"robots.txt paths start with '/': {path!r}")

    def render(self) -> str:
        if self.text is not None:
            return self.text
        lines = [f"User-agent: {self.user_agent}"]
        lines += [f"Allow: {p}" for p in self.allow]
        lines += [f"Disallow: {p}" for p in self.disallow]
        if not self.disallow and not self.allow:
            lines.append("Disallow:")
        if self.crawl_delay is not None:
            lines.append(f"Crawl-delay: {self.crawl_delay:g}")
        return "\n".join(lines) + "\n"

    def disallows(self, path: str) -> bool:
        """Longest-match rule for the paths this policy lists (``text`` policies are not interpreted)."""
        best, allowed = -1, True
        for rule, verdict in [(p, True) for p in self.allow] + [(p, False) for p in self.disallow]:
            if path.startswith(rule) and len(rule) > best:
                best, allowed = len(rule), verdict
        return not allowed


@dataclass(frozen=True, kw_only=True)
class Fault:
    """Answer ``status`` (with ``Retry-After``) to the first ``times`` requests of a path (-1: always)."""

    status: int = 503
    times: int = 1
    retry_after: float | None = 1.0

    def __post_init__(self) -> None:
        if not 400 <= self.status <= 599:
            raise ValueError("a fault status is 4xx or 5xx")
        if self.times < -1:
            raise ValueError("times must be >= -1")


@dataclass(frozen=True, kw_only=True)
class Behaviour:
    """Injected behaviour of one host: latency per response, faults by path, redirects by path."""

    latency: float = 0.0
    faults: Mapping[str, Fault] = field(default_factory=dict)
    redirects: Mapping[str, str] = field(default_factory=dict)  # path -> path on the same host, or a URL
    redirect_status: int = 301

    def __post_init__(self) -> None:
        if self.latency < 0:
            raise ValueError("latency must be >= 0")
        if self.redirect_status not in (301, 302, 303, 307, 308):
            raise ValueError("redirect_status must be a 3xx redirect code")


class AccessRecord(NamedTuple):
    time: float  # time.monotonic() when the request arrived
    host: str  # served host:port
    path: str
    status: int
    user_agent: str


class _HostServer(LoopbackHTTPServer):
    def __init__(self, web: ReplayedWeb, origin: str, port: int) -> None:
        self.web = web
        self.origin = origin
        self.fault_counts: dict[str, int] = {}
        super().__init__((LOOPBACK, port), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _HostServer
    protocol_version = "HTTP/1.1"
    server_version = "OasisReplayedWeb/1"

    def log_message(self, format: str, *args: object) -> None:
        logger.debug("%s %s", self.server.origin, format % args)

    def do_GET(self) -> None:
        self._serve(send_body=True)

    def do_HEAD(self) -> None:
        self._serve(send_body=False)

    def setup(self) -> None:
        super().setup()
        # headers and body go out as separate writes: without NODELAY, Nagle + delayed ACK add ~40 ms each
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self, *, send_body: bool) -> None:
        self._arrived = time.monotonic()
        self._logged = False
        try:
            self._respond(self.server.web, self.server.origin, send_body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away; the request is logged already
        finally:
            if not self._logged:  # failed before a response was chosen
                self._log_access(500)

    def _log_access(self, status: int) -> None:
        self._logged = True
        host = f"{LOOPBACK}:{self.server.server_address[1]}"
        ua = self.headers.get("User-Agent", "") if self.headers is not None else ""
        self.server.web._record(AccessRecord(self._arrived, host, self.path, status, ua))

    def _respond(self, web: ReplayedWeb, origin: str, send_body: bool) -> int:
        behaviour = web.behaviour_for(origin)
        if behaviour.latency:
            time.sleep(behaviour.latency)
        path = self.path if self.path.startswith("/") else "/" + self.path
        bare = urlsplit(path).path
        if bare == "/robots.txt":
            policy = web.robots_for(origin)
            if policy.missing:
                return self._send(404, b"no robots.txt\n", "text/plain; charset=utf-8", send_body)
            return self._send(200, policy.render().encode(), "text/plain; charset=utf-8", send_body)
        fault = behaviour.faults.get(path) or behaviour.faults.get(bare)
        if fault is not None and web._take_fault(self.server, path, fault):
            extra = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            return self._send(
                fault.status, b"try again later\n", "text/plain; charset=utf-8", send_body, extra
            )
        target = behaviour.redirects.get(path) or behaviour.redirects.get(bare)
        if target is not None:
            location = web.url_for(urljoin(origin + path, target))
            return self._send(behaviour.redirect_status, b"", "text/plain", send_body, {"Location": location})
        try:
            url = canonicalize(origin + path)
        except InvalidURL:
            return self._send(400, b"bad request path\n", "text/plain; charset=utf-8", send_body)
        if web.living is not None:  # a changing web: versions, validators, 304 / 410 (oasis.web.living)
            return self._respond_living(web, web.living, url, send_body)
        markup = web.corpus.html_of(url)
        if markup is None and url.endswith("/"):  # a folder: its index page, as a web server would
            url += "index.html"
            markup = web.corpus.html_of(url)
        if markup is None:
            return self._send(
                404, b"<html><body>not found</body></html>\n", "text/html; charset=utf-8", send_body
            )
        return self._send(200, web.page_body(url, markup), "text/html; charset=utf-8", send_body)

    def _respond_living(self, web: ReplayedWeb, living: LivingWeb, url: str, send_body: bool) -> int:
        if url.endswith("/") and url not in living.states:  # a folder: its index page
            url += "index.html"
        status, markup, headers = living.answer(url, self.headers)
        html_type = "text/html; charset=utf-8"
        if status == 200 and markup is not None:
            body = web.rewrite_links(markup, url).encode("utf-8", errors="replace")
            return self._send(200, body, html_type, send_body, headers)
        if status == 304:
            return self._send(304, b"", html_type, False, headers)
        word = b"gone" if status == 410 else b"not found"
        return self._send(status, b"<html><body>" + word + b"</body></html>\n", html_type, send_body, headers)

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        send_body: bool,
        headers: Mapping[str, str] | None = None,
    ) -> int:
        self._log_access(status)  # before the client can see the response, so the log is never behind
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)
        return status


_LINK_ATTR = re.compile(
    r"""(?P<attr>\b(?:href|src|action)\s*=\s*)(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"'>]+))""",
    re.IGNORECASE,
)


class ReplayedWeb:
    """Serve ``corpus`` over HTTP on loopback, one port per corpus host. Use as a context manager.

    ``robots``: one :class:`RobotsPolicy` for every host, or a mapping ``origin -> policy`` (hosts not in
    it allow everything). ``behaviour``: likewise. ``hosts``: ``origin -> port`` to pin ports (0 or
    absent = ephemeral); only origins of the corpus are served.
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        robots: RobotsPolicy | Mapping[str, RobotsPolicy] | None = None,
        behaviour: Behaviour | Mapping[str, Behaviour] | None = None,
        hosts: Mapping[str, int] | None = None,
        living: LivingWeb | None = None,
    ) -> None:
        self.corpus = corpus
        self.living = living  # pages change over time (oasis.web.living); None: the corpus as it is
        self.origins = corpus.hosts()
        if not self.origins:
            raise ValueError("the corpus has no pages to serve")
        if len(self.origins) > MAX_HOSTS:
            raise ValueError(
                f"corpus has {len(self.origins)} hosts; the replayed web serves at most {MAX_HOSTS}"
            )
        unknown = set(hosts or {}) - set(self.origins)
        if unknown:
            raise ValueError(f"hosts not in the corpus: {sorted(unknown)[:5]}")
        self._ports = {o: int((hosts or {}).get(o, 0)) for o in self.origins}
        self._robots = robots if robots is not None else RobotsPolicy()
        self._behaviour = behaviour if behaviour is not None else Behaviour()
        self._servers: dict[str, _HostServer] = {}
        self._threads: list[threading.Thread] = []
        self._served: dict[str, str] = {}  # corpus origin -> served origin
        self._reverse: dict[str, str] = {}  # served netloc -> corpus origin
        self._records: list[AccessRecord] = []
        self._lock = threading.Lock()
        self._bodies: dict[str, bytes] = {}  # URL -> served body (a corpus without ``living`` never changes)

    # --- lifecycle ---
    def start(self) -> ReplayedWeb:
        if self._servers:
            return self
        try:
            for origin in self.origins:
                server = _HostServer(self, origin, self._ports[origin])
                port = server.server_address[1]
                self._servers[origin] = server
                self._served[origin] = f"http://{LOOPBACK}:{port}"
                self._reverse[f"{LOOPBACK}:{port}"] = origin
        except OSError:
            self.stop()
            raise
        self._bodies.clear()  # links point at the served origins, which changed
        for origin, server in self._servers.items():
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=f"web {origin}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        logger.info(
            "replayed web %s: %d pages on %d hosts", self.corpus.name, len(self.corpus), len(self.origins)
        )
        return self

    def stop(self) -> None:
        for server in self._servers.values():
            if self._threads:
                server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._servers.clear()
        self._threads.clear()

    def __enter__(self) -> ReplayedWeb:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- addresses ---
    @property
    def hosts(self) -> dict[str, str]:
        """Corpus origin -> served origin (``http://127.0.0.1:PORT``)."""
        self._require_started()
        return dict(self._served)

    @property
    def seeds(self) -> list[str]:
        return [self.url_for(s) for s in self.corpus.seeds]

    def url_for(self, corpus_url: str) -> str:
        """The served URL of a corpus URL (unchanged if its host is not served)."""
        self._require_started()
        origin = origin_of(corpus_url)
        served = self._served.get(origin)
        return served + corpus_url[len(origin) :] if served is not None else corpus_url

    def corpus_url_for(self, served_url: str) -> str | None:
        """The canonical corpus URL behind a served URL, or None if it is not one of ours."""
        try:
            url = canonicalize(served_url)
        except InvalidURL:
            return None
        parts = urlsplit(url)
        origin = self._reverse.get(parts.netloc)
        if origin is None:
            return None
        return canonicalize(origin + url[len(f"{parts.scheme}://{parts.netloc}") :])

    def address_info(self) -> dict[str, object]:
        """What ``python -m oasis.web`` writes to its address file."""
        served = self.hosts
        return {
            "address": urlsplit(served[self.origins[0]]).netloc,
            "hosts": served,
            "seeds": self.seeds,
            "corpus": self.corpus.name,
            "pages": len(self.corpus),
        }

    # --- policies ---
    def robots_for(self, origin: str) -> RobotsPolicy:
        if isinstance(self._robots, RobotsPolicy):
            return self._robots
        return self._robots.get(origin, RobotsPolicy())

    def behaviour_for(self, origin: str) -> Behaviour:
        if isinstance(self._behaviour, Behaviour):
            return self._behaviour
        return self._behaviour.get(origin, Behaviour())

    # --- access log ---
    @property
    def access_log(self) -> list[AccessRecord]:
        """Every request so far, in arrival order (a copy)."""
        with self._lock:
            return sorted(self._records, key=lambda r: r.time)

    def clear_log(self) -> None:
        with self._lock:
            self._records.clear()

    def _record(self, record: AccessRecord) -> None:
        with self._lock:
            self._records.append(record)

    def min_gaps(self) -> dict[str, float]:
        """Per served host, the smallest time between two successive request arrivals (robots.txt included).
        Hosts with fewer than two requests are absent."""
        last: dict[str, float] = {}
        gaps: dict[str, float] = {}
        for record in self.access_log:
            if record.host in last:
                gap = record.time - last[record.host]
                gaps[record.host] = min(gap, gaps.get(record.host, gap))
            last[record.host] = record.time
        return gaps

    def disallowed_requests(self) -> list[AccessRecord]:
        """Requests for paths the host's robots policy disallows (``text`` policies are not interpreted)."""
        bad = []
        for record in self.access_log:
            origin = self._reverse.get(record.host)
            if origin is not None and self.robots_for(origin).disallows(record.path):
                bad.append(record)
        return bad

    def _take_fault(self, server: _HostServer, path: str, fault: Fault) -> bool:
        with self._lock:
            seen = server.fault_counts.get(path, 0)
            server.fault_counts[path] = seen + 1
            return fault.times < 0 or seen < fault.times

    # --- link rewriting ---
    def page_body(self, url: str, markup: str) -> bytes:
        """The served bytes of a page of the (unchanging) corpus: its markup with links rewritten, kept
        after the first request. Rewriting every link on every request (a regex, ``urljoin`` and
        ``canonicalize`` per link) was most of the web's CPU, ~2.5 ms a PostgreSQL page, taken from the
        crawler it serves when both share the machine (``oasis bench crawl``, issue 14)."""
        body = self._bodies.get(url)
        if body is None:
            body = self.rewrite_links(markup, url).encode("utf-8", errors="replace")
            self._bodies[url] = body
        return body

    def rewrite_links(self, markup: str, page_url: str) -> str:
        """Point every href/src that lands on a served host at its served URL (see the module docstring)."""

        def replace(m: re.Match[str]) -> str:
            raw = next(g for g in (m.group("dq"), m.group("sq"), m.group("bare")) if g is not None)
            value = html_lib.unescape(raw).strip()
            if not value or value.startswith("#"):
                return m.group(0)
            target, _, fragment = value.partition("#")
            try:
                url = self.corpus.remap(canonicalize(urljoin(page_url, target)))
            except (InvalidURL, ValueError):
                return m.group(0)
            served = self._served.get(origin_of(url))
            if served is None:
                return m.group(0)
            new = served + url[len(origin_of(url)) :] + (f"#{fragment}" if fragment else "")
            return f'{m.group("attr")}"{html_lib.escape(new, quote=True)}"'

        return _LINK_ATTR.sub(replace, markup)

    def _require_started(self) -> None:
        if not self._served:
            raise RuntimeError("the replayed web is not started (use start() or a with block)")
