"""The request controllers: orders, learning (hand-worked Eq. 10 updates), politeness, checkpoints."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

import pytest

from oasis.robot.scheduling import (
    POLICIES,
    SHIPPED,
    ControllerConfig,
    Discovered,
    FetchOutcome,
    RecrawlArm,
    make_controller,
)
from oasis.robot.scheduling.controller import WhittleController
from oasis.robot.scheduling.qtable import QTable

A, B, C, D, E = (f"http://h{i % 2}/{n}" for i, n in enumerate("abcde"))


def links(*urls: str, anchor_rel: float = 0.0) -> list[Discovered]:
    return [Discovered(u, anchor_relevance=anchor_rel) for u in urls]


def crawl(policy: str, **kw: object) -> list[str]:
    """Seed A; A -> B, C; B -> D; C -> E with relevances A .1, B .2, C .9, D 1.0, E .3."""
    rel = {A: 0.1, B: 0.2, C: 0.9, D: 1.0, E: 0.3}
    out = {A: [B, C], B: [D], C: [E], D: [], E: []}
    ctl = make_controller(policy, rng=random.Random(1), oracle=rel.get, **kw)  # type: ignore[arg-type]
    ctl.add_seeds([A])
    order: list[str] = []
    t = 0.0
    while batch := ctl.next_batch(1, t):
        for url in batch:
            order.append(url)
            ctl.report(FetchOutcome(url, "new", rel[url], links(*out[url])), t)
        t += 1
    assert ctl.frontier_size() == 0 and ctl.in_flight() == 0
    return order


def test_baseline_orders() -> None:
    assert crawl("bfs") == [A, B, C, D, E]
    assert crawl("greedy-oracle") == [A, C, E, B, D]
    assert crawl("greedy-parent") == [A, B, D, C, E]  # B, C tie on parent relevance 0.1 (FIFO); D's parent .2
    assert sorted(crawl("random")) == sorted([A, B, C, D, E])


def crawl_anchored(policy: str) -> list[str]:
    """Seed A (.1) -> B (anchor .0), C (anchor .3); B (.6) -> D (anchor .0); C (.2) -> E (anchor .8)."""
    rel = {A: 0.1, B: 0.6, C: 0.2, D: 0.5, E: 0.4}
    out = {A: [(B, 0.0), (C, 0.3)], B: [(D, 0.0)], C: [(E, 0.8)], D: [], E: []}
    ctl = make_controller(policy, rng=random.Random(1), oracle=rel.get)
    ctl.add_seeds([A])
    order: list[str] = []
    t = 0.0
    while batch := ctl.next_batch(1, t):
        for url in batch:
            order.append(url)
            found = [Discovered(u, anchor_relevance=a) for u, a in out[url]]
            ctl.report(FetchOutcome(url, "new", rel[url], found), t)
        t += 1
    return order


def test_same_tie_break_and_greedy_anchor() -> None:
    # B and C tie on parent relevance (.1): every policy breaks the tie by parent + anchor relevance, as the
    # Whittle controller does inside a state group, so C (anchor .3) goes before B
    assert crawl_anchored("greedy-parent")[:2] == [A, C]
    # then E (parent .2) before B (parent .1) and D (parent .6) last
    assert crawl_anchored("greedy-parent") == [A, C, E, B, D]
    # greedy-anchor keys: B .1 + 0 = .1, C .1 + .3 = .4; after C: E .2 + .8 = 1.0; after B: D .6 + 0 = .6
    assert crawl_anchored("greedy-anchor") == [A, C, E, B, D]
    # the oracle ties nowhere here: B .6, C .2 -> B, D (.5), E after C
    assert crawl_anchored("greedy-oracle") == [A, B, D, C, E]


def test_greedy_anchor_differs_from_greedy_parent() -> None:
    """A strong anchor on a weak parent beats a strong parent with no anchor only under greedy-anchor."""
    rel = {A: 0.5, B: 0.3, C: 0.1, D: 0.9, E: 0.0}
    out = {A: [(B, 0.0), (C, 0.0)], B: [(E, 0.0)], C: [(D, 0.7)], D: [], E: []}

    def order(policy: str) -> list[str]:
        ctl = make_controller(policy, rng=random.Random(1))
        ctl.add_seeds([A])
        got: list[str] = []
        while batch := ctl.next_batch(1, 0.0):
            for url in batch:
                got.append(url)
                found = [Discovered(u, anchor_relevance=a) for u, a in out[url]]
                ctl.report(FetchOutcome(url, "new", rel[url], found), 0.0)
        return got

    # after A, B and C: E (parent B .3, anchor 0) vs D (parent C .1, anchor .7)
    assert order("greedy-parent") == [A, B, C, E, D]
    assert order("greedy-anchor") == [A, B, C, D, E]


def test_whittle_first_updates_hand_worked() -> None:
    cfg = ControllerConfig(state="parent", alpha=0.5, gamma=0.5, prior="zero")  # the paper: Q starts at 0
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg)
    assert isinstance(ctl, WhittleController)
    ctl.add_seeds([A])
    assert ctl.next_batch(3, 0.0) == [A]
    assert ctl.report(FetchOutcome(A, "new", 0.4, links(B, C)), 0.0) == [B, C]
    # Eq. 10 for state "seed": 0.5 * 0 + 0.5 * (0.4 + 0.5 * (0 + Q(p:A) + Q(p:A))) = 0.2
    assert ctl.q.get("seed", 1) == pytest.approx(0.2)
    # passive: 0 + 0.5 * Q(seed, 1) = 0.1 (alpha_passive 1); Eq. 9 index 0.1
    assert ctl.q.get("seed", 0) == pytest.approx(0.1)
    assert ctl.q.index("seed") == pytest.approx(0.1)
    assert ctl.next_batch(1, 1.0) == [B]
    # B discovers D (new) and C again (not new: no bonus for C)
    assert ctl.report(FetchOutcome(B, "new", 0.8, links(D, C)), 1.0) == [D]
    # state p:A: 0.5 * 0 + 0.5 * (0.8 + 0.5 * (0 + Q(p:B)=0)) = 0.4
    assert ctl.q.get(f"p:{A}", 1) == pytest.approx(0.4)
    assert ctl.index_of(C) == pytest.approx(0.2)  # C's state p:A was re-keyed: 0.4 - 0.5 * 0.4
    # C fetched next: its group index 0.2 beats D's unvisited p:B (0)
    assert ctl.next_batch(1, 2.0) == [C]
    ctl.report(FetchOutcome(C, "new", 0.0, []), 2.0)
    # p:A again: 0.5 * 0.4 + 0.5 * (0 + 0) = 0.2
    assert ctl.q.get(f"p:{A}", 1) == pytest.approx(0.2)


@pytest.mark.parametrize(("weight", "expected"), [(1.0, 0.5), (0.25, 0.275), (0.0, 0.2)])
def test_state_child_weight_scales_the_eq10_bonus_by_hand(weight: float, expected: float) -> None:
    """The state index's Eq. 10 sample weighs the children's summed values by ``state_child_weight`` (1: the
    paper as written): seed A (reward .4) discovers B and C, both in state p:A whose row is preset to
    Q(p:A) = (.3, .6), so the summed bonus is .6 + .6 = 1.2 and Q(seed, 1) = .5 (.4 + .5 (0 + w 1.2))."""
    q = QTable(0.0)
    q.put(f"p:{A}", (0.3, 0.6, 1.0))
    cfg = ControllerConfig(state="parent", alpha=0.5, gamma=0.5, prior="zero", state_child_weight=weight)
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg, q=q)
    ctl.add_seeds([A])
    assert ctl.next_batch(1, 0.0) == [A]
    ctl.report(FetchOutcome(A, "new", 0.4, links(B, C)), 0.0)
    assert q.get("seed", 1) == pytest.approx(expected)
    with pytest.raises(ValueError, match="state_child_weight"):
        ControllerConfig(state_child_weight=-0.1)


def test_learning_over_traversals_finds_the_hub() -> None:
    """A hub with low relevance leads to 5 relevant pages; a decoy with higher relevance leads nowhere.
    After a few traversals the learned index must fetch the hub before the decoy; greedy never does."""
    seed, hub, decoy = "http://s/", "http://s/hub", "http://s/decoy"
    kids = [f"http://s/k{i}" for i in range(5)]
    junk = [f"http://s/j{i}" for i in range(5)]
    rel = {seed: 0.0, hub: 0.05, decoy: 0.3, **{k: 0.9 for k in kids}, **{j: 0.0 for j in junk}}
    out = {seed: [decoy, hub], hub: kids, decoy: junk}
    cfg = ControllerConfig(state="url", alpha=0.5, gamma=0.5, prior="zero")
    q = None
    orders = []
    for _ in range(4):
        ctl = make_controller("whittle", rng=random.Random(0), config=cfg, q=q)
        assert isinstance(ctl, WhittleController)
        q = ctl.q
        ctl.add_seeds([seed])
        order = []
        while batch := ctl.next_batch(1, 0.0):
            order += batch
            ctl.report(FetchOutcome(batch[0], "new", rel[batch[0]], links(*out.get(batch[0], []))), 0.0)
        orders.append(order)
    assert orders[-1].index(hub) < orders[-1].index(decoy)
    assert orders[-1][:7] == [seed, hub, *kids]
    assert crawl("greedy-parent")  # sanity of the helper
    gp = make_controller("greedy-oracle", rng=random.Random(0), oracle=rel.get)
    gp.add_seeds([seed])
    first = gp.next_batch(1, 0.0)
    gp.report(FetchOutcome(first[0], "new", 0.0, links(*out[seed])), 0.0)
    assert gp.next_batch(1, 0.0) == [decoy]


def test_host_ready_and_defer() -> None:
    ctl = make_controller("bfs", rng=random.Random(0))
    ctl.add_seeds(["http://a/1", "http://a/2", "http://b/1"])
    assert ctl.next_batch(3, 0.0, host_ready=lambda h: h != "a") == ["http://b/1"]
    got = ctl.next_batch(1, 0.0)
    assert got == ["http://a/1"] and ctl.in_flight() == 2
    ctl.defer("http://a/1")
    assert ctl.frontier_size() == 2 and ctl.in_flight() == 1
    assert ctl.next_batch(5, 0.0) == ["http://a/1", "http://a/2"]
    with pytest.raises(KeyError):
        ctl.defer("http://nowhere/")
    ctl.report(FetchOutcome("http://a/1", "new", 0.1, []), 0.0)
    with pytest.raises(ValueError):
        ctl.defer("http://a/1")


@pytest.mark.parametrize("policy", [*POLICIES, "shipped"])
def test_claim_hands_out_a_fringe_url_out_of_queue_order(policy: str) -> None:
    """``claim`` (a redirect's target, followed at once): a URL waiting in the fringe is in flight from then,
    next_batch never hands it out, and its report or defer ends that like any popped URL's; a URL that does
    not wait there (unknown, in flight, retrieved) is not claimed and nothing changes."""
    rel = {A: 0.1, B: 0.2, C: 0.9, D: 1.0, E: 0.3}
    kw: dict[str, object] = {"config": SHIPPED} if policy == "shipped" else {}
    ctl = make_controller(
        "whittle" if policy == "shipped" else policy,
        rng=random.Random(1),
        oracle=rel.get,
        **kw,  # type: ignore[arg-type]
    )
    ctl.add_seeds([A])
    assert ctl.next_batch(1, 0.0) == [A]
    ctl.report(FetchOutcome(A, "new", 0.1, links(B, C, D)), 0.0)
    assert ctl.frontier_size() == 3 and ctl.in_flight() == 0
    assert not ctl.claim(E) and not ctl.claim(A)  # unknown; retrieved
    assert ctl.claim(D)
    assert ctl.frontier_size() == 2 and ctl.in_flight() == 1 and not ctl.claim(D)  # in flight now
    assert sorted(ctl.next_batch(5, 1.0)) == sorted([B, C])  # never handed out twice
    ctl.defer(C)
    ctl.report(FetchOutcome(D, "new", 1.0, links(E)), 1.0)  # reported like any popped URL
    assert not ctl.claim(D) and ctl.claim(E) and ctl.claim(C)
    assert ctl.in_flight() == 3 and ctl.frontier_size() == 0 and ctl.next_batch(5, 2.0) == []
    ctl.defer(E)  # back in the queue
    assert ctl.next_batch(5, 2.0) == [E]
    for url in (B, C, E):
        ctl.report(FetchOutcome(url, "new", rel[url], []), 3.0)
    assert ctl.in_flight() == 0 and ctl.frontier_size() == 0


@pytest.mark.parametrize("policy", ["whittle", "bfs", "greedy-parent"])
def test_checkpoint_roundtrip_continues_identically(policy: str, tmp_path: Path) -> None:
    rel = {f"http://h/{i}": (i % 7) / 7 for i in range(40)}

    def outlinks(url: str) -> list[Discovered]:
        i = int(url.rsplit("/", 1)[1])
        return links(*[f"http://h/{j}" for j in (2 * i + 1, 2 * i + 2, (i * 5) % 40) if j < 40])

    def run(ctl: object, steps: int) -> list[str]:
        order: list[str] = []
        for t in range(steps):
            for url in ctl.next_batch(2, float(t)):  # type: ignore[attr-defined]
                order.append(url)
                ctl.report(FetchOutcome(url, "new", rel[url], outlinks(url)), float(t))  # type: ignore[attr-defined]
        return order

    cfg = ControllerConfig(state="parent")
    a = make_controller(policy, rng=random.Random(3), config=cfg)
    a.add_seeds(["http://h/0"])
    run(a, 5)
    snap = json.loads(json.dumps(a.state_dict()))
    b = make_controller(policy, rng=random.Random(3), config=cfg)
    b.load_state(snap)
    assert b.frontier_size() == a.frontier_size()
    assert run(b, 30) == run(a, 30)
    if policy == "whittle":
        a.save_q(tmp_path / "q.json")
        c = make_controller(policy, rng=random.Random(3), config=cfg)
        c.load_q(tmp_path / "q.json")
        assert c.q.to_dict() == a.q.to_dict()  # type: ignore[attr-defined]
    else:
        with pytest.raises(NotImplementedError):
            a.save_q(tmp_path / "q.json")


def test_recrawl_hook_puts_retrieved_documents_in_the_same_queue() -> None:
    calls: list[RecrawlArm] = []

    def index(arm: RecrawlArm, now: float) -> float:
        calls.append(arm)
        return arm.relevance * (now - arm.last_fetch)  # grows while the copy ages

    ctl = make_controller(
        "greedy-parent",
        rng=random.Random(0),
        recrawl_index=index,
        config=ControllerConfig(recrawl_rekey=8),
    )
    ctl.add_seeds(["http://a/"])
    ctl.next_batch(1, 0.0)
    ctl.report(FetchOutcome("http://a/", "new", 0.9, links("http://a/x")), 0.0)
    assert ctl.recrawl_size() == 0  # index 0 right after the fetch: passive
    # at t=5 the re-crawl index 0.9 * 5 beats the fringe (parent relevance 0.9)
    assert ctl.next_batch(1, 5.0) == ["http://a/"]
    ctl.report(FetchOutcome("http://a/", "modified", 0.5, []), 5.0)
    assert calls[-1].fetches == 2 and calls[-1].changes == 1 and calls[-1].relevance == 0.5
    assert ctl.next_batch(1, 5.0) == ["http://a/x"]
    ctl.report(FetchOutcome("http://a/x", "deleted", 0.0, []), 6.0)
    assert ctl.status("http://a/x") == "gone"


def test_bad_input() -> None:
    with pytest.raises(ValueError):
        make_controller("nope", rng=random.Random(0))
    with pytest.raises(ValueError):
        make_controller("greedy-oracle", rng=random.Random(0))
    with pytest.raises(ValueError):
        ControllerConfig(gamma=1.0)
    with pytest.raises(ValueError):
        ControllerConfig(state="nope")
    ctl = make_controller("bfs", rng=random.Random(0))
    with pytest.raises(ValueError):
        ctl.report(FetchOutcome("http://a/", "new", -1.0, []), 0.0)
    # a NaN relevance or anchor relevance orders nothing: refused before anything changes
    ctl = make_controller("whittle", rng=random.Random(0), config=ControllerConfig(state="parent"))
    ctl.add_seeds(["http://a/"])
    assert ctl.next_batch(1, 0.0) == ["http://a/"]
    for bad in (
        FetchOutcome("http://a/", "new", math.nan),
        FetchOutcome("http://a/", "new", 0.5, [Discovered("http://a/b", "", math.nan)]),
    ):
        with pytest.raises(ValueError, match=r"NaN|>= 0"):
            ctl.report(bad, 0.0)
        assert ctl.in_flight() == 1 and ctl.known() == 1 and ctl.fringe_relevance() == 0.0
    assert ctl.report(FetchOutcome("http://a/", "new", 0.5, [Discovered("http://a/b", "", 0.5)]), 0.0) == [
        "http://a/b"
    ]


def test_epsilon_exploration_still_visits_everything_once() -> None:
    order = crawl("whittle", config=ControllerConfig(epsilon=0.5))
    assert sorted(order) == sorted([A, B, C, D, E]) and len(order) == 5


def test_whittle_groups_respect_host_readiness() -> None:
    ctl = make_controller("whittle", rng=random.Random(0), config=ControllerConfig(state="parent"))
    ctl.add_seeds(["http://s/"])
    ctl.next_batch(1, 0.0)
    kids = ["http://a/1", "http://a/2", "http://b/1", "http://c/1"]
    ctl.report(FetchOutcome("http://s/", "new", 0.5, links(*kids)), 0.0)
    # all four share the state p:http://s/; host a is blocked, so b and c are served (round robin)
    got = ctl.next_batch(4, 1.0, host_ready=lambda h: h != "a")
    assert sorted(got) == ["http://b/1", "http://c/1"]
    assert ctl.next_batch(4, 1.0, host_ready=lambda h: False) == []
    assert ctl.next_batch(4, 1.0) == ["http://a/1", "http://a/2"]
    assert ctl.frontier_size() == 0 and ctl.in_flight() == 4


def test_state_dict_is_json_and_keeps_the_seen_set() -> None:
    ctl = make_controller("whittle", rng=random.Random(0))
    ctl.add_seeds([A])
    ctl.next_batch(1, 0.0)
    ctl.report(FetchOutcome(A, "new", 0.3, links(B, C)), 0.0)
    snap = json.loads(json.dumps(ctl.state_dict()))
    back = make_controller("whittle", rng=random.Random(0))
    back.load_state(snap)
    # A was retrieved: rediscovering it adds nothing; B and C are still queued
    assert back.report(FetchOutcome(B, "new", 0.1, links(A, D)), 1.0) == [D]
    assert back.frontier_size() == 2  # C and D
    with pytest.raises(ValueError):
        back.load_state(snap)  # needs a fresh controller
    with pytest.raises(ValueError):
        make_controller("bfs", rng=random.Random(0)).load_state(snap)  # wrong policy
    for column, bad in ((2, -0.5), (2, float("nan")), (3, -1.0)):  # a damaged relevance or parent relevance
        damaged = json.loads(json.dumps(snap))
        damaged["docs"][0][column] = bad
        with pytest.raises(ValueError, match="checkpoint row"):
            make_controller("whittle", rng=random.Random(0)).load_state(damaged)


def test_parent_prior_starts_as_fringe_greedy() -> None:
    cfg = ControllerConfig(state="parent", gamma=0.5, prior="parent")
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg)
    assert isinstance(ctl, WhittleController)
    ctl.add_seeds([A])
    ctl.next_batch(1, 0.0)
    ctl.report(FetchOutcome(A, "new", 0.6, links(B)), 0.0)
    # unseen state p:A seeded with Q(x,1) = 0.6, Q(x,0) = 0.3: Eq. 9 index (1 - gamma) * parent relevance
    assert ctl.q.get(f"p:{A}", 1) == pytest.approx(0.6) and ctl.q.visits(f"p:{A}") == 0
    assert ctl.index_of(B) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        ControllerConfig(prior="nope")


def test_frozen_table_uses_the_prior_for_unseen_states(tmp_path: Path) -> None:
    """learn=False still seeds unseen states with the parent prior (as learning does), in a private copy:
    the given table and the file save_q writes stay unchanged."""
    table = QTable()
    table.set(f"p:{A}", 1, 0.9)  # a known state: its learned values are used as they are
    table.set(f"p:{A}", 0, 0.1)
    before = table.to_dict()
    cfg = ControllerConfig(state="parent", gamma=0.5, prior="parent", learn=False)
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg, q=table)
    assert isinstance(ctl, WhittleController)
    ctl.add_seeds([A])
    assert ctl.next_batch(1, 0.0) == [A]
    ctl.report(FetchOutcome(A, "new", 0.6, links(B)), 0.0)
    assert ctl.index_of(B) == pytest.approx(0.8)  # Eq. 9 of the known state p:A, not the prior
    assert ctl.next_batch(1, 0.0) == [B]
    ctl.report(FetchOutcome(B, "new", 0.4, links(C)), 0.0)
    # p:B is unseen: prior Q(x,1) = 0.4, Q(x,0) = 0.2 -> index 0.2 (without the prior it would be 0)
    assert ctl.index_of(C) == pytest.approx(0.2)
    assert table.to_dict() == before  # nothing learned, nothing seeded into the given table
    ctl.save_q(tmp_path / "q.json")
    assert QTable.load(tmp_path / "q.json").to_dict() == before
    zero = make_controller("whittle", rng=random.Random(0), config=replace(cfg, prior="zero"), q=table)
    zero.add_seeds([A])
    zero.next_batch(1, 0.0)
    zero.report(FetchOutcome(A, "new", 0.6, links(B)), 0.0)
    zero.next_batch(1, 0.0)
    zero.report(FetchOutcome(B, "new", 0.4, links(C)), 0.0)
    assert zero.index_of(C) == 0.0  # prior "zero": unseen states read q_init


def _rediscovery_run(
    rediscovery: str, state: str = "generalising", prior: str = "parent"
) -> WhittleController:
    """A (0.5) links B, E, C; B (0.9) links C again: a more relevant parent than C's first one."""
    cfg = ControllerConfig(state=state, gamma=0.5, prior=prior, learn=False, rediscovery=rediscovery)
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg)
    assert isinstance(ctl, WhittleController)
    ctl.add_seeds([A])
    ctl.next_batch(1, 0.0)
    ctl.report(FetchOutcome(A, "new", 0.5, links(B, E, C)), 0.0)
    assert ctl.next_batch(1, 1.0) == [B]  # B, E, C share one state and tie key: FIFO
    ctl.report(FetchOutcome(B, "new", 0.9, links(C)), 1.0)
    return ctl


