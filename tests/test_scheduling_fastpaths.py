"""The request controller's fast paths give the same answers as the plain definitions they replace."""

from __future__ import annotations

import dataclasses
import heapq
import random
from array import array
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.robot.scheduling import ControllerConfig, Discovered, FetchOutcome, make_controller
from oasis.robot.scheduling.controller import WhittleController
from oasis.robot.scheduling.documents import FLIGHT, FRINGE, DocumentTable, host_of
from oasis.robot.scheduling.equations import q_update, q_update_summed
from oasis.robot.scheduling.groups import DOC_MASK, GroupQueue, StateGroups, entry_key, pop_document
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


def test_rekey_of_the_top_item_replaces_its_entry_in_place() -> None:
    """Re-keying the best item (the group just served, then its Q-update) leaves no stale heap entry, and the
    order is that of a fresh entry: up stays first, down goes behind the others."""
    queue = GroupQueue()
    queue.push(0, 1.0)
    queue.push(1, 0.5)
    queue.push(2, 0.5)
    queue.push(0, 2.0)  # up: the top entry replaced without a sift
    assert len(queue._heap) == 3 and queue.ordered() == [0, 1, 2]
    queue.push(0, 0.5)  # down: replaced and sifted, behind the equal keys queued before it
    assert len(queue._heap) == 3 and queue.ordered() == [1, 2, 0]
    assert queue.top() == 1 and queue.peek_key() == 0.5
    queue.push(2, 0.7)  # not the top: a new entry (the old one goes stale)
    assert len(queue._heap) == 4 and queue.ordered() == [2, 1, 0]


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


def _pop_reference(
    queue: GroupQueue,
    groups: StateGroups,
    host_ready: Callable[[int], bool] | None,
    index: Callable[[str], float],
) -> int | None:
    """The plain composition that ``pop_document`` fuses."""
    aside: list[int] = []
    found: int | None = None
    while (gid := queue.top()) is not None:
        picked = groups.take(gid, host_ready)
        if picked is None:
            queue.drop_top()
            if groups.live[gid] > 0:
                aside.append(gid)
            continue
        if groups.leave(gid):
            queue.drop_top()
        else:
            queue.requeue_top(index(groups.state[gid]))
        found = picked
        break
    for gid in aside:
        queue.push(gid, index(groups.state[gid]))
    return found


def _grouped_fringe() -> tuple[DocumentTable, list[str | None], GroupQueue, StateGroups]:
    table = DocumentTable()
    states: list[str | None] = table.list_column()
    tie = table.column("d")
    return table, states, GroupQueue(), StateGroups(table, states, tie)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from("aapr"),  # add a document, pop one, re-key a state
            st.integers(0, 3),  # state
            st.integers(0, 2),  # host
            st.sampled_from([0.0, 0.5, 1.0]),  # tie-break key / index
            st.sets(st.integers(0, 2)),  # blocked hosts for a pop (one in two pops without host_ready)
            st.booleans(),
        ),
        max_size=60,
    )
)
def test_pop_document_equals_the_plain_composition(
    ops: list[tuple[str, int, int, float, set[int], bool]],
) -> None:
    """``pop_document`` (the fused hot path) pops the same documents and leaves the same queue and groups
    as ``top`` / ``take`` / ``leave`` / ``requeue_top`` / ``drop_top`` / ``push``, with and without
    host_ready."""
    fast, plain = _grouped_fringe(), _grouped_fringe()
    index_of = {f"s{i}": 0.0 for i in range(4)}

    def index(state: str) -> float:
        return index_of[state]

    for op, s, host, value, blocked, use_ready in ops:
        state = f"s{s}"
        ready = frozenset(range(3)).difference(blocked).__contains__ if use_ready else None
        if op == "a":
            for table, states, queue, groups in (fast, plain):
                doc = table.add(f"http://h{host}/d{len(table)}", 0.0, 0, FRINGE)
                states[doc] = state
                groups._tie[doc] = value
                gid = groups.add(doc, state)
                if groups.live[gid] == 1:
                    queue.push(gid, index(state))
        elif op == "p":
            got = []
            for (table, _, queue, groups), pop in ((fast, pop_document), (plain, _pop_reference)):
                doc = pop(queue, groups, ready, index)
                if doc is not None:
                    table.status[doc] = FLIGHT
                got.append(doc)
            assert got[0] == got[1]
        else:
            index_of[state] = value
            for _, _, queue, groups in (fast, plain):
                gid = groups.ids.get(state)
                if gid is not None and groups.live[gid] > 0:
                    queue.push(gid, value)
        (_, _, fq, fg), (_, _, pq, pg) = fast, plain
        assert fq.ordered() == pq.ordered() and len(fq) == len(pq)
        assert fg.live == pg.live and fg.size == pg.size
        assert [fg.docs(g) for g in range(len(fg.live))] == [pg.docs(g) for g in range(len(pg.live))]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="htp:/?#.ab1@[]", max_size=30))
