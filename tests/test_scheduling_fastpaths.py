"""The request controller's fast paths give the same answers as the plain definitions they replace."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.robot.scheduling import ControllerConfig, Discovered, FetchOutcome, make_controller
from oasis.robot.scheduling.controller import WhittleController
from oasis.robot.scheduling.documents import host_of as _host
from oasis.robot.scheduling.equations import q_update, q_update_summed
from oasis.robot.scheduling.state import DiscoveryContext, GeneralisingState

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
    assert _host(url) == _host_reference(url)
    assert _host("http://a.b:8080/x?y#z") == "a.b:8080"


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
