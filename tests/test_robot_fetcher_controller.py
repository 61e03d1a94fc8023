"""The fetcher controller (papers/004's single-server queue): hand-worked cases and invariants."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.robot.fetcher_controller import (
    FetcherController,
    FetcherControllerConfig,
    ewma,
    n_star,
    n_target,
)


def test_ewma_hand_worked() -> None:
    assert ewma(None, 4.0, 0.25) == 4.0
    assert ewma(4.0, 8.0, 0.25) == pytest.approx(5.0)  # 0.75 * 4 + 0.25 * 8
    with pytest.raises(ValueError):
        ewma(1.0, 1.0, 0.0)


def test_n_star_is_littles_law() -> None:
    # mu = 50 responses/s, L = 0.1 s: 5 in flight give lam = 5 / 0.1 = 50 = mu
    assert n_star(50.0, 0.1) == 5
    # mu = 20/s, L = 0.13 s: mu * L = 2.6 -> 3 (2 would leave the processor idle 13% of the time)
    assert n_star(20.0, 0.13) == 3
    assert n_star(1.0, 0.01) == 1  # never below one
    with pytest.raises(ValueError):
        n_star(-1.0, 0.1)


def test_n_target_corrects_by_queue_length() -> None:
    # balance 5, queue target 2: empty queue -> 7, queue of 2 -> 5, queue of 6 -> 1
    assert n_target(5, 0, 2, 1, 16) == 7
    assert n_target(5, 2, 2, 1, 16) == 5
    assert n_target(5, 6, 2, 1, 16) == 1
    assert n_target(5, 0, 2, 1, 6) == 6  # bounded by the maximum
    assert n_target(5, 50, 2, 1, 6) == 1  # and by the minimum
    with pytest.raises(ValueError):
        n_target(5, 0, 2, 3, 2)


def test_controller_decisions_from_measured_rates() -> None:
    fc = FetcherController(
        FetcherControllerConfig(max_in_flight=16, target_queue=2, initial_in_flight=2, beta=1.0)
    )
    # before any measurement: the initial target plus the queue correction
    assert fc.decide(in_flight=0, queue_len=0) == 4
    fc.observe_fetch(0.1)  # L = 0.1 s
    fc.observe_service(0.2, count=10)  # 20 ms per response: mu = 50/s
    assert fc.mu == pytest.approx(50.0)
    # n* = 5, queue empty: target 7; with 3 in flight start 4 more
    assert fc.decide(in_flight=3, queue_len=0) == 4
    # the queue has grown to 6: target 1, start nothing
    assert fc.decide(in_flight=3, queue_len=6) == 0
    assert fc.last_target == 1
    assert fc.max_target == 7
    assert fc.decisions == 3 and fc.started == 8


def test_slow_processor_lowers_concurrency() -> None:
    fc = FetcherController(FetcherControllerConfig(max_in_flight=32, target_queue=0, beta=1.0))
    fc.observe_fetch(0.05)
    fc.observe_service(0.001)  # 1000/s: n* = ceil(50) = 50 -> capped at 32
    assert fc.target(0) == 32
    fc.observe_service(0.05)  # 20/s: n* = ceil(1.0) = 1
    assert fc.target(0) == 1


@settings(max_examples=200, deadline=None)
@given(
    latency=st.floats(0.0, 5.0),
    service=st.floats(0.0, 1.0),
    q=st.integers(0, 100),
    n_max=st.integers(1, 64),
)
def test_target_bounded_and_monotone_in_queue(latency: float, service: float, q: int, n_max: int) -> None:
    fc = FetcherController(FetcherControllerConfig(max_in_flight=n_max, initial_in_flight=1, beta=1.0))
    fc.observe_fetch(latency)
    fc.observe_service(service)
    t = fc.target(q)
    assert 1 <= t <= n_max
    assert fc.target(q + 1) <= t  # a longer response queue never asks for more requests
    if fc.mu is not None and not math.isinf(fc.mu):
        assert fc.target(0) >= min(n_max, n_star(fc.mu, latency))
