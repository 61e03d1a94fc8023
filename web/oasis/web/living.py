"""A web that lives: pages of a served corpus are modified, deleted and created over time (Poisson
processes), answered with realistic HTTP, and the ground truth is kept for the evaluator only.

Change processes (rates per live page per second, :class:`ChangeRates`): each live page is modified at rate
``modify``, deleted at rate ``delete``, and spawns a new page at rate ``create``; the events of the whole
web form one Poisson process of rate ``N (modify + delete + create)`` (N live pages), simulated by
:meth:`LivingWeb.advance` in small time steps (the number of events in a step is Poisson, each event picks
its page uniformly and its kind in proportion to the rates).

* a *modification* gives the page a new version: a revision block (a passage of the page's own text from
  a random place, so its content changes while its subject stays) replaces the previous one;
* a *deletion* is permanent: the page answers ``410 Gone`` (unknown paths answer 404), links to it dangle;
* a *creation* publishes a page held back by the corpus (``Corpus.meta["reserve"]``, e.g. a module of the
  pydoc web), or else a new page of notes at ``/created/N.html``, and links it from the page that spawned
  it (which is thereby modified too, as a real site adds a link to a new page).

HTTP (:meth:`LivingWeb.answer`): every page carries ``ETag`` (its version) and ``Last-Modified`` (the time
of its current version); ``If-None-Match`` (which takes precedence, RFC 9110 13.2.2) or
``If-Modified-Since`` that still holds gets ``304 Not Modified`` without a body.

Ground truth (:class:`TruthServer`): a separate HTTP server on its own loopback port, answering only
requests that carry the token (``Authorization: Bearer TOKEN``). The token and the port are written to the
web's address file for the cluster's evaluator; robots are never given either. Endpoints:

* ``GET /truth``: ``{"time", "counts": {"modified", "deleted", "created"}, "pages": {URL: [version,
  modified]}, "deleted": {URL: time}}`` with served URLs;
* ``POST /texts {"urls": [...]}``: the title and text (as the robots' parser sees them) of current versions;
* ``GET /stats``: the counts only;
* ``POST /burst {"fraction": f}``, ``/modify {"url"}``, ``/delete {"url"}``, ``/create {"parent", "title",
  "text"}``: changes on demand (tests and demos); ``/pause {"paused": bool}`` holds the change processes.
"""

from __future__ import annotations

import html as html_lib
import json
import logging
import math
import secrets
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import numpy as np

from oasis.runtime.html import parse_html
from oasis.web.model import Corpus, Page, origin_of, render_html

logger = logging.getLogger(__name__)

REVISION_WORDS = 60  # words of a revision block
TICK = 0.2  # seconds between two steps of the change processes
MAX_BODY = 1 << 20  # control requests are small JSON objects


@dataclass(frozen=True, kw_only=True)
class ChangeRates:
    """Poisson rates per live page per second (0: that change never happens)."""

    modify: float = 0.0
    delete: float = 0.0
    create: float = 0.0

    def __post_init__(self) -> None:
        for name in ("modify", "delete", "create"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"change rate {name} must be finite and >= 0, got {value}")

    @property
    def total(self) -> float:
        return self.modify + self.delete + self.create


@dataclass
class PageState:
    """One page's ground truth: its current version, when that version appeared, whether it is gone."""

    version: int
    modified: float  # wall time of the current version
    deleted: float | None = None
    revision: str = ""  # the text block of the current version ("" for the original)
    added_links: list[tuple[str, str]] = field(default_factory=list)  # (corpus URL, anchor) of created pages

    @property
    def etag(self) -> str:
        return f'"v{self.version}"'


class HeaderLookup(Protocol):
    def get(self, name: str, /) -> str | None: ...