def test_rediscovery_restates_a_feature_state() -> None:
    """A fringe document linked again by a more relevant page moves to the state of that page's relevance
    (as parent-relevance best-first raises its key); "keep" leaves it in its first state."""
    ctl = _rediscovery_run("restate")
    assert ctl.index_of(C) == pytest.approx(0.45)  # prior of the 0.9 state: (1 - gamma) * 0.9
    assert ctl.index_of(E) == pytest.approx(0.25)  # E keeps the 0.5 state
    snap = json.loads(json.dumps(ctl.state_dict()))
    assert sorted(snap["fringe"]) == sorted(set(snap["fringe"]))  # C listed once
    back = make_controller("whittle", rng=random.Random(0), config=ctl.config)
    back.load_state(snap)
    assert ctl.next_batch(1, 2.0) == back.next_batch(1, 2.0) == [C]
    assert ctl.next_batch(5, 3.0) == back.next_batch(5, 3.0) == [E]  # C once, then E; nothing else
    assert ctl.frontier_size() == back.frontier_size() == 0
    kept = _rediscovery_run("keep")
    assert kept.index_of(C) == pytest.approx(0.25)
    assert kept.next_batch(5, 2.0) == [E, C]
    with pytest.raises(ValueError):
        ControllerConfig(rediscovery="nope")


