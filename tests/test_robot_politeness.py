"""Per-host politeness: robots.txt states, Crawl-delay, the gap after a request, back-off (pure)."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.robot.config import RobotConfig
from oasis.robot.fetcher import modified_ago, parse_content_type, parse_retry_after
from oasis.robot.politeness import FAILED, READY, UNKNOWN, Politeness, backoff_seconds

H = "site.test:8080"


def make(**kw: object) -> Politeness:
    return Politeness(RobotConfig(min_delay=0.5, robots_retry=60.0, robots_max_failures=2, **kw))  # type: ignore[arg-type]


def test_robots_first_then_rules_and_crawl_delay() -> None:
    p = make()
    p.slot(H)
    assert not p.host_ready(H, 0.0)  # robots.txt unknown
    assert [s.host for s in p.robots_due(0.0)] == [H]
    p.on_dispatch(H, 0.0, robots=True)
    assert p.robots_due(0.0) == []
    p.set_robots(H, 200, b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n", 0.1)
    p.on_finish(H, 0.1)
    assert p.slot(H).robots_state == READY
    assert p.can_fetch(f"http://{H}/public.html")
    assert not p.can_fetch(f"http://{H}/private/x.html")
    # Crawl-delay 2 s > min_delay 0.5 s, counted from the end of the previous request
    assert not p.host_ready(H, 2.0)
    assert p.host_ready(H, 2.1)
    assert p.next_wakeup(1.0) == pytest.approx(2.1)


def test_request_rate_spaces_requests_as_crawl_delay_does() -> None:
    """``Request-rate: 1/10`` (one request per 10 s) was ignored: the robot kept its own 0.5 s gap. Its gap
    T / N now counts as a Crawl-delay does (the larger of the two), capped by max_crawl_delay; a rate of 0
    requests or one that does not parse changes nothing."""
    cases = [
        ("Request-rate: 1/10\n", 10.0),
        ("Request-rate: 3/1m\nCrawl-delay: 5\n", 20.0),
        ("Request-rate: 10/1\nCrawl-delay: 2\n", 2.0),
        ("Request-rate: 1/1h\n", 30.0),  # capped by max_crawl_delay (30 s)
        ("Request-rate: 0/10\n", 0.5),
        ("Request-rate: often\n", 0.5),
    ]
    for rules, gap in cases:
        p = make()
        p.slot(H)
        p.on_dispatch(H, 0.0, robots=True)
        p.set_robots(H, 200, f"User-agent: *\n{rules}".encode(), 0.0)
        p.on_finish(H, 0.0)
        assert p.next_wakeup(0.0) == pytest.approx(gap), rules


def test_in_flight_blocks_host_until_finished_plus_delay() -> None:
    p = make()
    p.set_robots(H, 404, b"", 0.0)  # 4xx: no restrictions
    assert p.can_fetch(f"http://{H}/anything")
    assert p.host_ready(H, 0.0)
    p.on_dispatch(H, 0.0)
    assert not p.host_ready(H, 100.0)  # one request per host at a time
    p.on_finish(H, 3.0)
    assert not p.host_ready(H, 3.49)
    assert p.host_ready(H, 3.5)


def test_robots_unreachable_retries_then_gives_up(caplog: pytest.LogCaptureFixture) -> None:
    p = make()
    p.on_dispatch(H, 0.0, robots=True)
    with caplog.at_level(logging.WARNING, logger="oasis.robot.politeness"):
        p.set_robots(H, 503, b"", 1.0)
    # said at once (a one-shot crawl of that host waits robots_retry with nothing to show for it)
    assert (
        f"robots.txt of {H} unreachable (status 503; 1 of 2): nothing fetched from it for 60 s" in caplog.text
    )
    p.on_finish(H, 1.0)
    assert p.slot(H).robots_state == UNKNOWN
    assert not p.can_fetch(f"http://{H}/x")  # complete disallow meanwhile
    assert p.robots_due(30.0) == []  # retried after robots_retry
    assert [s.host for s in p.robots_due(61.0)] == [H]
    p.set_robots(H, 0, b"", 61.0)  # no response at all
    assert p.slot(H).robots_state == FAILED and p.given_up(H)
    assert not p.can_fetch(f"http://{H}/x")


def test_huge_and_malformed_robots_txt() -> None:
    p = Politeness(RobotConfig(max_robots_bytes=1024))
    body = b"User-agent: *\nDisallow: /a\n" + b"#" * 10_000 + b"\nDisallow: /b\n"
    p.set_robots(H, 200, body, 0.0)
    assert not p.can_fetch(f"http://{H}/a")
    assert p.can_fetch(f"http://{H}/b")  # beyond the cap: not parsed
    p2 = Politeness(RobotConfig())
    p2.set_robots(H, 200, bytes(range(256)) * 50, 0.0)  # binary junk: parsed best-effort, never raises
    assert p2.slot(H).robots_state == READY


def test_robots_redirect_same_host_followed_other_host_unrestricted() -> None:
    p = make()
    p.robots_redirect(H, f"http://{H}/robots-real.txt")
    assert p.slot(H).robots_state == UNKNOWN and p.slot(H).robots_url.endswith("/robots-real.txt")
    p.robots_redirect("b.test", "http://elsewhere.test/robots.txt")
    assert p.slot("b.test").robots_state == READY and p.can_fetch("http://b.test/x")


def test_backoff_hand_worked() -> None:
    cfg = RobotConfig(min_delay=0.5, max_backoff=30.0)
    assert backoff_seconds(1, None, cfg) == 1.0
    assert backoff_seconds(3, None, cfg) == 4.0  # 1 * 2^(3-1)
    assert backoff_seconds(10, None, cfg) == 30.0  # capped
    assert backoff_seconds(1, 7.0, cfg) == 7.0  # Retry-After wins
    assert backoff_seconds(1, 1e6, cfg) == 30.0
    with pytest.raises(ValueError):
        backoff_seconds(0, None, cfg)


def test_throttled_answer_pushes_next_allowed() -> None:
    p = make()
    p.set_robots(H, 404, b"", 0.0)
    p.on_dispatch(H, 0.0)
    p.on_finish(H, 1.0, throttled=True, retry_after=5.0)
    assert not p.host_ready(H, 5.9)
    assert p.host_ready(H, 6.0)
    p.on_dispatch(H, 6.0)
    p.on_finish(H, 6.1)
    assert p.slot(H).backoffs == 0


def test_politeness_off_has_no_delay_but_keeps_robots() -> None:
    p = Politeness(RobotConfig(politeness=False, max_in_flight=4))
    p.set_robots(H, 200, b"User-agent: *\nDisallow: /x\nCrawl-delay: 10\n", 0.0)
    for _ in range(4):
        assert p.host_ready(H, 0.0)
        p.on_dispatch(H, 0.0)
    assert not p.host_ready(H, 0.0)  # max_in_flight per host
    p.on_finish(H, 0.01)
    assert p.host_ready(H, 0.01)
    assert not p.can_fetch(f"http://{H}/x")


def test_retry_after_and_content_type_parsing() -> None:
    assert parse_retry_after("120", 0.0) == 120.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470.0) == pytest.approx(10.0)
    assert parse_retry_after("soon", 0.0) is None
    assert parse_retry_after(None, 0.0) is None
    assert parse_content_type('text/HTML; charset="ISO-8859-1"') == ("text/html", "ISO-8859-1")
    assert parse_content_type("") == ("", None)


def test_modified_ago_is_date_minus_last_modified_by_the_server_clock() -> None:
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    assert modified_ago({"date": date, "last-modified": "Wed, 21 Oct 2015 07:20:00 GMT"}) == 480.0
    assert modified_ago({"date": date, "last-modified": date}) == 0.0
    # a server that cannot say: no header, no date, a Last-Modified in its own future, a date without zone
    assert modified_ago({"date": date}) is None
    assert modified_ago({"last-modified": date}) is None
    assert modified_ago({"date": "soon", "last-modified": date}) is None
    assert modified_ago({"date": date, "last-modified": "Thu, 22 Oct 2015 07:28:00 GMT"}) is None
    assert modified_ago({"date": date, "last-modified": "Wed, 21 Oct 2015 07:20:00"}) is None


@settings(max_examples=100, deadline=None)
@given(
    delay=st.floats(0.0, 2.0),
    crawl_delay=st.one_of(st.none(), st.floats(0.0, 3.0)),
    steps=st.lists(
        st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.booleans()), min_size=1, max_size=40
    ),
)
def test_requests_started_when_ready_are_never_closer_than_the_delay(
    delay: float, crawl_delay: float | None, steps: list[tuple[float, float, bool]]
) -> None:
    """Whatever the timing of polls and responses (and 429s), a request started only when ``host_ready``
    says so starts at least the host's delay after the previous one finished."""
    p = Politeness(RobotConfig(min_delay=delay))
    rules = "User-agent: *\nDisallow:\n" + (
        f"Crawl-delay: {crawl_delay}\n" if crawl_delay is not None else ""
    )
    p.set_robots(H, 200, rules.encode(), 0.0)
    wanted = p.delay(p.slot(H))
    now, last_finish = 0.0, None
    for wait, duration, throttled in steps:
        now += wait
        if not p.host_ready(H, now):
            continue
        if last_finish is not None:
            assert now - last_finish >= wanted - 1e-9
        p.on_dispatch(H, now)
        assert not p.host_ready(H, now + 1e6)  # one in flight at a time
        now += duration
        p.on_finish(H, now, throttled=throttled, retry_after=0.5 if throttled else None)
        last_finish = now