def test_table_host_equals_host_of(url: str) -> None:
    """DocumentTable.add splits the host inline: the same as host_of."""
    table = DocumentTable()
    doc = table.add(url, 0.0, 0, FRINGE)
    assert table.hosts[table.host_id[doc]] == host_of(url)


@settings(max_examples=25, deadline=None)
@given(state=st.sampled_from(STATE_NAMES), seed=st.integers(0, 10_000))
def test_enqueue_keeps_groups_queue_and_exploration_consistent(state: str, seed: int) -> None:
    """WhittleController._enqueue (the per-link path) leaves what _add_to_group should leave: every fringe
    document in the exploration array, the groups with documents queued at v(x)."""
    ctl = make_controller(
        "whittle", rng=random.Random(seed), config=ControllerConfig(state=state, epsilon=0.3)
    )
    assert isinstance(ctl, WhittleController)
    rng = random.Random(seed)
    ctl.add_seeds([f"http://h{i}/s" for i in range(3)])
    nxt = 0
    for _ in range(40):
        for url in ctl.next_batch(2, 0.0):
            links = [Discovered(f"http://h{rng.randrange(4)}/d{nxt + j}", "", rng.random()) for j in range(3)]
            links.append(Discovered(f"http://h0/d{rng.randrange(nxt + 1)}", "", rng.random()))  # rediscovery
            nxt += 3
            ctl.report(FetchOutcome(url, "new", rng.random(), links), 0.0)
        fringe = {d for d, s in enumerate(ctl.docs.status) if s == FRINGE}
        assert set(ctl._fringe_arr) == fringe and len(ctl._fringe_arr) == len(fringe)
        live = [g for g, n in enumerate(ctl.groups.live) if n > 0]
        assert sorted(ctl.queue.ordered()) == live
        assert all(ctl.queue._key[g] == ctl.q.index(ctl.groups.state[g]) for g in live)
        assert ctl.frontier_size() == len(fringe)


