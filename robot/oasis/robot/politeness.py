"""Per-host politeness: robots.txt (protego), Crawl-delay, a minimum gap between requests, back-off.

One :class:`Slot` per ``host[:port]`` (the unit of politeness, :func:`oasis.runtime.urls.host_of`). The
crawler calls :meth:`Politeness.on_dispatch` when a fetcher starts a request to a host and
:meth:`Politeness.on_finish` when the response is complete; a host is ready again ``delay`` seconds after its
last request *finished*, so the gap between two requests as the server sees them is never below the delay. Not
thread-safe: the crawler guards it with its lock.

robots.txt (RFC 9309): fetched once per host before any other request to it, through the same slot; 2xx is
parsed (cut at ``max_robots_bytes``); 4xx means no restrictions; 5xx, 429, timeouts and connection errors
mean "disallow everything for now" and the host is retried after ``robots_retry`` seconds, and given up
after ``robots_max_failures`` attempts. A robots.txt that the parser rejects disallows everything. The rules
expire after ``robots_ttl`` (24 h, RFC 9309 2.4) or the response's Cache-Control max-age (never sooner than
``robots_min_ttl``); the host's pages then wait for the new robots.txt. A refresh that fails keeps the old
rules and is retried after ``robots_retry`` seconds.

Per IP address, beside per host: many hosts may share one server. Once a host's address is known
(:meth:`Politeness.set_ip`, resolved with its robots.txt request), at most ``per_ip_in_flight`` requests
are in flight to that address over all its hosts, and two requests to it start at least ``ip_gap`` apart.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from protego import Protego

from oasis.robot.config import RobotConfig

logger = logging.getLogger(__name__)

UNKNOWN = "unknown"  # robots.txt not fetched yet
FETCHING = "fetching"
READY = "ready"
FAILED = "failed"  # robots.txt unavailable too often: the host is given up


@dataclass
class Slot:
    host: str
    robots_state: str = UNKNOWN
    robots: Protego | None = None  # None with READY: no restrictions (4xx)
    robots_url: str = ""
    robots_failures: int = 0
    robots_redirects: int = 0
    crawl_delay: float = 0.0
    in_flight: int = 0
    next_allowed: float = 0.0  # monotonic seconds
    hold_until: float = 0.0  # robots.txt unreachable: no request before this time
    backoff_until: float = 0.0  # after 429 / 503: no request before this time
    backoffs: int = 0  # consecutive 429/503 answers
    last_started: float = -math.inf
    last_finished: float = -math.inf
    requests: int = 0
    robots_expires: float = math.inf  # monotonic seconds: robots.txt is fetched again from then on
    robots_known: bool = False  # a robots.txt answer was recorded once (a failed refresh keeps it)
    ip: str = ""  # the address the host resolved to ("" until known)


@dataclass
class IpSlot:
    """Requests to one IP address, over all its hosts."""

    in_flight: int = 0
    next_start: float = 0.0  # monotonic seconds


_MAX_AGE = re.compile(r"max-age\s*=\s*(\d+)", re.IGNORECASE)


def ip_literal(host: str) -> str:
    """The address of ``host`` (``name[:port]``, ``[v6]:port``) when it is an IP literal, else ""."""
    name = host[1 : host.index("]")] if host.startswith("[") and "]" in host else host.rsplit(":", 1)[0]
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return ""


def robots_url_for(host: str, scheme: str = "http") -> str:
    return urlunsplit((scheme, host, "/robots.txt", "", ""))


class Politeness:
    def __init__(self, config: RobotConfig) -> None:
        self._config = config
        self._slots: dict[str, Slot] = {}
        self._ips: dict[str, IpSlot] = {}

    # ----- hosts -----
    def slot(self, host: str, scheme: str = "http") -> Slot:
        slot = self._slots.get(host)
        if slot is None:
            slot = Slot(host=host, robots_url=robots_url_for(host, scheme))
            self._slots[host] = slot
            self.set_ip(host, ip_literal(host))  # a name is resolved with its robots.txt request
        return slot

    def known(self, host: str) -> bool:
        return host in self._slots

    def note_url(self, url: str) -> Slot:
        parts = urlsplit(url)
        return self.slot(parts.netloc, parts.scheme or "http")

    def __len__(self) -> int:
        return len(self._slots)

    def slots(self) -> Iterable[Slot]:
        return self._slots.values()

    def delay(self, slot: Slot) -> float:
        """Seconds between the end of one request to the host and the start of the next."""
        if not self._config.politeness:
            return 0.0
        return max(self._config.min_delay, min(slot.crawl_delay, self._config.max_crawl_delay))

    def _free(self, slot: Slot, now: float) -> bool:
        if slot.in_flight >= self._config.host_concurrency or now < slot.next_allowed:
            return False
        ip = self._ips.get(slot.ip) if slot.ip else None
        return ip is None or (ip.in_flight < self._config.ip_concurrency and now >= ip.next_start)

    def set_ip(self, host: str, ip: str) -> None:
        """``host`` resolved to ``ip``: from now on it shares that address's limits with its other hosts."""
        if ip:
            self.slot(host).ip = ip
            self._ips.setdefault(ip, IpSlot())

    def ip_room(self, host: str, now: float) -> int:
        """Requests that may start now to ``host``'s address (a large number while it is unknown): one at a
        time while starts must be ``ip_gap`` apart, else the free request slots of the address."""
        slot = self._slots.get(host)
        ip = self._ips.get(slot.ip) if slot is not None and slot.ip else None
        if ip is None:
            return 1 << 30
        if ip.in_flight >= self._config.ip_concurrency or now < ip.next_start:
            return 0
        return 1 if self._config.ip_gap > 0 else self._config.ip_concurrency - ip.in_flight

    def ip_of(self, host: str) -> str:
        slot = self._slots.get(host)
        return slot.ip if slot is not None else ""

    def ip_in_flight(self, ip: str) -> int:
        slot = self._ips.get(ip)
        return slot.in_flight if slot is not None else 0

    # ----- readiness -----
    def host_ready(self, host: str, now: float) -> bool:
        """May a page request to ``host`` start at ``now``? (robots.txt known, slot free, no back-off)."""
        slot = self._slots.get(host)
        return slot is not None and slot.robots_state == READY and self._free(slot, now)

    def robots_due(self, now: float) -> list[Slot]:
        """Hosts whose robots.txt should be requested now."""
        return [
            s
            for s in self._slots.values()
            if (s.robots_state == UNKNOWN or (s.robots_state == READY and now >= s.robots_expires))
            and self._free(s, now)
        ]

    def next_wakeup(self, now: float) -> float | None:
        """Earliest future time at which a currently blocked, idle host becomes free (None if none)."""
        times = [
            s.next_allowed
            for s in self._slots.values()
            if s.in_flight == 0 and s.next_allowed > now and s.robots_state in (UNKNOWN, READY)
        ]
        return min(times) if times else None

    def can_fetch(self, url: str) -> bool:
        """robots.txt check for a page URL of a READY host (False for hosts not READY)."""
        slot = self._slots.get(urlsplit(url).netloc)
        if slot is None or slot.robots_state != READY:
            return False
        if slot.robots is None:
            return True
        try:
            return bool(slot.robots.can_fetch(url, self._config.robots_agent))
        except Exception:  # a parser bug on hostile input: be conservative
            logger.warning("robots.txt check failed for %s", url[:200], exc_info=True)
            return False

    def given_up(self, host: str) -> bool:
        slot = self._slots.get(host)
        return slot is not None and slot.robots_state == FAILED

    # ----- events -----
    def on_dispatch(self, host: str, now: float, *, robots: bool = False) -> None:
        slot = self.slot(host)
        slot.in_flight += 1
        slot.requests += 1
        slot.last_started = now
        if robots:
            slot.robots_state = FETCHING
        if self._config.politeness:
            slot.next_allowed = math.inf  # until this request finishes
        ip = self._ips.get(slot.ip) if slot.ip else None
        if ip is not None:
            ip.in_flight += 1
            ip.next_start = now + self._config.ip_gap

    def on_finish(
        self, host: str, finished: float, *, throttled: bool = False, retry_after: float | None = None
    ) -> None:
        """A request to ``host`` finished at ``finished``; ``throttled`` for 429/503 (with Retry-After)."""
        slot = self.slot(host)
        slot.in_flight = max(0, slot.in_flight - 1)
        ip = self._ips.get(slot.ip) if slot.ip else None
        if ip is not None:
            ip.in_flight = max(0, ip.in_flight - 1)
        slot.last_finished = max(slot.last_finished, finished)
        wait = self.delay(slot)
        if throttled:
            slot.backoffs += 1
            slot.backoff_until = finished + backoff_seconds(slot.backoffs, retry_after, self._config)
        else:
            slot.backoffs = 0
        hold = max(slot.hold_until, slot.backoff_until)
        if self._config.politeness:
            previous = slot.next_allowed if slot.next_allowed != math.inf else 0.0
            slot.next_allowed = max(previous, finished + wait, hold)
        else:
            slot.next_allowed = hold

    def robots_lifetime(self, cache_control: str | None) -> float:
        """Seconds a robots.txt stays valid: its max-age (no-cache / no-store: the floor), clamped to
        [robots_min_ttl, robots_ttl]; robots_ttl without a Cache-Control header."""
        cfg = self._config
        if not cache_control:
            return cfg.robots_ttl
        found = _MAX_AGE.search(cache_control)
        if found is not None:
            age = float(found.group(1))
        elif "no-cache" in cache_control.lower() or "no-store" in cache_control.lower():
            age = 0.0
        else:
            return cfg.robots_ttl
        return min(cfg.robots_ttl, max(cfg.robots_min_ttl, age))

    def set_robots(
        self, host: str, status: int, content: bytes, now: float, cache_control: str | None = None
    ) -> None:
        """Record the answer to the robots.txt request (status 0: no response)."""
        slot = self.slot(host)
        if not (200 <= status < 500 and status != 429) and slot.robots_known:
            # a refresh failed: keep the rules we have and try again later (RFC 9309 2.4)
            slot.robots_state = READY
            slot.robots_expires = now + self._config.robots_retry
            return
        if 200 <= status < 500 and status != 429:
            slot.robots_known = True
            slot.robots_expires = now + self.robots_lifetime(cache_control)
        if 200 <= status < 300:
            text = content[: self._config.max_robots_bytes].decode("utf-8", errors="replace")
            try:
                slot.robots = Protego.parse(text)
                delay = slot.robots.crawl_delay(self._config.robots_agent)
                # Request-rate: N/T (N requests per T seconds; Seznam, Yandex, Protego): the gap T / N too
                rate = slot.robots.request_rate(self._config.robots_agent)
                if rate is not None and rate.requests > 0 and rate.seconds > 0:
                    delay = max(float(delay or 0.0), rate.seconds / rate.requests)
            except Exception:
                logger.warning("unparsable robots.txt on %s: disallowing the host", host, exc_info=True)
                slot.robots = Protego.parse("User-agent: *\nDisallow: /\n")
                delay = None
            slot.crawl_delay = float(delay) if delay is not None and delay >= 0 else 0.0
            slot.robots_state = READY
        elif 400 <= status < 500 and status != 429:
            slot.robots = None  # "unavailable": no restrictions (RFC 9309 2.3.1.3)
            slot.robots_state = READY
        else:  # 5xx, 429, no response: "unreachable" -> assume complete disallow, retry later
            slot.robots_failures += 1
            if slot.robots_failures >= self._config.robots_max_failures:
                slot.robots_state = FAILED
                logger.warning(
                    "robots.txt of %s unreachable %d times: host given up", host, slot.robots_failures
                )
            else:
                slot.robots_state = UNKNOWN
                slot.hold_until = now + self._config.robots_retry
                if slot.in_flight == 0:
                    slot.next_allowed = max(slot.next_allowed, slot.hold_until)
                # said at once: a crawl waiting on this host shows no progress until the retry
                logger.warning(
                    "robots.txt of %s unreachable (%s; %d of %d): nothing fetched from it for %.0f s, then"
                    " retried",
                    host,
                    f"status {status}" if status else "no response",
                    slot.robots_failures,
                    self._config.robots_max_failures,
                    self._config.robots_retry,
                )

    def give_up(self, host: str) -> None:
        """Never request anything from ``host`` again (e.g. it resolves to a refused private address)."""
        self.slot(host).robots_state = FAILED

    def robots_redirect(self, host: str, target: str) -> None:
        """robots.txt redirected: follow up to 5 hops on the same host, else treat as unavailable (4xx)."""
        slot = self.slot(host)
        slot.robots_redirects += 1
        if urlsplit(target).netloc == host and slot.robots_redirects <= 5:
            slot.robots_url = target
            slot.robots_state = UNKNOWN
        else:
            slot.robots = None
            slot.robots_state = READY

    # ----- checkpoint -----
    def state_dict(self) -> dict[str, object]:
        return {
            host: {
                "robots_state": s.robots_state if s.robots_state != FETCHING else UNKNOWN,
                "robots_failures": s.robots_failures,
            }
            for host, s in self._slots.items()
        }


def backoff_seconds(attempt: int, retry_after: float | None, config: RobotConfig) -> float:
    """Wait after the ``attempt``-th consecutive 429/503: Retry-After if given, else exponential from 1 s;
    both capped at ``max_backoff``."""
    if attempt < 1:
        raise ValueError("attempt must be >= 1")
    if retry_after is not None and retry_after >= 0:
        return min(retry_after, config.max_backoff)
    return min(max(1.0, config.min_delay) * 2.0 ** (attempt - 1), config.max_backoff)
