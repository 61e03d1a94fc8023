"""The request controller's fast paths give the same answers as the plain definitions they replace."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.robot.scheduling import ControllerConfig, Discovered, FetchOutcome, make_controller
from oasis.robot.scheduling.controller import WhittleController
from oasis.robot.scheduling.documents import FRINGE, DocumentTable, host_of
from oasis.robot.scheduling.equations import q_update, q_update_summed
from oasis.robot.scheduling.groups import GroupQueue
from oasis.robot.scheduling.learning import WhittleLearning
from oasis.robot.scheduling.state import STATE_NAMES, DiscoveryContext, GeneralisingState

relevance = st.one_of(
    st.floats(min_value=-0.5, max_value=1.5, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1.0, 0.25, 0.5625, 1e-300, 1.0 - 1e-16, 2.0, -1.0]),
)


@settings(max_examples=300, deadline=None)
@given(
    pr=relevance,
    ar=relevance,
    depth=st.integers(min_value=-3, max_value=20),
    rbins=st.integers(min_value=1, max_value=40),
    abins=st.integers(min_value=1, max_value=10),
    max_depth=st.integers(min_value=0, max_value=8),
)
def test_keyer_equals_the_extractor(
    pr: float, ar: float, depth: int, rbins: int, abins: int, max_depth: int
) -> None:
    ext = GeneralisingState(relevance_bins=rbins, anchor_bins=abins, max_depth=max_depth)
    ctx = DiscoveryContext("http://h/x", "http://h/p", pr, ar, depth, "h")
    key = ext.keyer()
    assert key(pr, ar, depth) == ext(ctx)
    assert key(pr, ar, depth) is key(pr, ar, depth) or depth < 0  # one shared string per state


def _host_reference(url: str) -> str:
    start = url.find("//")
    if start < 0:
        return ""
    start += 2
    end = len(url)
    for sep in "/?#":
        i = url.find(sep, start)
        if 0 <= i < end:
            end = i
    return url[start:end]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="htp:/?#.ab1@[]", max_size=30))
def test_host_split_equals_the_reference(url: str) -> None:
    assert host_of(url) == _host_reference(url)
    assert host_of("http://a.b:8080/x?y#z") == "a.b:8080"


@settings(max_examples=200, deadline=None)
@given(
    q=st.floats(-10, 10),
    g=st.floats(0, 1),
    q_next=st.floats(-10, 10),
    children=st.lists(st.floats(-10, 10), max_size=5),
    alpha=st.floats(0.01, 1.0),
    gamma=st.floats(0.0, 0.99),
)
def test_summed_eq10_is_bitwise_q_update(
    q: float, g: float, q_next: float, children: list[float], alpha: float, gamma: float
) -> None:
    bonus = 0.0
    for c in children:
        bonus += c
    assert q_update_summed(q, g, q_next, bonus, alpha, gamma) == q_update(
        q, g, q_next, children, alpha=alpha, gamma=gamma
    )


def test_group_order_ties_fifo_and_unchanged_rekey_keeps_place() -> None:
    """Three states with equal indices leave in the order they were queued; re-keying one to the same
    value keeps its place, re-keying it up moves it first."""
    cfg = ControllerConfig(state="parent", prior="zero")
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg)
    assert isinstance(ctl, WhittleController)
    ctl.add_seeds(["http://s/a", "http://s/b", "http://s/c"])
    for parent in ctl.next_batch(3, 0.0):
        ctl.report(FetchOutcome(parent, "new", 0.0, [Discovered(parent + "/kid")]), 0.0)
    # every state p:http://s/x has Q = 0: index 0, ties broken by queue order a, b, c
    ctl._rekey_state("p:http://s/a")  # unchanged index: keeps its place
    assert ctl.next_batch(1, 1.0) == ["http://s/a/kid"]
    ctl.q.set("p:http://s/c", 1, 1.0)
    ctl._rekey_state("p:http://s/c")
    assert ctl.next_batch(2, 1.0) == ["http://s/c/kid", "http://s/b/kid"]


@settings(max_examples=200, deadline=None)
@given(
    state=st.sampled_from(STATE_NAMES),
    pr=relevance,
    ar=relevance,
    depth=st.integers(min_value=0, max_value=12),
    parent=st.sampled_from(["http://a/p", "http://b:81/q?x", "http://a/p2"]),
    url=st.sampled_from(["http://a/x", "http://c/y#z", "http://b:81/w"]),
)
def test_link_state_equals_the_extractor(
    state: str, pr: float, ar: float, depth: int, parent: str, url: str
) -> None:
    """The per-link state function (no context object) gives what the configured extractor gives."""
    docs = DocumentTable()
    learning = WhittleLearning(ControllerConfig(state=state), docs, None)
    doc = docs.add(url, pr, depth, FRINGE)
    ctx = DiscoveryContext(url, parent, pr, ar, depth, host_of(url))
    assert learning.link_state(doc, url, parent, pr, ar, depth) == learning.extract(ctx)
    # twice in a row (the parent state caches the last key string)
    assert learning.link_state(doc, url, parent, pr, ar, depth) == learning.extract(ctx)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("pdtx"), st.integers(0, 7), st.sampled_from([0.0, 0.5, 1.0, 2.0]))))
def test_group_queue_against_a_model(ops: list[tuple[str, int, float]]) -> None:
    """GroupQueue pops by key, ties FIFO; an unchanged re-key keeps the place; requeue_top goes behind."""
    queue = GroupQueue()
    model: dict[int, tuple[float, int]] = {}  # item -> (key, seq)
    seq = 0

    def best() -> int | None:
        return min(model, key=lambda i: (-model[i][0], model[i][1])) if model else None

    for op, item, key in ops:
        if op == "p":
            queue.push(item, key)
            if item not in model or model[item][0] != key:
                seq += 1
                model[item] = (key, seq)
        elif op == "d":
            queue.discard(item)
            model.pop(item, None)
        elif op == "t":  # serve the best item and queue it again behind its equals
            top = queue.top()
            assert top == best()
            if top is not None:
                queue.requeue_top(key)
                seq += 1
                model[top] = (key, seq)
        else:
            top = queue.top()
            assert top == best()
            if top is not None:
                queue.drop_top()
                del model[top]
        assert len(queue) == len(model)
        assert queue.ordered() == sorted(model, key=lambda i: (-model[i][0], model[i][1]))
        assert queue.peek_key() == (model[best()][0] if model else None)  # type: ignore[index]