class LivingWeb:
    """The changing state of a corpus (corpus URLs). Thread-safe; :meth:`start` runs the change processes."""

    def __init__(
        self,
        corpus: Corpus,
        rates: ChangeRates,
        *,
        seed: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.corpus = corpus
        self.rates = rates
        self._clock = clock
        self._rng = np.random.default_rng(seed)
        held_back = corpus.meta.get("reserve") or []
        reserve = [str(u) for u in held_back] if isinstance(held_back, list) else []
        self._reserve = [u for u in reserve if u in corpus.pages]
        held = set(self._reserve)
        now = clock()
        self.states: dict[str, PageState] = {
            url: PageState(0, now) for url in corpus.pages if url not in held
        }
        self._extra: dict[str, Page] = {}  # created pages that are not in the corpus
        self.counts: Counter[str] = Counter({"modified": 0, "deleted": 0, "created": 0})
        self._words: dict[str, list[str]] = {}
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._created = 0
        self.paused = False  # the change processes hold still (the evaluator's consistency checks)

    # ------------------------------------------------------------------ change processes
    def start(self) -> LivingWeb:
        if self._thread is None and self.rates.total > 0:
            self._thread = threading.Thread(target=self._run, name="living-web", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self) -> None:
        last = self._clock()
        while not self._stop.wait(TICK):
            now = self._clock()
            try:
                self.advance(now - last)
            except Exception:
                logger.exception("living web: a change step failed")
            last = now

    def advance(self, dt: float) -> int:
        """Apply the changes of ``dt`` seconds of the Poisson processes; returns the number of events."""
        if dt <= 0 or self.rates.total <= 0 or self.paused:
            return 0
        with self._lock:
            live = self.live_urls()
            if not live:
                return 0
            n = int(self._rng.poisson(self.rates.total * len(live) * dt))
            probs = np.array([self.rates.modify, self.rates.delete, self.rates.create]) / self.rates.total
            for _ in range(n):
                live = self.live_urls()
                if not live:
                    break
                url = live[int(self._rng.integers(len(live)))]
                kind = int(self._rng.choice(3, p=probs))
                if kind == 0:
                    self.modify(url)
                elif kind == 1 and url not in self.corpus.seeds:  # a seed (the site's index) stays
                    self.delete(url)
                elif kind == 2:
                    self.create(url)
            return n

    def live_urls(self) -> list[str]:
        with self._lock:
            return [u for u, s in self.states.items() if s.deleted is None]

    def modify(self, url: str) -> PageState:
        """A new version of ``url``: a fresh revision block of text from another page."""
        with self._lock:
            state = self._live(url)
            state.version += 1
            state.modified = self._clock()
            state.revision = self._passage(url)
            self.counts["modified"] += 1
            return state

    def delete(self, url: str) -> PageState:
        with self._lock:
            state = self._live(url)
            state.deleted = self._clock()
            self.counts["deleted"] += 1
            return state

    def create(self, parent: str, *, title: str | None = None, text: str | None = None) -> str:
        """Publish a new page linked from ``parent`` (which gets a new version); returns its corpus URL.

        With ``title``/``text`` the page is exactly that; else a held-back corpus page, else notes made of a
        passage of the web's text."""
        with self._lock:
            self._live(parent)
            now = self._clock()
            if title is None and text is None and self._reserve:
                url = self._reserve.pop(0)
                anchor = self.corpus.pages[url].title
            else:
                self._created += 1
                url = f"{origin_of(parent)}/created/{self._created}.html"
                while url in self.states or url in self.corpus.pages:
                    self._created += 1
                    url = f"{origin_of(parent)}/created/{self._created}.html"
                anchor = title or f"Notes {self._created}"
                body = text if text is not None else self._passage(parent)
                self._extra[url] = Page(url, anchor, body)
            self.states[url] = PageState(0, now)
            p = self.states[parent]
            p.added_links.append((url, anchor))
            p.version += 1
            p.modified = now
            self.counts["created"] += 1
            return url

    def burst(self, fraction: float) -> list[str]:
        """Modify ``fraction`` of the live pages now (a site-wide update)."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], got {fraction}")
        with self._lock:
            live = self.live_urls()
            k = round(fraction * len(live))
            chosen = [live[int(i)] for i in self._rng.choice(len(live), size=k, replace=False)] if k else []
            for url in chosen:
                self.modify(url)
            return chosen

    def _live(self, url: str) -> PageState:
        state = self.states.get(url)
        if state is None or state.deleted is not None:
            raise KeyError(f"no live page {url}")
        return state

    def _passage(self, src: str) -> str:
        """REVISION_WORDS consecutive words from a random place of page ``src``'s own text: an edit in the
        page's own words (real prose, and its subject -- its topic relevance -- stays about the same)."""
        words = self._words.get(src)
        if words is None:
            page = self.corpus.pages.get(src) or self._extra.get(src)
            words = page.text.split() if page is not None else []
            self._words[src] = words
        if len(words) <= REVISION_WORDS:
            return " ".join(words)
        start = int(self._rng.integers(len(words) - REVISION_WORDS))
        return " ".join(words[start : start + REVISION_WORDS])

    # ------------------------------------------------------------------ serving
    def markup(self, url: str) -> str | None:
        """The current version's HTML of a live page (None if unknown or deleted)."""
        with self._lock:
            state = self.states.get(url)
            if state is None or state.deleted is not None:
                return None
            page = self._extra.get(url)
            base = render_html(page) if page is not None else self.corpus.html_of(url)
            if base is None:
                return None
            block = ""
            if state.revision:
                block += (
                    f'<div class="revision"><h2>Revision {state.version}</h2>'
                    f"<p>{html_lib.escape(state.revision)}</p></div>\n"
                )
            if state.added_links:
                items = "".join(
                    f'<li><a href="{html_lib.escape(u, quote=True)}">{html_lib.escape(a)}</a></li>'
                    for u, a in state.added_links
                )
                block += f'<div class="new-pages"><h2>New pages</h2><ul>{items}</ul></div>\n'
        if not block:
            return base
        at = base.rfind("</body>")
        return base[:at] + block + base[at:] if at >= 0 else base + block

    def answer(self, url: str, headers: HeaderLookup) -> tuple[int, str | None, dict[str, str]]:
        """(status, markup or None, response headers) for a GET of corpus URL ``url``."""
        with self._lock:
            state = self.states.get(url)
            if state is None:
                return 404, None, {}
            if state.deleted is not None:
                return 410, None, {}
            validators = {"ETag": state.etag, "Last-Modified": formatdate(state.modified, usegmt=True)}
            if not_modified(state, headers.get("If-None-Match"), headers.get("If-Modified-Since")):
                return 304, None, validators
            return 200, self.markup(url), validators

    # ------------------------------------------------------------------ ground truth
    def truth(self) -> dict[str, Any]:
        with self._lock:
            return {
                "time": self._clock(),
                "counts": dict(self.counts),
                "pages": {u: [s.version, s.modified] for u, s in self.states.items() if s.deleted is None},
                "deleted": {u: s.deleted for u, s in self.states.items() if s.deleted is not None},
            }

    def text_of(self, url: str) -> dict[str, Any] | None:
        """Title and text of the current version as the robots' parser sees them."""
        with self._lock:
            markup = self.markup(url)
            version = self.states[url].version if markup is not None else -1
        if markup is None:
            return None
        page = parse_html(markup.encode("utf-8", errors="replace"), url, max_bytes=64 * 1024 * 1024)
        return {"title": page.title, "text": page.text, "version": version}


def not_modified(state: PageState, if_none_match: str | None, if_modified_since: str | None) -> bool:
    """RFC 9110 13.1.2 / 13.1.3: If-None-Match, when present, decides alone; else If-Modified-Since holds
    when the current version is not newer than the date (HTTP dates have one-second resolution)."""
    if if_none_match is not None:
        tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
        return "*" in tags or state.etag in tags
    if if_modified_since:
        try:
            since = parsedate_to_datetime(if_modified_since).timestamp()
        except (TypeError, ValueError, IndexError):
            return False
        return math.floor(state.modified) <= since
    return False


# ---------------------------------------------------------------------------------------------- truth server
class _TruthHandler(BaseHTTPRequestHandler):
    server: TruthServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        logger.debug("truth %s", format % args)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def _handle(self, method: str) -> None:
        srv = self.server
        if self.headers.get("Authorization", "") != f"Bearer {srv.token}":
            return self._json(401, {"error": "the ground truth needs the evaluator's token"})
        body: dict[str, Any] = {}
        if method == "POST":
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self._json(413, {"error": "request too large"})
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("expected a JSON object")
            except ValueError as exc:
                return self._json(400, {"error": f"bad JSON: {exc}"})
        try:
            status, reply = srv.route(method, self.path, body)
        except KeyError as exc:
            status, reply = 404, {"error": str(exc.args[0])}
        except (ValueError, TypeError) as exc:
            status, reply = 400, {"error": str(exc)}
        self._json(status, reply)

    def _json(self, status: int, obj: object) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server of this package (the replayed web's hosts, the living web's truth): its
    threads do not hold up the process, and a client that drops its connection (a crawler closing a
    keep-alive socket, a stopped robot) is a debug line, not a traceback on stderr; any other error is
    logged as a warning with its traceback."""

    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            logger.debug("client %s dropped its connection: %s", client_address, exc)
        else:
            logger.warning("error serving a request from %s", client_address, exc_info=True)


class TruthServer(LoopbackHTTPServer):
    """The evaluator's view of the living web (see the module docstring), on its own loopback port."""

    def __init__(
        self,
        living: LivingWeb,
        *,
        served_url: Callable[[str], str],
        corpus_url: Callable[[str], str | None],
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
    ) -> None:
        self.living = living
        self.served_url = served_url
        self.corpus_url = corpus_url
        self.token = token or secrets.token_urlsafe(24)
        super().__init__((host, port), _TruthHandler)
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host!s}:{port}"

    def start(self) -> TruthServer:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.1}, name="truth", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self.shutdown()
        self.server_close()

    def _corpus(self, served: object) -> str:
        url = self.corpus_url(str(served))
        if url is None:
            raise KeyError(f"not a page of this web: {served}")
        return url

    def route(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, object]:
        lw = self.living
        s = self.served_url
        if method == "GET" and path == "/truth":
            t = lw.truth()
            t["pages"] = {s(u): v for u, v in t["pages"].items()}
            t["deleted"] = {s(u): v for u, v in t["deleted"].items()}
            return 200, t
        if method == "GET" and path == "/stats":
            return 200, {"counts": dict(lw.counts), "live": len(lw.live_urls())}
        if method != "POST":
            return 404, {"error": f"no {method} {path}"}
        if path == "/texts":
            urls = body.get("urls", [])
            if not isinstance(urls, list):
                raise ValueError("urls must be a list")
            out = {}
            for served in urls:
                text = lw.text_of(self._corpus(served))
                if text is not None:
                    out[str(served)] = text
            return 200, {"pages": out}
        if path == "/pause":
            lw.paused = bool(body.get("paused", True))
            return 200, {"paused": lw.paused}
        if path == "/burst":
            return 200, {"modified": [s(u) for u in lw.burst(float(body.get("fraction", 0.5)))]}
        if path == "/modify":
            return 200, {"version": lw.modify(self._corpus(body["url"])).version}
        if path == "/delete":
            lw.delete(self._corpus(body["url"]))
            return 200, {"deleted": body["url"]}
        if path == "/create":
            title, text = body.get("title"), body.get("text")
            url = lw.create(
                self._corpus(body["parent"]),
                title=None if title is None else str(title),
                text=None if text is None else str(text),
            )
            return 200, {"url": s(url)}
        return 404, {"error": f"no POST {path}"}
