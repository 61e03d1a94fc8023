"""Capped exponential back-off of failing engines, with an injected clock."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.broker.suspension import BackoffPolicy, Suspensions


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_policy_by_hand() -> None:
    p = BackoffPolicy(threshold=2, base_seconds=1.0, cap_seconds=60.0)
    # failures below the threshold: no suspension; then 1, 2, 4, ... capped at 60
    assert [p.suspension(n) for n in range(1, 10)] == [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert p.suspension(10_000) == 60.0


def test_suspension_grows_ends_and_success_resets() -> None:
    clock = FakeClock()
    s = Suspensions(BackoffPolicy(threshold=2, base_seconds=1.0, cap_seconds=4.0), clock)
    assert s.record_failure("e") == 0.0
    assert s.suspended_for("e") == 0.0  # one failure is not enough
    assert s.record_failure("e") == 1.0
    assert s.suspended_for("e") == 1.0
    clock.now = 0.5
    assert s.suspended_for("e") == 0.5
    clock.now = 1.0
    assert s.suspended_for("e") == 0.0  # suspension over: the next query probes it
    assert s.record_failure("e") == 2.0  # probe failed: twice as long
    clock.now = 3.0
    assert s.record_failure("e") == 4.0
    clock.now = 7.0
    assert s.record_failure("e") == 4.0  # capped
    assert s.failures("e") == 5
    clock.now = 11.0
    s.record_success("e")  # the engine recovered
    assert s.failures("e") == 0
    assert s.suspended_for("e") == 0.0
    assert s.record_failure("e") == 0.0  # counting starts again
    assert s.suspended_for("other") == 0.0


def test_policy_validation() -> None:
    with pytest.raises(ValueError):
        BackoffPolicy(threshold=0)
    with pytest.raises(ValueError):
        BackoffPolicy(base_seconds=10.0, cap_seconds=1.0)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 5), st.floats(0.01, 5), st.floats(5, 100), st.integers(1, 200))
def test_back_off_is_monotone_and_capped(threshold: int, base: float, cap: float, n: int) -> None:
    p = BackoffPolicy(threshold=threshold, base_seconds=base, cap_seconds=cap)
    assert 0.0 <= p.suspension(n) <= p.suspension(n + 1) <= cap


def test_concurrent_failures_count_once_and_a_suspended_engine_is_probed_every_period() -> None:
    """Issue 15 item 3: calls in flight together that fail together are one failure, not one each."""
    clock = FakeClock()
    s = Suspensions(BackoffPolicy(threshold=2, base_seconds=1.0, cap_seconds=60.0, probe_seconds=0.5), clock)
    clock.now = 0.3
    for _ in range(8):  # eight queries started at 0.0, all failing at 0.3
        s.record_failure("e", started=0.0)
    assert s.failures("e") == 1 and s.suspended_for("e") == 0.0
    clock.now = 0.6
    assert s.record_failure("e", started=0.31) == 1.0  # a later query: the second failure
    assert [s.record_failure("e", started=0.31) for _ in range(3)] == [1.0] * 3  # its peers: not again
    assert s.failures("e") == 2
    assert s.probe_due("e") and not s.probe_due("e")  # one probe per period
    clock.now = 1.1
    assert s.probe_due("e")
    s.record_success("e")  # the probe answered
    assert s.suspended_for("e") == 0.0 and not s.probe_due("e")
