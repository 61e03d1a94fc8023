"""Issue 10, part 2: the changing-web reference is a real upper bound that never counts a page before it
exists; FRINGE+RECRAWL policies (uniform, Nutch adaptive with SYNC_DELTA, Whittle) share the fetch budget;
seeds given as paths relative to the corpus root."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_graphs import graph

from oasis.replay.experiment import Experiment, ExperimentConfig, Prepared, resolve_seed
from oasis.replay.simulator import CREATE, DELETE, MODIFY, ChangeModel, Replay
from oasis.robot.scheduling import make_controller
from oasis.robot.scheduling.recrawl import (
    AdaptiveFetchSchedule,
    ScheduleRecrawl,
    UniformSchedule,
    WhittleRecrawl,
    freshness_index,
)
from oasis.web.model import Corpus, WebGraph


def test_bound_never_counts_a_page_before_it_exists() -> None:
    """s (r 1) -> a (r 3, created at 2.5), b (r 2, deleted at 1.5); m = 1.

    t = 1: V = {s, b} (a absent), top-1 = 2 (b), S_V = 3 -> 2/3.
    t = 2: b deleted: V = {s}, top-2 = 1 -> 1.
    t = 3: a created: V = {s, a}, S_V = 4, top-3 = 4 -> 1.
    The old reference pre-seeded a, fetched it at t = 1 before it existed and marked it gone for ever.
    """
    g = graph({0: [1, 2]}, 3, [1.0, 3.0, 2.0])
    rep = Replay(g, g.relevance, [0])
    events = (
        np.array([1.5, 2.5]),
        np.array([2, 1], dtype=np.int64),
        np.array([DELETE, CREATE], dtype=np.int8),
        np.array([0.0, 2.5, 0.0]),
    )
    assert rep.upper_bound_curve(events, m=1, steps=3) == pytest.approx([2 / 3, 1.0, 1.0])
    # with m = 1 and a web of s (1), a (3), b (2) all present: top-1 = 3 / 6, top-2 = 5 / 6, then 1
    none = (np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8), np.zeros(3))
    assert rep.upper_bound_curve(none, m=1, steps=4) == pytest.approx([0.5, 5 / 6, 1.0, 1.0])
    # modifications do not move the bound
    mod = (np.array([0.5]), np.array([1], dtype=np.int64), np.array([MODIFY], dtype=np.int8), np.zeros(3))
    assert rep.upper_bound_curve(mod, m=2, steps=2) == pytest.approx([5 / 6, 1.0])


@st.composite
def small_webs(draw: st.DrawFn) -> tuple[WebGraph, int]:
    n = draw(st.integers(3, 14))
    edges = {i: sorted(set(draw(st.lists(st.integers(0, n - 1), max_size=3))) - {i}) for i in range(n)}
    edges[0] = sorted(set(edges[0]) | {1})
    rel = draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n))
    return graph(edges, n, rel), draw(st.integers(1, 2))


POLICIES = (
    "upper",
    "random",
    "bfs",
    "greedy-parent",
    "greedy-anchor",
    "greedy-oracle",
    "greedy-lookahead",
    "whittle",
    "whittle:hybrid",
    "greedy-anchor+uniform",
    "greedy-anchor+adaptive",
    "greedy-oracle+whittle",
    "greedy-anchor+whittle-true",
    "bfs+none",
)


@settings(max_examples=25, deadline=None)
@given(small_webs(), st.floats(0.0, 0.3), st.floats(0.0, 0.1), st.floats(0.0, 0.5), st.integers(0, 3))
def test_every_policy_stays_below_the_reference(
    gm: tuple[WebGraph, int], mod: float, dele: float, create: float, seed: int
) -> None:
    g, m = gm
    rep = Replay(g, g.relevance, [0])
    prepared = Prepared(replay=rep, corpus=Corpus(pages={}, seeds=[]), topic=None, meta={})
    changes = ChangeModel(modify_rate=mod, delete_rate=dele, create_fraction=create, create_rate=0.3)
    cfg = ExperimentConfig(
        policies=POLICIES,
        traversals=2,
        random_runs=2,
        m=m,
        budget=3 * len(rep),
        seed=seed,
        changes=None if changes.static else changes,
    )
    res = Experiment(prepared, cfg).run()
    for name, entry in res["policies"].items():
        for ratio, p in zip(entry["P_ratio"], entry["P"], strict=True):
            assert ratio <= 1.0 + 1e-9, name
            assert p <= res["upper_P"] + 1e-9, name


def test_recrawl_suffixes_and_defaults() -> None:
    g = graph({0: [1, 2, 3], 1: [4], 2: [5], 3: [0]}, 6, [0.2, 0.9, 0.5, 0.1, 0.8, 0.3])
    rep = Replay(g, g.relevance, [0])
    prepared = Prepared(replay=rep, corpus=Corpus(pages={}, seeds=[]), topic=None, meta={})
    changes = ChangeModel(modify_rate=0.05)
    cfg = ExperimentConfig(
        policies=("greedy-anchor", "greedy-anchor+uniform", "greedy-anchor+adaptive", "whittle", "bfs+none"),
        traversals=1,
        budget=60,
        changes=changes,
    )
    exp = Experiment(prepared, cfg)
    res = exp.run()["policies"]
    assert res["greedy-anchor"]["recrawl"] == "whittle"  # auto on a changing web
    assert res["whittle"]["recrawl"] == "whittle"  # plain whittle: the unified queue
    assert res["bfs+none"]["recrawl"] == "none" and res["bfs+none"]["recrawls"] == 0
    for name in ("greedy-anchor+uniform", "greedy-anchor+adaptive", "whittle"):
        assert res[name]["recrawls"] > 0, name
        assert res[name]["fetches"] == 60  # the same fetch budget
    # a static web: auto is none
    static = Experiment(prepared, ExperimentConfig(policies=("bfs",), traversals=1))
    assert static.recrawl_kind("bfs") == "none" and static.recrawl_kind("bfs+uniform") == "uniform"
    with pytest.raises(ValueError):
        ExperimentConfig(policies=("greedy-anchor+sometimes",))
    with pytest.raises(ValueError):
        ExperimentConfig(policies=("upper+uniform",))


def test_true_rate_reference_uses_the_drawn_rates() -> None:
    """``+whittle-true``: the Whittle hook with each page's true modification rate (the rates the change
    events were drawn with: mean x Exp(1), the first draw of the run's change generator when nothing is
    created), the same index and pooled unit as the robot's hook."""
    g = graph({0: [1, 2, 3], 1: [4], 2: [5], 3: [0]}, 6, [0.2, 0.9, 0.5, 0.1, 0.8, 0.3])
    rep = Replay(g, g.relevance, [0])
    prepared = Prepared(replay=rep, corpus=Corpus(pages={}, seeds=[]), topic=None, meta={})
    cfg = ExperimentConfig(
        policies=("greedy-anchor+whittle-true",),
        traversals=1,
        budget=60,
        seed=3,
        changes=ChangeModel(modify_rate=0.05),
    )
    exp = Experiment(prepared, cfg)
    res = exp.run()["policies"]["greedy-anchor+whittle-true"]
    assert res["recrawl"] == "whittle-true" and res["recrawls"] > 0 and res["fetches"] == 60
    truth = 0.05 * np.random.default_rng([3, 7]).exponential(1.0, 6)
    assert rep.modify_rates == pytest.approx(truth)
    hook = exp.recrawl_hook("whittle-true")
    arm = Arm(rep.urls[4], 0.8, 2.0, 1, 0)
    assert hook is not None
    value = hook(arm, 12.0)
    assert hook.pool is not None
    assert value == pytest.approx(freshness_index(0.8, truth[4], 10.0) * hook.pool.rate())


