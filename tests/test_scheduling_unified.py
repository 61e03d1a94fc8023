"""One queue in one unit (issue 10 item 3): fringe and re-crawl arms compared in relevance gained per fetch.

Hand-worked cases of docs/replay.md "One queue in one unit": the Whittle controller's fringe value is
v(x) / (1 - gamma) = Q(x, 1); with the parent prior an unseen state is worth its parent's relevance, the same
number greedy-parent uses; a re-crawl arm is fetched only when its ephemeral Whittle index (papers/002
Theorem 1, at most r P(changed)) is larger.
"""

from __future__ import annotations

import math
import random

import pytest

from oasis.robot.scheduling import ControllerConfig, Discovered, FetchOutcome, make_controller
from oasis.robot.scheduling.controller import WhittleController
from oasis.robot.scheduling.recrawl import recrawl_index


def fixed_index(value: float):  # type: ignore[no-untyped-def]
    return lambda arm, now: value if now > arm.last_fetch else 0.0


@pytest.mark.parametrize("gamma", [0.5, 0.8])
def test_unseen_state_is_worth_its_parent_relevance(gamma: float) -> None:
    """Seed s (r 0.4) -> x. Prior: Q(x,1) = 0.4, Q(x,0) = gamma 0.4, v = (1 - gamma) 0.4; the fringe value
    in the re-crawl unit is v / (1 - gamma) = 0.4 (the running-mean floor after one first fetch of g = 0.4
    is 0.4 too)."""
    for value, first in ((0.39, "http://h/x"), (0.41, "http://h/s")):
        ctl = make_controller(
            "whittle",
            rng=random.Random(0),
            config=ControllerConfig(gamma=gamma),
            recrawl_index=fixed_index(value),
        )
        assert isinstance(ctl, WhittleController)
        ctl.add_seeds(["http://h/s"])
        assert ctl.next_batch(1, 0.0) == ["http://h/s"]
        ctl.report(FetchOutcome("http://h/s", "new", 0.4, [Discovered("http://h/x")]), 0.0)
        assert ctl._fringe_value() == pytest.approx(0.4)
        # a re-crawl arm worth 0.39 per fetch waits; one worth 0.41 goes first
        assert ctl.next_batch(1, 1.0) == [first]


def test_learned_state_value_counts_its_children() -> None:
    """After learning, Q(x,1) = g + gamma sum max Q(children) (Eq. 10 with alpha = 1): the fringe value of
    a state whose pages lead to relevant children is above its immediate relevance."""
    cfg = ControllerConfig(gamma=0.5, alpha=1.0, state="parent")
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg)
    assert isinstance(ctl, WhittleController)
    ctl.add_seeds(["http://h/s"])
    ctl.next_batch(1, 0.0)
    # s (r .2) -> a, b (state p:s, prior Q(.,1) = .2)
    ctl.report(
        FetchOutcome("http://h/s", "new", 0.2, [Discovered("http://h/a"), Discovered("http://h/b")]), 0
    )
    assert ctl.next_batch(1, 1.0) == ["http://h/a"]
    # a (r .1) discovers c (new state p:a, prior Q(p:a,1) = .1): Q(p:s,1) = .1 + .5 (.1) = .15 (alpha 1)
    ctl.report(FetchOutcome("http://h/a", "new", 0.1, [Discovered("http://h/c")]), 1.0)
    q1 = ctl.q.get("p:http://h/s", 1)
    assert q1 == pytest.approx(0.15)
    # best group: p:s (b) with v = (1 - .5) .15 = .075 vs p:a (c) with v = .05 -> fringe value .15, floored
    # by the running mean of first rewards (.2 + .1) / 2 = .15
    assert ctl._fringe_value() == pytest.approx(0.15)


def test_recrawl_index_is_at_most_relevance_times_change_probability() -> None:
    """Theorem 1's index is in the fringe's unit: 0 just after a fetch, <= r (1 - e^{-lam a}), -> r."""
    r, lam = 0.8, 0.05
    assert recrawl_index(r, lam, 0.0) == 0.0
    for age in (1.0, 5.0, 20.0, 100.0):
        assert 0.0 <= recrawl_index(r, lam, age) <= r * -math.expm1(-lam * age) + 1e-12
    assert recrawl_index(r, lam, 1e5) == pytest.approx(r, rel=1e-6)