def test_rediscovery_keeps_the_paper_state_and_hybrid_url_entries() -> None:
    # the parent state is the identity of the first discovering document: unchanged
    parent = _rediscovery_run("restate", state="parent")
    assert parent.next_batch(5, 2.0) == [E, C]
    # prior "zero": an unseen new state has no value to move to; C stays where it was found first
    assert _rediscovery_run("restate", prior="zero").next_batch(5, 2.0) == [E, C]
    # hybrid: C's own URL entry (learned in an earlier crawl) keeps ranking it; E's generalising state moves
    table = QTable()
    table.set(f"u:{C}", 1, 0.2)
    table.set(f"u:{C}", 0, 0.1)
    cfg = ControllerConfig(state="hybrid", gamma=0.5, learn=False)
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg, q=table)
    assert isinstance(ctl, WhittleController)
    ctl.add_seeds([A])
    ctl.next_batch(1, 0.0)
    ctl.report(FetchOutcome(A, "new", 0.5, links(B, E, C)), 0.0)
    assert ctl.next_batch(1, 1.0) == [B]
    ctl.report(FetchOutcome(B, "new", 0.9, links(C, E)), 1.0)
    assert ctl.index_of(C) == pytest.approx(0.1)  # its own entry, not the 0.9 prior
    assert ctl.index_of(E) == pytest.approx(0.45)
    assert ctl.next_batch(5, 2.0) == [E, C]