class Arm:
    def __init__(self, url: str, relevance: float, last_fetch: float, fetches: int, changes: int) -> None:
        self.url, self.relevance, self.last_fetch = url, relevance, last_fetch
        self.fetches, self.changes = fetches, changes


def test_nutch_adaptive_schedule_with_sync_delta_hand_worked() -> None:
    s = AdaptiveFetchSchedule(min_interval=1.0, max_interval=100.0, initial_interval=10.0)
    # not modified, no modified time known (Nutch: modifiedTime = fetchTime, delta 0): x 1.4, due at t + 14
    assert s.next_fetch(10.0, 10.0, False, 0.0) == pytest.approx((14.0, 24.0))
    # modified, last change at 4 (delta 6 < 8 = 10 x 0.8): interval 8; reference 10 - round(6 x 0.3) = 8
    assert s.next_fetch(10.0, 10.0, True, 4.0) == pytest.approx((8.0, 16.0))
    # a change long ago (delta 40 > 14): the interval jumps to delta; reference 50 - 12 = 38
    assert s.next_fetch(50.0, 10.0, False, 10.0) == pytest.approx((40.0, 78.0))
    # without SYNC_DELTA only INC/DEC and the clamp
    plain = AdaptiveFetchSchedule(
        min_interval=1.0, max_interval=12.0, initial_interval=10.0, sync_delta=False
    )
    assert plain.next_fetch(50.0, 10.0, False, 10.0) == pytest.approx((12.0, 62.0))
    # the hook estimates the modified time as the middle of the interval that saw the change
    hook = ScheduleRecrawl(s, initial_interval=10.0)
    assert hook(Arm("a", 0.5, 0.0, 1, 0), 9.0) < 1e-8  # not due before 10: only fills idle fetches
    assert hook(Arm("a", 0.5, 0.0, 1, 0), 10.0) == pytest.approx(0.5)  # due: worth its relevance
    assert hook(Arm("a", 0.5, 0.0, 1, 0), 20.0) == pytest.approx(1.0)  # twice overdue
    hook(Arm("a", 0.5, 10.0, 2, 1), 10.0)  # changed in (0, 10]: modified ~ 5, delta 5; interval 8, ref 8.5
    assert hook.due(Arm("a", 0.5, 10.0, 2, 1)) == pytest.approx(10.0 - round(5 * 0.3) + 8.0)
    uni = ScheduleRecrawl(UniformSchedule(interval=4.0), initial_interval=4.0)
    assert uni(Arm("b", 0.3, 1.0, 1, 0), 4.0) < 1e-8
    assert uni(Arm("b", 0.3, 1.0, 1, 0), 5.0) == pytest.approx(0.3)


