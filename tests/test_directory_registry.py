"""Registry leases with an injected clock (no sleeping)."""

from __future__ import annotations

import pytest

from oasis.directory.registry import InvalidEngine, Registry, Summary, TermStats


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


SUMMARY = Summary(topic="db", documents=3, total_terms=30, terms={"index": TermStats(df=2, cf=5)})


def test_engine_is_live_until_its_lease_ends_and_heartbeat_renews_it() -> None:
    clock = FakeClock()
    reg = Registry(lease_seconds=5.0, clock=clock)
    assert reg.register(name="a", address="127.0.0.1:5000", summary=SUMMARY) == 5.0
    clock.now += 4.9
    assert [r.name for r in reg.live()] == ["a"]
    assert reg.heartbeat(name="a")  # renewed at t+4.9 -> live until t+9.9
    clock.now += 4.9
    assert [r.name for r in reg.live()] == ["a"]
    clock.now += 0.1  # exactly at the end of the lease
    assert reg.live() == []
    assert reg.heartbeat(name="a") is False  # dropped: must register again


def test_silent_engine_is_dropped_while_others_stay() -> None:
    clock = FakeClock()
    reg = Registry(lease_seconds=2.0, clock=clock)
    reg.register(name="a", address="127.0.0.1:5000", summary=SUMMARY)
    reg.register(name="b", address="127.0.0.1:5001", summary=SUMMARY)
    clock.now += 1.5
    reg.heartbeat(name="b")
    clock.now += 1.0
    assert [r.name for r in reg.live()] == ["b"]


def test_restarted_directory_does_not_know_engines_and_reregistration_restores_them() -> None:
    clock = FakeClock()
    before = Registry(lease_seconds=5.0, clock=clock)
    before.register(name="a", address="127.0.0.1:5000", summary=SUMMARY)
    after = Registry(lease_seconds=5.0, clock=clock)  # a fresh process
    assert after.heartbeat(name="a") is False
    after.register(name="a", address="127.0.0.1:5000", summary=SUMMARY)
    assert after.heartbeat(name="a") is True
    assert [r.address for r in after.live()] == ["127.0.0.1:5000"]


def test_heartbeat_refreshes_summary_and_register_replaces_address() -> None:
    clock = FakeClock()
    reg = Registry(lease_seconds=5.0, clock=clock)
    reg.register(name="a", address="127.0.0.1:5000", summary=SUMMARY)
    newer = Summary(topic="db", documents=9, total_terms=90)
    assert reg.heartbeat(name="a", summary=newer)
    assert reg.live()[0].summary.documents == 9
    assert reg.heartbeat(name="a")  # no summary: keep the last one
    assert reg.live()[0].summary.documents == 9
    reg.register(name="a", address="127.0.0.1:6000", summary=SUMMARY)
    assert [(r.name, r.address) for r in reg.live()] == [("a", "127.0.0.1:6000")]


def test_deregister() -> None:
    reg = Registry(lease_seconds=5.0, clock=FakeClock())
    reg.register(name="a", address="127.0.0.1:5000", summary=SUMMARY)
    assert reg.deregister("a") is True
    assert reg.deregister("a") is False
    assert reg.live() == []


@pytest.mark.parametrize(
    ("name", "address", "match"),
    [
        ("", "127.0.0.1:5000", "empty engine name"),
        ("a" * 201, "127.0.0.1:5000", "longer than"),
        ("a", "127.0.0.1", "host:port"),
        ("a", "127.0.0.1:0", "host:port"),
        ("a", "127.0.0.1:http", "host:port"),
        ("a", ":5000", "host:port"),
    ],
)
def test_bad_registration_is_refused_and_registry_unchanged(name: str, address: str, match: str) -> None:
    reg = Registry(lease_seconds=5.0, clock=FakeClock())
    reg.register(name="ok", address="127.0.0.1:5000", summary=SUMMARY)
    with pytest.raises(InvalidEngine, match=match):
        reg.register(name=name, address=address, summary=SUMMARY)
    assert [r.name for r in reg.live()] == ["ok"]


def test_bad_statistics_and_lease_are_refused() -> None:
    with pytest.raises(InvalidEngine):
        TermStats(df=-1, cf=0)
    with pytest.raises(InvalidEngine):
        Summary(documents=-1)
    with pytest.raises(ValueError):
        Registry(lease_seconds=0, clock=FakeClock())


def test_a_live_name_is_bound_to_its_owner_and_the_registry_is_capped() -> None:
    """Issue 15 item 1: no hijack, no foreign renewal or deregistration, at most max_engines."""
    from oasis.directory.registry import EngineOwned, TooManyEngines

    clock = FakeClock()
    reg = Registry(lease_seconds=5.0, clock=clock, max_engines=2)
    reg.register(name="a", address="127.0.0.1:5000", summary=SUMMARY, owner="tok")
    with pytest.raises(EngineOwned, match=r"held by a live engine at 127\.0\.0\.1:5000"):
        reg.register(name="a", address="127.0.0.1:6666", summary=SUMMARY, owner="evil")
    with pytest.raises(EngineOwned):
        reg.heartbeat(name="a", owner="evil")
    with pytest.raises(EngineOwned):
        reg.deregister("a", owner="")
    assert reg.heartbeat(name="a", owner="tok")
    reg.register(name="a", address="127.0.0.1:5001", summary=SUMMARY, owner="tok")  # the owner may move
    reg.register(name="b", address="127.0.0.1:5002", summary=SUMMARY, owner="b")
    with pytest.raises(TooManyEngines):
        reg.register(name="c", address="127.0.0.1:5003", summary=SUMMARY, owner="c")
    clock.now += 5.0  # both leases end: the names are free again
    reg.register(name="a", address="127.0.0.1:6666", summary=SUMMARY, owner="new")
    assert [r.address for r in reg.live()] == ["127.0.0.1:6666"]