@pytest.mark.parametrize(
    ("policy", "state"),
    [("whittle", "generalising"), ("whittle", "parent"), ("greedy-parent", ""), ("bfs", "")],
)
def test_fringe_relevance_is_the_sum_over_unfetched_documents(policy: str, state: str) -> None:
    """fringe_relevance() (kept incrementally) equals the sum of the discovering parents' relevance over the
    documents located and not yet retrieved (queued or in flight), through rediscoveries that raise it,
    defers, errors, deletions, unknown reports and a checkpoint round trip."""
    cfg = ControllerConfig(state=state) if state else ControllerConfig()
    make = lambda: make_controller(policy, rng=random.Random(3), config=cfg)  # noqa: E731
    ctl = make()
    rng = random.Random(4)
    ctl.add_seeds([f"http://h{i}/0" for i in range(3)])

    def brute() -> float:
        docs = ctl.docs
        return sum(docs.parent_rel[d] for d, u in enumerate(docs.urls) if ctl.status(u) == "fringe")

    for step in range(300):
        for url in ctl.next_batch(2, float(step)):
            if rng.random() < 0.1:
                ctl.defer(url)
                continue
            kind = rng.choice(["new", "new", "new", "deleted", "error"])
            found = [Discovered(f"http://h{rng.randrange(5)}/{rng.randrange(400)}") for _ in range(3)]
            ctl.report(FetchOutcome(url, kind, rng.random(), found), float(step))  # type: ignore[arg-type]
        if step % 40 == 0:
            unasked = FetchOutcome(f"http://elsewhere/{step}", "new", 0.5, links("http://h9/x"))
            ctl.report(unasked, float(step))  # a redirect target the controller never handed out
        assert ctl.fringe_relevance() == pytest.approx(brute(), abs=1e-9)
        if step == 150:
            again = make()
            again.load_state(json.loads(json.dumps(ctl.state_dict())))
            assert again.fringe_relevance() == pytest.approx(ctl.fringe_relevance(), abs=1e-9)
            ctl = again
    assert brute() > 0