def test_seed_url_relative_to_the_corpus_root() -> None:
    urls = [
        "http://docs.local/index.html",
        "http://docs.local/lib/index.html",
        "http://docs.local/lib/a.html",
    ]
    index = {u: i for i, u in enumerate(urls)}
    assert resolve_seed("index.html", urls, index) == 0  # the one nearest the root
    assert resolve_seed("/lib/a.html", urls, index) == 2
    assert resolve_seed("lib/index.html", urls, index) == 1
    assert resolve_seed("http://docs.local/lib/a.html", urls, index) == 2
    assert resolve_seed("missing.html", urls, index) is None
    assert resolve_seed("http://other/index.html", urls, index) is None


@pytest.mark.parametrize("last_modified", [True, False])
def test_a_web_that_answers_last_modified_tells_first_retrievals_past(last_modified: bool) -> None:
    """s -> p1..p6, m = 1, pages fetched at t = 1..7 in some order; p1..p3 modified at t = 1.5, the others
    never. With ``last_modified`` each first retrieval after t = 2 is one observation of its page over
    (0, t]: changed for a page modified at 1.5 (its Last-Modified is after the crawl's start), not for the
    others (theirs is t = 0, the web's); without it no page has an observation before its first re-crawl."""
    g = graph({0: [1, 2, 3, 4, 5, 6]}, 7, [1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    rep = Replay(g, g.relevance, [0])
    events = (
        np.array([1.5, 1.5, 1.5]),
        np.array([1, 2, 3], dtype=np.int64),
        np.array([MODIFY, MODIFY, MODIFY], dtype=np.int8),
        np.zeros(7),
    )
    hook = WhittleRecrawl(period=1.0)
    ctl = make_controller("greedy-anchor", rng=random.Random(0), recrawl_index=hook)
    result = rep.run(ctl, m=1, steps=7, changes=ChangeModel(last_modified=last_modified), events=events)
    assert result.first_fetches == 7
    first = {rep.urls.index(u): h.estimator._order[0] for u, h in hook._docs.items() if h.estimator.n}
    if not last_modified:
        assert first == {}
        return
    when = {i: float(k + 1) for k, i in enumerate(result.fetched)}  # each page's first retrieval
    expected = {i: (i in (1, 2, 3), when[i]) for i in range(1, 7) if when[i] > 2.0}
    assert first == expected and any(changed for changed, _ in first.values())
