"""Fetchers: one HTTP GET per call, with every defence a crawler of the open web needs.

* connection pooling (one ``requests.Session`` with a pooled adapter, no automatic retries);
* connect / read timeouts, plus a total deadline checked between reads so that a slowloris server cannot
  hold a fetcher for longer than about ``total_timeout + read_timeout``;
* the body is streamed and the DECODED size is capped while streaming (gzip bombs, endless chunked
  responses, 10 MB pages never sit in memory whole);
* redirects are never followed inline: a 3xx becomes a :class:`FetchResult` of kind ``redirect`` whose
  target the crawler schedules like any other URL, so the target host's politeness slot applies to it;
  targets with schemes other than http/https are refused;
* a content-type check (HTML only), and optionally refusal of private / loopback addresses.

Every failure is a :class:`FetchResult` with a clear ``kind``; :func:`fetch` never raises for anything the
network or a server can do.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

import requests
from requests.adapters import HTTPAdapter

from oasis.robot.config import RobotConfig
from oasis.runtime.html import SNIFF_BYTES, looks_binary
from oasis.runtime.urls import InvalidURL, canonicalize

logger = logging.getLogger(__name__)

CHUNK = 64 * 1024

# Result kinds. OK is the only one with a body to process; REDIRECT carries a target; the rest are errors.
OK = "ok"
REDIRECT = "redirect"
NOT_FOUND = "not_found"  # 404 / 410: the page is gone (the collection deletes it)
NOT_MODIFIED = "not_modified"  # 304 to a conditional GET: the copy the robot holds is current
HTTP_4XX = "http_4xx"
HTTP_5XX = "http_5xx"
TOO_MANY_REQUESTS = "too_many_requests"  # 429 and 503: back off the host
NON_HTML = "non_html"
TOO_LARGE = "too_large"
TIMEOUT = "timeout"
CONNECTION = "connection"
DECODING = "decoding"  # broken gzip / deflate stream
INVALID_URL = "invalid_url"
BAD_REDIRECT = "bad_redirect"  # missing / invalid Location, or a scheme other than http(s)
PRIVATE_ADDRESS = "private_address"
ERROR = "error"  # anything else the HTTP stack raised
# decided by the crawler without sending a request
ROBOTS_DISALLOWED = "robots_disallowed"
ROBOTS_UNAVAILABLE = "robots_unavailable"  # robots.txt unreachable too often: host given up
OUT_OF_SCOPE = "out_of_scope"
TOO_MANY_REDIRECTS = "too_many_redirects"
THROTTLED_GIVE_UP = "throttled_give_up"  # 429 / 503 too many times in a row

ERROR_KINDS = (
    NOT_FOUND,
    HTTP_4XX,
    HTTP_5XX,
    TOO_MANY_REQUESTS,
    NON_HTML,
    TOO_LARGE,
    TIMEOUT,
    CONNECTION,
    DECODING,
    INVALID_URL,
    BAD_REDIRECT,
    PRIVATE_ADDRESS,
    ERROR,
    ROBOTS_DISALLOWED,
    ROBOTS_UNAVAILABLE,
    OUT_OF_SCOPE,
    TOO_MANY_REDIRECTS,
    THROTTLED_GIVE_UP,
)


@dataclass(frozen=True, slots=True)
class FetchResult:
    url: str  # the URL that was requested
    kind: str
    status: int = 0  # HTTP status; 0 when no response arrived
    content: bytes = b""
    content_type: str = ""
    charset: str | None = None
    redirect_to: str | None = None  # canonical target of a redirect
    retry_after: float | None = None  # seconds, from a Retry-After header (429 / 503)
    started: float = 0.0  # monotonic seconds when the request was sent
    finished: float = 0.0  # monotonic seconds when the response was complete (or failed)
    message: str = ""
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def elapsed(self) -> float:
        return max(0.0, self.finished - self.started)


def conditional_headers(validators: Mapping[str, str] | None) -> dict[str, str]:
    """Request headers of a conditional GET from the validators of the held copy (RFC 9110 13.1)."""
    if not validators:
        return {}
    out = {}
    if validators.get("etag"):
        out["If-None-Match"] = validators["etag"]
    if validators.get("last-modified"):
        out["If-Modified-Since"] = validators["last-modified"]
    return out


def parse_retry_after(value: str | None, now_epoch: float) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now_epoch)


def _http_date(value: str | None) -> float | None:
    """Epoch seconds of an HTTP-date (RFC 9110 5.6.7); None when absent or not a date."""
    if not value:
        return None
    try:
        when = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return None if when is None or when.tzinfo is None else when.timestamp()


def modified_ago(headers: Mapping[str, str]) -> float | None:
    """How long before the response the page last changed, by the server's own clock: ``Date`` minus
    ``Last-Modified`` (RFC 9110 8.8.2, 6.6.1; both whole seconds, so the difference holds whatever the skew
    between the server's clock and ours). None without either header, with a date that does not parse, or
    with a ``Last-Modified`` after the ``Date`` (a server that cannot say). ``headers`` lower-cased, as
    :class:`FetchResult` keeps them."""
    date, modified = _http_date(headers.get("date")), _http_date(headers.get("last-modified"))
    if date is None or modified is None or modified > date:
        return None
    return date - modified


def parse_content_type(header: str) -> tuple[str, str | None]:
    """``("text/html", "utf-8")`` from ``text/html; charset="UTF-8"``; media type lower-cased."""
    parts = header.split(";")
    media = parts[0].strip().lower()
    charset = None
    for param in parts[1:]:
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset" and val.strip():
            charset = val.strip().strip("\"'") or None
    return media, charset


def is_public_host(host: str, resolve: Callable[[str], list[str]] | None = None) -> bool:
    """True when every address ``host`` resolves to is a public unicast address."""
    hostname = host.rsplit(":", 1)[0] if not host.startswith("[") else host[1 : host.index("]")]
    try:
        addrs = resolve(hostname) if resolve is not None else _resolve(hostname)
    except OSError:
        return True  # unresolvable: the fetch itself fails with a connection error
    for addr in addrs:
        ip = ipaddress.ip_address(addr.split("%", 1)[0])
        if ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast:
            return False
        if ip.is_unspecified:
            return False
    return True


def _resolve(hostname: str) -> list[str]:
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(hostname, None)})


class Fetcher:
    """Thread-safe: fetcher threads share one pooled session."""

    def __init__(self, config: RobotConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self._config = config
        self._clock = clock
        self._session = requests.Session()
        adapter = HTTPAdapter(
            pool_connections=max(10, config.max_in_flight),
            pool_maxsize=max(10, config.max_in_flight),
            max_retries=0,
        )
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._session.headers.update(
            {
                "User-Agent": config.user_agent,
                "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1",
                "Accept-Encoding": "gzip, deflate",
            }
        )
        self._session.trust_env = False  # no proxies or .netrc from the environment
        self._aborted = False

    def abort(self, aborted: bool = True) -> None:
        """Cut every response being read at its next read (``error``, "aborted"); ``False`` undoes it."""
        self._aborted = aborted

    def close(self) -> None:
        self._session.close()

    def fetch(
        self,
        url: str,
        *,
        max_bytes: int | None = None,
        html_only: bool = True,
        truncate: bool = False,
        validators: Mapping[str, str] | None = None,
    ) -> FetchResult:
        """GET ``url`` (canonical http/https). Never raises for network or server behaviour.

        A body longer than ``max_bytes`` (decoded) is a ``too_large`` error, or with ``truncate`` an OK
        result holding its first ``max_bytes`` bytes (robots.txt). ``validators`` (``ETag`` /
        ``Last-Modified`` of the copy the robot holds) make it a conditional GET (``If-None-Match`` /
        ``If-Modified-Since``); a 304 answer is a ``not_modified`` result.
        """
        cfg = self._config
        cap = cfg.max_bytes if max_bytes is None else max_bytes
        started = self._clock()
        try:
            canonicalize(url)
        except InvalidURL as exc:
            return FetchResult(url, INVALID_URL, started=started, finished=started, message=str(exc))
        if cfg.refuse_private:
            from urllib.parse import urlsplit

            if not is_public_host(urlsplit(url).netloc):
                return self._failed(url, PRIVATE_ADDRESS, started, "private address")
        try:
            return self._get(url, cap, html_only, truncate, started, conditional_headers(validators))
        except requests.Timeout as exc:
            return self._failed(url, TIMEOUT, started, str(exc)[:300])
        except requests.exceptions.ContentDecodingError as exc:
            return self._failed(url, DECODING, started, str(exc)[:300])
        except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
            kind = TIMEOUT if "timed out" in str(exc).lower() else CONNECTION
            return self._failed(url, kind, started, str(exc)[:300])
        except (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema, ValueError) as exc:
            return self._failed(url, INVALID_URL, started, str(exc)[:300])
        except requests.RequestException as exc:
            return self._failed(url, ERROR, started, str(exc)[:300])
        except Exception as exc:  # a bug in the HTTP stack on hostile input must not kill a fetcher
            logger.warning("unexpected error fetching %s", url[:200], exc_info=True)
            return self._failed(url, ERROR, started, repr(exc)[:300])

    def _failed(
        self, url: str, kind: str, started: float, message: str = "", *, status: int = 0
    ) -> FetchResult:
        """An unsuccessful result of kind ``kind``, finished now."""
        return FetchResult(url, kind, status=status, started=started, finished=self._clock(), message=message)

    def _not_html(self, url: str, status: int, media: str, started: float, message: str) -> FetchResult:
        """A response that is no page: another content type, or binary data served as HTML."""
        return FetchResult(
            url,
            NON_HTML,
            status=status,
            content_type=media,
            started=started,
            finished=self._clock(),
            message=message,
        )

    def _get(
        self,
        url: str,
        cap: int,
        html_only: bool,
        truncate: bool,
        started: float,
        extra_headers: dict[str, str] | None = None,
    ) -> FetchResult:
        cfg = self._config
        deadline = started + cfg.total_timeout
        resp = self._session.get(
            url,
            stream=True,
            allow_redirects=False,
            timeout=(cfg.connect_timeout, cfg.read_timeout),
            headers=extra_headers or None,
        )
        try:
            status = resp.status_code
            headers = {k.lower(): v[:500] for k, v in list(resp.headers.items())[:100]}
            media, charset = parse_content_type(resp.headers.get("Content-Type", ""))
            if status == 304 and extra_headers:
                return FetchResult(
                    url, NOT_MODIFIED, status=304, started=started, finished=self._clock(), headers=headers
                )
            if 300 <= status < 400 and status != 304:
                return self._redirect(url, resp, status, started)
            if status in (429, 503):
                return FetchResult(
                    url,
                    TOO_MANY_REQUESTS,
                    status=status,
                    retry_after=parse_retry_after(resp.headers.get("Retry-After"), time.time()),
                    started=started,
                    finished=self._clock(),
                    headers=headers,
                )
            if status in (404, 410):
                return self._failed(url, NOT_FOUND, started, status=status)
            if 400 <= status < 500:
                return self._failed(url, HTTP_4XX, started, status=status)
            if status >= 500 or status < 200:
                return self._failed(url, HTTP_5XX, started, status=status)
            if html_only and media not in cfg.content_types:
                return self._not_html(url, status, media, started, f"content type {media or '(none)'!r}")
            declared = resp.headers.get("Content-Length", "")
            if (
                declared.isdigit()
                and int(declared) > cap
                and "content-encoding" not in headers
                and not truncate
            ):
                return self._failed(
                    url, TOO_LARGE, started, f"Content-Length {declared} > {cap}", status=status
                )
            body = bytearray()
            raw = resp.raw
            sniffed = not html_only  # an HTML page's first bytes are looked at once: binary data is no page
            binary = f"binary data served as {media}"  # (:func:`oasis.runtime.html.looks_binary`)
            while True:
                # read1: returns after one socket read, so the deadline is checked between trickled bytes
                chunk = raw.read1(CHUNK, decode_content=True)
                if not chunk:
                    break
                body += chunk
                if not sniffed and len(body) >= SNIFF_BYTES:
                    sniffed = True
                    if looks_binary(bytes(body[:SNIFF_BYTES]), charset):
                        return self._not_html(url, status, media, started, binary)
                if len(body) > cap and truncate:
                    del body[cap:]
                    break
                if len(body) > cap:
                    return self._failed(
                        url, TOO_LARGE, started, f"decoded body over {cap} bytes", status=status
                    )
                if self._aborted:
                    return self._failed(url, ERROR, started, "aborted (the robot is stopping)", status=status)
                if self._clock() > deadline:
                    return self._failed(
                        url,
                        TIMEOUT,
                        started,
                        f"response not complete within {cfg.total_timeout} s",
                        status=status,
                    )
            if not sniffed and looks_binary(bytes(body), charset):
                return self._not_html(url, status, media, started, binary)
            return FetchResult(
                url,
                OK,
                status=status,
                content=bytes(body),
                content_type=media,
                charset=charset,
                started=started,
                finished=self._clock(),
                headers=headers,
            )
        finally:
            resp.close()

    def _redirect(self, url: str, resp: requests.Response, status: int, started: float) -> FetchResult:
        location = resp.headers.get("Location", "")
        if not location:
            return self._failed(url, BAD_REDIRECT, started, "no Location", status=status)
        from urllib.parse import urljoin

        try:
            target = canonicalize(urljoin(url, location.strip()))
        except (InvalidURL, ValueError) as exc:
            return self._failed(url, BAD_REDIRECT, started, str(exc), status=status)
        return FetchResult(
            url, REDIRECT, status=status, redirect_to=target, started=started, finished=self._clock()
        )
