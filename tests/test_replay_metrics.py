"""papers/004 Eqs. 1-3 on hand-made tiny graphs with exact expected R, F, M and P, plus property tests."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_graphs import graph

from oasis.replay.metrics import (
    freshness,
    freshness_from_sums,
    performance,
    quality,
    recall,
    recall_from_sums,
    static_recall_curve,
    upper_bound_performance,
    upper_bound_schedule,
)
from oasis.replay.simulator import CREATE, DELETE, MODIFY, Replay
from oasis.robot.scheduling import make_controller
from oasis.web.model import WebGraph

# s=0 -> a=1, b=2; a -> c=3; r = 0, 1, 2, 3 (sum 6); node 4 unreachable (r 100, never counts)
TINY = graph({0: [1, 2], 1: [3]}, 5, [0.0, 1.0, 2.0, 3.0, 100.0])


def test_eq1_eq2_on_sets() -> None:
    r = {"a": 1.0, "b": 2.0, "c": 3.0}
    # collection {a, b}; web {a, c} (b deleted, c not yet collected)
    assert recall({"a", "b"}, {"a", "c"}, r) == pytest.approx(1 / 4)
    assert freshness({"a", "b"}, {"a", "c"}, r) == pytest.approx(1 / 3)
    assert quality(1 / 4, 1 / 3) == pytest.approx(1 / 4)
    assert freshness(set(), {"a"}, r) == 1.0  # empty collection: nothing stale
    assert recall_from_sums(0.0, 0.0) == 1.0
    assert freshness_from_sums(2.0, 4.0) == 0.5
    assert performance([0.5, 1.0, 0.25], dt=2.0) == 3.5
    with pytest.raises(ValueError):
        recall_from_sums(-1.0, 1.0)


def test_bfs_on_tiny_graph_exact() -> None:
    rep = Replay(TINY, TINY.relevance, [0])
    assert rep.reachable == 4 and rep.total_relevance == 6.0
    res = rep.run(make_controller("bfs", rng=random.Random(0)), m=1, steps=4)
    assert res.fetched == [0, 1, 2, 3]
    assert pytest.approx([0.0, 1 / 6, 3 / 6, 1.0]) == res.R
    assert res.F == [1.0] * 4 and res.M == res.R
    assert pytest.approx(10 / 6) == res.P


def test_graph_constraint_with_m_2() -> None:
    # step 1 can fetch only the seed (nothing else is known yet); step 2 fetches a and b
    rep = Replay(TINY, TINY.relevance, [0])
    res = rep.run(make_controller("bfs", rng=random.Random(0)), m=2, steps=2)
    assert res.fetched == [0, 1, 2]
    assert pytest.approx([0.0, 0.5]) == res.R
    assert pytest.approx(0.5) == res.P


def test_upper_bound_closed_form_tiny() -> None:
    # order c, b, a, s: R = 3/6, 5/6, 1, 1 -> P = 20/6
    assert upper_bound_schedule([0.0, 1.0, 2.0, 3.0]) == [3, 2, 1, 0]
    assert upper_bound_performance([0.0, 1.0, 2.0, 3.0], 1, 4) == pytest.approx(20 / 6)
    # m = 2, T = 2: {c, b} then {a, s}: R = 5/6, 1 -> P = 11/6
    assert upper_bound_performance([0.0, 1.0, 2.0, 3.0], 2, 2) == pytest.approx(11 / 6)
    assert static_recall_curve([3.0, 2.0, 1.0, 0.0], 6.0, 2, 2) == pytest.approx([5 / 6, 1.0])


def test_changing_web_hand_worked() -> None:
    """s -> a, r(s) = r(a) = 1. Events: a modified at 1.5 (not yet collected: harmless), s modified at 2.5
    (its copy goes stale), node b created at 0.5 but nobody links to it."""
    g = graph({0: [1]}, 3, [1.0, 1.0, 0.0])
    rep = Replay(g, g.relevance, [0])
    events = (
        np.array([0.5, 1.5, 2.5]),
        np.array([2, 1, 0], dtype=np.int64),
        np.array([CREATE, MODIFY, MODIFY], dtype=np.int8),
        np.array([0.0, 0.0, 0.5]),
    )
    res = rep.run(make_controller("bfs", rng=random.Random(0)), m=1, steps=3, events=events)
    assert pytest.approx([0.5, 1.0, 0.5]) == res.R
    assert pytest.approx([1.0, 1.0, 0.5]) == res.F
    assert pytest.approx([0.5, 1.0, 0.5]) == res.M
    assert pytest.approx(2.0) == res.P


def test_deletion_found_by_recrawl_restores_freshness() -> None:
    g = graph({0: [1]}, 2, [1.0, 3.0])
    rep = Replay(g, g.relevance, [0])
    events = (np.array([2.5]), np.array([1], dtype=np.int64), np.array([DELETE], dtype=np.int8), np.zeros(2))
    ctl = make_controller(
        "bfs", rng=random.Random(0), recrawl_index=lambda arm, now: now - arm.last_fetch if now > 3 else 0.0
    )
    res = rep.run(ctl, m=1, steps=5, events=events)
    # t1 {s}: R 1/4; t2 {s, a}: 1; t3 a deleted: V = {s}, C = {s, a}: R 1, F 1/4; then re-crawls
    assert res.R[:3] == pytest.approx([0.25, 1.0, 1.0])
    assert res.F[:3] == pytest.approx([1.0, 1.0, 0.25])
    assert res.F[-1] == 1.0 and res.recrawls >= 1  # the deleted page was dropped from the collection


@st.composite
def random_graphs(draw: st.DrawFn) -> tuple[WebGraph, int]:
    n = draw(st.integers(2, 25))
    edges = {i: sorted(set(draw(st.lists(st.integers(0, n - 1), max_size=4))) - {i}) for i in range(n)}
    rel = draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n))
    m = draw(st.integers(1, 3))
    return graph(edges, n, rel), m


@settings(max_examples=40, deadline=None)
@given(random_graphs(), st.sampled_from(["bfs", "random", "greedy-parent", "greedy-oracle", "whittle"]))
def test_static_properties(gm: tuple[WebGraph, int], policy: str) -> None:
    g, m = gm
    rep = Replay(g, g.relevance, [0])
    steps = rep.steps_for(rep.reachable, m)
    oracle = dict(zip(rep.urls, rep.rel_list, strict=True)).__getitem__
    res = rep.run(make_controller(policy, rng=random.Random(1), oracle=oracle), m=m, steps=steps)
    assert all(0.0 <= x <= 1.0 for x in res.R + res.F + res.M)
    assert all(b >= a - 1e-12 for a, b in zip(res.R, res.R[1:], strict=False))  # static: recall never drops
    if m == 1:  # one fetch per step never idles until every reachable page is in
        assert res.R[-1] == pytest.approx(1.0)
    reach_rel = [r for r, ok in zip(rep.rel_list, rep.reach, strict=True) if ok]
    p_upper = upper_bound_performance(reach_rel, m, steps)
    assert p_upper + 1e-9 >= res.P  # the upper bound is never beaten
    ordered = sorted(reach_rel, reverse=True)
    assert p_upper == pytest.approx(performance(static_recall_curve(ordered, sum(reach_rel), m, steps)))


@settings(max_examples=30, deadline=None)
@given(random_graphs(), st.floats(0.0, 0.5), st.floats(0.0, 0.2), st.floats(0.0, 0.5))
def test_changing_web_quality_stays_in_range(
    gm: tuple[WebGraph, int], mod: float, dele: float, create: float
) -> None:
    from oasis.replay.simulator import ChangeModel

    g, m = gm
    rep = Replay(g, g.relevance, [0])
    changes = ChangeModel(modify_rate=mod, delete_rate=dele, create_fraction=create, create_rate=0.5)
    ctl = make_controller("bfs", rng=random.Random(0), recrawl_index=lambda arm, now: now - arm.last_fetch)
    res = rep.run(ctl, m=m, steps=2 * len(rep), changes=changes, rng=np.random.default_rng(3))
    assert all(0.0 <= x <= 1.0 for x in res.R + res.F + res.M)
    assert [min(a, b) for a, b in zip(res.R, res.F, strict=True)] == res.M


def test_bad_inputs() -> None:
    with pytest.raises(ValueError):
        Replay(TINY, [1.0], [0])
    with pytest.raises(ValueError):
        Replay(TINY, TINY.relevance, [])
    with pytest.raises(ValueError):
        Replay(TINY, TINY.relevance, [99])
    with pytest.raises(ValueError):
        Replay(TINY, [-1.0, 0, 0, 0, 0], [0])