class _PlainGroups:
    """The plain form of :class:`StateGroups`' entries: one ``OrderedDict`` host -> heap per group."""

    def __init__(self, table: DocumentTable, states: list[str | None], tie: array[Any]) -> None:
        self.table, self.states, self.tie = table, states, tie
        self.hosts: dict[str, OrderedDict[int, list[tuple[float, int, int]]]] = {}

    def add(self, doc: int, state: str) -> None:
        self.table.seq += 1
        heap = self.hosts.setdefault(state, OrderedDict()).setdefault(self.table.host_id[doc], [])
        heapq.heappush(heap, (-self.tie[doc], self.table.seq, doc))

    def take(self, state: str, host_ready: Callable[[int], bool] | None) -> int | None:
        hosts = self.hosts.get(state, OrderedDict())
        for h in list(hosts):
            if host_ready is not None and not host_ready(h):
                continue
            heap = hosts.pop(h)
            while heap:
                doc = heapq.heappop(heap)[2]
                if self.table.status[doc] == FRINGE and self.states[doc] == state:
                    if heap:
                        hosts[h] = heap
                    return doc
        return None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from("aaaeltr"),  # add, add a second entry, leave, take, re-state
            st.integers(0, 2),  # state
            st.integers(0, 3),  # host
            st.sampled_from([0.0, 0.5, 1.0]),  # tie-break key
            st.sets(st.integers(0, 3)),  # blocked hosts of a take (one in two takes without host_ready)
            st.booleans(),
        ),
        max_size=80,
    )
)
def test_group_forms_equal_one_ordered_dict_of_heaps(
    ops: list[tuple[str, int, int, float, set[int], bool]],
) -> None:
    """A group held as one entry, one host's heap, or host -> entries (promoted as hosts appear) takes the
    same documents in the same round-robin order as one OrderedDict of heaps per group, with stale entries
    (documents gone or re-stated), with and without host_ready; ``hosts()`` is that plain form."""
    table, states, _, groups = _grouped_fringe()
    plain = _PlainGroups(table, states, groups._tie)
    fringe: list[int] = []
    for op, s, host, value, blocked, use_ready in ops:
        state = f"s{s}"
        ready = frozenset(range(4)).difference(blocked).__contains__ if use_ready else None
        if op == "a" or (op in "elr" and not fringe):
            doc = table.add(f"http://h{host}/d{len(table)}", 0.0, 0, FRINGE)
            states[doc] = state
            groups._tie[doc] = value
            seq = table.seq
            groups.add(doc, state)
            table.seq = seq
            plain.add(doc, state)
            fringe.append(doc)
        elif op == "e":  # a better second entry of a queued document (the old one is skipped later)
            doc = fringe[host % len(fringe)]
            groups._tie[doc] = value + 2.0
            seq = table.seq
            groups.add(doc, states[doc], new=False)  # type: ignore[arg-type]
            table.seq = seq
            plain.add(doc, states[doc])  # type: ignore[arg-type]
        elif op in "lr":  # a document leaves the fringe (reported) or moves to another group
            doc = fringe.pop(host % len(fringe))
            gid = groups.ids[states[doc]]  # type: ignore[index]
            if groups.leave(gid):
                plain.hosts[groups.state[gid]].clear()
            if op == "l":
                table.status[doc] = FLIGHT
            else:
                states[doc] = f"s{(s + 1) % 3}"
                seq = table.seq
                groups.add(doc, states[doc])  # type: ignore[arg-type]
                table.seq = seq
                plain.add(doc, states[doc])  # type: ignore[arg-type]
                fringe.append(doc)
        else:
            gid = groups.ids.get(state)
            got = None if gid is None else groups.take(gid, ready)
            assert got == plain.take(state, ready)
            if got is not None:
                assert gid is not None
                fringe.remove(got)
                table.status[got] = FLIGHT
                if groups.leave(gid):
                    plain.hosts[state].clear()
        for gid, name in enumerate(groups.state):
            want = {h: [entry_key(-t, q, d) for t, q, d in heap] for h, heap in plain.hosts[name].items()}
            assert list(groups.hosts(gid).items()) == list(want.items())
            assert sorted(groups.docs(gid)) == sorted(d for d in fringe if states[d] == name)


