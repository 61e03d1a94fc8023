"""URL canonicalisation shared by every component: the engine's index key, the broker's dedupe key and
the robot's seen-set key must agree, so there is exactly one function for it."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

from w3lib.url import canonicalize_url

ALLOWED_SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL_LENGTH = 4096
# WHATWG URL "forbidden host code points" (':' only inside an IPv6 literal); whitespace and controls too
_FORBIDDEN_HOST = frozenset("\x00\t\n\r #/<>?@[\\]^|%")


class InvalidURL(ValueError):
    """The string is not an absolute http(s) URL that Oasis can fetch or index."""


def canonicalize(url: str) -> str:
    """Canonical form: lower-case scheme and host, default port dropped, dot segments resolved,
    query arguments sorted, fragment dropped, percent-encoding normalised.

    Raises :class:`InvalidURL` for anything but an absolute http/https URL.
    """
    if not isinstance(url, str) or not url.strip():
        raise InvalidURL("empty URL")
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise InvalidURL(f"URL longer than {MAX_URL_LENGTH} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"malformed URL {url[:200]!r}: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise InvalidURL(f"scheme {scheme or '(none)'!r} is not http or https: {url[:200]!r}")
    if not parts.hostname:
        raise InvalidURL(f"no host in {url[:200]!r}")
    host = parts.hostname.lower().rstrip(".")
    if ":" in host:  # IPv6 literal
        try:
            ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise InvalidURL(f"bad IPv6 host in {url[:200]!r}") from exc
        host = f"[{host}]"
    elif not host or any(c in _FORBIDDEN_HOST or c.isspace() or not c.isprintable() for c in host):
        raise InvalidURL(f"bad host {host[:100]!r} in {url[:200]!r}")
    netloc = host if port is None or port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"
    rebuilt = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))
    try:
        return canonicalize_url(rebuilt, keep_fragments=False)
    except ValueError as exc:  # pragma: no cover - w3lib rejects very little
        raise InvalidURL(f"malformed URL {url[:200]!r}: {exc}") from exc


def host_of(url: str) -> str:
    """``host[:port]`` of an (already canonical) URL: the unit of politeness."""
    return urlsplit(url).netloc