def test_outcome_types_keep_the_frozen_dataclass_behaviour() -> None:
    """Discovered and FetchOutcome set their slots directly in __init__ (built per link and per fetch): they
    still compare, hash, print, default and refuse assignment as the generated frozen dataclass does."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Plain:
        url: str
        anchor: str = ""
        anchor_relevance: float = 0.0

    for args, kw in (((), {"url": "http://a/"}), (("http://a/", "text"), {}), (("http://a/", "t", 0.5), {})):
        fast, plain = Discovered(*args, **kw), Plain(*args, **kw)  # type: ignore[arg-type]
        assert dataclasses.astuple(fast) == dataclasses.astuple(plain)
        assert repr(fast) == "Discovered(" + repr(plain).split("(", 1)[1]
        assert fast == Discovered(*args, **kw) and hash(fast) == hash(Discovered(*args, **kw))  # type: ignore[arg-type]
    out = FetchOutcome("http://a/", "new", 0.5)
    assert out.links == () and out == FetchOutcome(url="http://a/", kind="new", relevance=0.5, links=())
    assert dataclasses.replace(out, relevance=1.0).relevance == 1.0 and out.relevance == 0.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.url = "http://b/"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Discovered()  # type: ignore[call-arg]


ties = st.one_of(
    st.floats(allow_nan=False),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, float("inf"), float("-inf"), 1.0 + 2**-52]),
)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(ties, st.integers(0, 2**64 - 1), st.integers(0, 2**32 - 1)), min_size=2, max_size=8)
)
def test_entry_key_orders_as_the_tuple(entries: list[tuple[float, int, int]]) -> None:
    """A host-heap entry (one int) orders as the tuple (-tie, seq, doc) it stands for, and gives its document
    back; a heap of the ints makes the same moves as a heap of the tuples."""
    keys = [entry_key(t, q, d) for t, q, d in entries]
    tuples = [(-t, q, d) for t, q, d in entries]
    for i, (k1, t1) in enumerate(zip(keys, tuples, strict=True)):
        for k2, t2 in zip(keys[i + 1 :], tuples[i + 1 :], strict=True):
            assert (k1 < k2) == (t1 < t2) and (k1 == k2) == (t1 == t2)
    assert [k & DOC_MASK for k in keys] == [d for _, _, d in entries]
    heapq.heapify(keys)
    heapq.heapify(tuples)
    assert keys == [entry_key(-t, q, d) for t, q, d in tuples]


def _bits(x: float) -> bytes:
    import struct

    return struct.pack(">d", x)


values = st.one_of(st.floats(-2.0, 2.0), st.sampled_from([0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324]))


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.tuples(values, values, st.floats(0.0, 9.0)), min_size=0, max_size=3),
    g=values,
    q_next=values,
    bonus=values,
    alpha=st.floats(0.01, 1.0),
    alpha_passive=st.one_of(st.none(), st.floats(0.01, 1.0)),
    gamma=st.floats(0.0, 0.99),
)
def test_qtable_learn_is_bitwise_the_equations(
    rows: list[tuple[float, float, float]],
    g: float,
    q_next: float,
    bonus: float,
    alpha: float,
    alpha_passive: float | None,
    gamma: float,
) -> None:
    """QTable.learn and QTable.index (Eq. 10 and Eq. 9 written out) give the bits of q_update_summed and
    whittle_index, -0.0 included; a missing row starts at q_init."""
    from oasis.robot.scheduling.equations import whittle_index
    from oasis.robot.scheduling.qtable import QTable

    table = QTable(0.25)
    states = [f"s{i}" for i in range(len(rows))] + ["missing"]
    for state, row in zip(states, rows, strict=False):
        table.put(state, row)
    want = []
    for state in states:
        p, a, visits = table.rows().get(state, (0.25, 0.25, 0.0))
        a = q_update_summed(a, g, q_next, bonus, alpha, gamma)
        if alpha_passive is not None:
            p = q_update_summed(p, 0.0, a, 0.0, alpha_passive, gamma)
        want.append((state, (p, a, visits + 1.0), whittle_index(a, p)))
    got = table.learn(states, g, q_next, bonus, alpha, gamma, alpha_passive)
    for (state, v), (wstate, wrow, wv) in zip(got, want, strict=True):
        assert state == wstate and _bits(v) == _bits(wv)
        assert [_bits(x) for x in table.rows()[state]] == [_bits(x) for x in wrow]
        assert _bits(table.index(state)) == _bits(whittle_index(wrow[1], wrow[0]))
    assert _bits(QTable(0.25).index("none")) == _bits(whittle_index(0.25, 0.25))


@pytest.mark.parametrize("policy", ["whittle", "bfs"])
def test_in_flight_map_finds_the_document_report_and_defer_name(policy: str) -> None:
    """report finds a handed-out document in the in-flight map (an equal URL string that is not the same
    object too), defer takes it out, a redirect target never in flight is learned from as before; in_flight
    counts the map."""
    ctl = make_controller(policy, rng=random.Random(1), config=ControllerConfig())
    ctl.add_seeds([f"http://h{i}.org/" for i in range(4)])
    batch = ctl.next_batch(3, 0.0)
    assert ctl.in_flight() == 3 and len(ctl._flying) == 3  # type: ignore[attr-defined]
    ctl.defer(batch[0])
    assert ctl.in_flight() == 2 and ctl.status(batch[0]) == "fringe"
    copy = "".join(list(batch[1]))  # equal, not identical
    assert copy is not batch[1]
    out = ctl.report(FetchOutcome(copy, "new", 0.5, [Discovered("http://new.org/a", "", 0.1)]), 1.0)
    assert out == ["http://new.org/a"] and ctl.in_flight() == 1 and ctl.status(batch[1]) == "retrieved"
    ctl.report(FetchOutcome("http://redirect.org/", "new", 0.2), 1.0)  # never handed out
    assert ctl.in_flight() == 1 and ctl.status("http://redirect.org/") == "retrieved"
    ctl.report(FetchOutcome(batch[2], "error", 0.0), 2.0)
    assert ctl.in_flight() == 0 and ctl.status(batch[2]) == "gone"
    with pytest.raises(ValueError):
        ctl.defer(batch[2])  # not in flight any more


def _hybrid_trace(ctl: Any, seed: int, steps: int, write_at: int | None) -> list[Any]:
    """A random crawl of a hybrid controller; at step ``write_at`` someone else writes an own row
    (``"u:" + URL``) of a URL the crawl discovers only later."""
    rng = random.Random(seed)
    out: list[Any] = []
    ctl.add_seeds(["http://h0/0"])
    nxt = 1
    for step in range(steps):
        if step == write_at:
            ctl.q.set(f"u:http://h{(nxt + 3) % 5}/{nxt + 3}", 1, 2.0)
        batch = ctl.next_batch(2, float(step))
        out.append(batch)
        for url in batch:
            links = []
            for _ in range(rng.choice((1, 2, 5))):
                if rng.random() < 0.3 and nxt > 1:
                    target = rng.randrange(nxt)  # a re-discovery (or a fetched page)
                else:
                    target, nxt = nxt, nxt + 1
                links.append(Discovered(f"http://h{target % 5}/{target}", "", rng.random()))
            out.append(ctl.report(FetchOutcome(url, "new", rng.random() ** 2, links), float(step)))
    out.append(ctl.state_dict())
    return out


@pytest.mark.parametrize("write_at", [None, 5, 40])
def test_hybrid_skips_the_own_row_lookup_only_when_no_row_can_be_there(write_at: int | None) -> None:
    """The hybrid state looks a new URL's own row up only while the table may hold one it did not write
    (given, loaded, or written by someone else): the same decisions and table as always looking it up."""
    cfg = ControllerConfig(state="hybrid")
    fast = make_controller("whittle", rng=random.Random(1), config=cfg)
    slow = make_controller("whittle", rng=random.Random(1), config=cfg)
    assert isinstance(fast, WhittleController) and isinstance(slow, WhittleController)
    # the reference: the lookup on every link (as before the fast path)
    slow.learning._own_rows = True  # (never turned off again)
    assert _hybrid_trace(fast, 3, 80, write_at) == _hybrid_trace(slow, 3, 80, write_at)
    assert fast.learning._own_rows == (write_at is not None)  # a fresh crawl: no lookup until the write
    own = [s for s in fast.q.rows() if s.startswith("u:")]
    assert len(own) > 50  # the crawl learned own rows (for fetched URLs only)
    # a table that comes with own rows turns the lookup on
    table = fast.q.copy()
    given_ctl = make_controller("whittle", rng=random.Random(1), config=cfg, q=table)
    assert isinstance(given_ctl, WhittleController) and given_ctl.learning._own_rows
