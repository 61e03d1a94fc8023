"""The robot's request controller (papers/004, "Request Controller Algorithm"): which documents to fetch next.

Every document the robot knows is an arm of a restless bandit. Fringe documents (located, not yet fetched)
are ranked by a Whittle index learned from Q-values (Eq. 9, updated by Eq. 10 with the child-discovery bonus
and the reward of Eq. 11); retrieved documents become re-crawl arms in the same queue, ranked by a
``recrawl_index`` hook in the same unit (relevance-weighted reward per step). Baseline policies sit behind
the same interface. The live robot and the offline replay run these classes unchanged.

Public interface::

    @dataclass(frozen=True) class Discovered: url: str; anchor: str = ""; anchor_relevance: float = 0.0
    @dataclass(frozen=True) class FetchOutcome:
        url: str; kind: "new" | "modified" | "unchanged" | "deleted" | "error"; relevance: float
        links: Sequence[Discovered] = ()

    class RequestController(Protocol):
        name: str
        def add_seeds(self, urls: Iterable[str]) -> None
        def next_batch(self, m: int, now: float, host_ready: Callable[[str], bool] | None = None) -> list[str]
        def report(self, outcome: FetchOutcome, now: float) -> list[str]  # URLs newly added to the frontier
        def defer(self, url: str) -> None        # put a popped URL back (politeness, transient error)
        def frontier_size(self) -> int          # fringe documents queued
        def recrawl_size(self) -> int           # retrieved documents queued for re-crawl
        def in_flight(self) -> int              # popped, neither reported nor deferred
        def state_dict(self) -> dict[str, Any]  # full checkpoint (frontier, seen set, Q-table), JSON-safe
        def load_state(self, state: dict[str, Any]) -> None
        def save_q(self, path) -> None; def load_q(self, path) -> None  # learned tables (Whittle only)

    make_controller(policy, *, rng, config=ControllerConfig(), oracle=None, recrawl_index=None)
        policy: "whittle" | "bfs" | "random" | "greedy-parent" | "greedy-oracle" (needs oracle(url) -> r)

Contract: ``next_batch`` pops up to m URLs (fewer if the queue is empty or every host with work is blocked by
``host_ready``); each popped URL must later be passed to ``report`` or ``defer``. ``report`` of a URL the
controller never handed out is accepted (e.g. a redirect target) and learned from as well as possible.
``kind`` is what the fetch found: "new" on the first successful retrieval, "modified"/"unchanged" on a
re-crawl, "deleted" when the document is gone (404/410), "error" for a permanent failure (no learning).

``recrawl_index(arm, now) -> float`` (see :class:`RecrawlArm`) ranks retrieved documents for re-crawling;
``None`` (the default) means never re-crawl (the static web of the paper's experiment). Values <= 0 keep
the arm passive.
"""

from __future__ import annotations

import heapq
import logging
import os
import random
import re
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from oasis.robot.scheduling.equations import q_update_summed, reward, whittle_index
from oasis.robot.scheduling.frontier import Frontier
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.state import (
    STATE_NAMES,
    DiscoveryContext,
    GeneralisingState,
    ParentIdentityState,
    UrlIdentityState,
    make_state_extractor,
)

logger = logging.getLogger(__name__)

POLICIES = ("whittle", "bfs", "random", "greedy-parent", "greedy-oracle")
RETRIEVED_STATE = "retrieved"  # local state of every retrieved (re-crawl) arm in the Q-table

# document status codes
_FRINGE, _FLIGHT, _RETRIEVED, _RECRAWL_FLIGHT, _GONE = 1, 2, 3, 4, 5
_STATUS_NAMES = {
    _FRINGE: "fringe",
    _FLIGHT: "fringe",
    _RETRIEVED: "retrieved",
    _RECRAWL_FLIGHT: "retrieved",
    _GONE: "gone",
}


@dataclass(frozen=True, slots=True)
class Discovered:
    url: str
    anchor: str = ""
    anchor_relevance: float = 0.0


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    url: str
    kind: Literal["new", "modified", "unchanged", "deleted", "error"]
    relevance: float
    links: Sequence[Discovered] = ()


@dataclass(frozen=True, slots=True)
class RecrawlArm:
    """What the controller knows about a retrieved document, for a re-crawl index."""

    url: str
    relevance: float  # r_k(i), the last relevance score
    last_fetch: float  # time of the last fetch
    first_fetch: float  # time of the first retrieval
    fetches: int  # number of fetches so far (>= 1)
    changes: int  # fetches that found the document modified


RecrawlIndex = Callable[[RecrawlArm, float], float]
Oracle = Callable[[str], float]


@dataclass(frozen=True, kw_only=True)
class ControllerConfig:
    """Learning and state parameters (only the Whittle policy reads most of them)."""

    state: str = "generalising"  # local state representation, one of state.STATE_NAMES
    alpha: float = 0.5  # Eq. 10 step size for the active control
    alpha_passive: float = 1.0  # passive-update step size (a passive fringe arm's move is deterministic)
    gamma: float = 0.5  # Eq. 10 discount
    epsilon: float = 0.0  # probability of fetching a uniformly random fringe document instead
    q_init: float = 0.0  # initial Q-values
    relevance_bins: int = 8
    anchor_bins: int = 4
    max_depth: int = 6
    recrawl_rekey: int = 64  # retrieved arms whose re-crawl index is re-computed per next_batch (round robin)
    learn: bool = True  # False: use the Q-table as it is (evaluating transferred tables; the prior applies)
    # initial Q of a state the table has never seen: "zero" (the paper: q_init everywhere) or "parent" (the
    # parent relevance of the document that first reaches it: start as fringe-greedy, learn from there)
    prior: str = "parent"
    # a fringe document linked again by a more relevant page than any before: "restate" re-derives its feature
    # state (generalising, hybrid; a hybrid URL's own entry is kept) from that page's relevance and anchor and
    # raises its tie-break key, as parent-relevance best-first raises its key; "keep": state fixed at first
    # discovery (always so for the parent and url states, and with prior "zero")
    rediscovery: str = "restate"

    def __post_init__(self) -> None:
        if self.state not in STATE_NAMES:
            raise ValueError(f"unknown state {self.state!r}; choose one of {STATE_NAMES}")
        if not 0.0 < self.alpha <= 1.0 or not 0.0 < self.alpha_passive <= 1.0:
            raise ValueError("alpha and alpha_passive must be in (0, 1]")
        if not 0.0 <= self.gamma < 1.0:
            raise ValueError(f"gamma must be in [0, 1), got {self.gamma}")
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon}")
        if self.prior not in ("zero", "parent"):
            raise ValueError(f"prior must be 'zero' or 'parent', got {self.prior!r}")
        if self.rediscovery not in ("keep", "restate"):
            raise ValueError(f"rediscovery must be 'keep' or 'restate', got {self.rediscovery!r}")
        if self.recrawl_rekey < 1:
            raise ValueError("recrawl_rekey must be >= 1")


class RequestController(Protocol):
    name: str

    def add_seeds(self, urls: Iterable[str]) -> None: ...

    def next_batch(
        self, m: int, now: float, host_ready: Callable[[str], bool] | None = None
    ) -> list[str]: ...

    def report(self, outcome: FetchOutcome, now: float) -> list[str]: ...

    def defer(self, url: str) -> None: ...

    def frontier_size(self) -> int: ...

    def recrawl_size(self) -> int: ...

    def in_flight(self) -> int: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state(self, state: dict[str, Any]) -> None: ...

    def save_q(self, path: str | os.PathLike[str]) -> None: ...

    def load_q(self, path: str | os.PathLike[str]) -> None: ...


_HOST_SEARCH = re.compile(r"//([^/?#]*)").search


def _host(url: str) -> str:
    """``host[:port]`` of an absolute URL (the unit of politeness): what follows the first ``//`` up to the
    first ``/``, ``?`` or ``#``; "" without ``//``. A fast split for canonical URLs."""
    found = _HOST_SEARCH(url)
    return found.group(1) if found is not None else ""


class _Controller:
    """Shared bookkeeping: URL interning, per-document facts, the fringe and re-crawl queues."""

    name = "base"

    def __init__(
        self, *, rng: random.Random, config: ControllerConfig, recrawl_index: RecrawlIndex | None
    ) -> None:
        self.rng = rng
        self.config = config
        self.recrawl_index = recrawl_index
        self._ids: dict[str, int] = {}
        self._urls: list[str] = []
        self._status = bytearray()
        # per-document facts in compact typed arrays (8 or 4 bytes per document), allocated ahead in zeroed
        # blocks (``_grow``): their length is the capacity ``_cap``; documents are 0 .. len(_urls) - 1
        self._cap = 0
        self._host_id = array("i")
        self._rel = array("d")  # r_k(i): last relevance score (0 until retrieved)
        self._parent_rel = array("d")
        self._depth = array("i")
        self._key = array("d")  # priority key for baseline policies
        self._fetches = array("i")
        self._changes = array("i")
        self._first_fetch = array("d")
        self._last_fetch = array("d")
        self._hosts: list[str] = []
        self._host_ids: dict[str, int] = {}
        self._seq = 0
        self._recrawl = Frontier()
        self._rekey_cursor = 0
        self._flight = 0
        self._reward_sum = 0.0  # first-retrieval rewards, for the mean value of a fringe fetch
        self._reward_n = 0

    # -- interning -------------------------------------------------------------------------------------

    def _host_index(self, host: str) -> int:
        hid = self._host_ids.get(host)
        if hid is None:
            hid = len(self._hosts)
            self._host_ids[host] = hid
            self._hosts.append(host)
        return hid

    def _new_doc(self, url: str, parent_rel: float, depth: int) -> int:
        doc = len(self._urls)
        if doc == self._cap:
            self._grow(max(1024, doc >> 3))
        self._ids[url] = doc
        self._urls.append(url)
        self._status.append(0)
        host = _host(url)
        hid = self._host_ids.get(host)
        self._host_id[doc] = hid if hid is not None else self._host_index(host)
        self._parent_rel[doc] = parent_rel
        self._depth[doc] = depth
        return doc  # r_k, key, fetches, changes, first/last fetch start at 0

    def _grow(self, extra: int) -> None:
        """Add ``extra`` zeroed slots to every per-document array."""
        for column in (
            self._host_id,
            self._rel,
            self._parent_rel,
            self._depth,
            self._key,
            self._fetches,
            self._changes,
            self._first_fetch,
            self._last_fetch,
        ):
            column.frombytes(bytes(extra * column.itemsize))
        self._cap += extra

    # -- the policy-specific part ----------------------------------------------------------------------

    def _enqueue(self, doc: int, ctx: DiscoveryContext) -> None:
        raise NotImplementedError

    def _enqueue_link(
        self, doc: int, url: str, parent_url: str, parent_rel: float, anchor_rel: float, depth: int
    ) -> None:
        """Queue a document that a retrieved page just discovered (``_enqueue`` with its context)."""
        host = self._hosts[self._host_id[doc]]
        self._enqueue(doc, DiscoveryContext(url, parent_url, parent_rel, anchor_rel, depth, host))

    def _pop_fringe(self, host_ready: Callable[[int], bool] | None) -> int | None:
        raise NotImplementedError

    def _fringe_value(self) -> float:
        """The value of the best fringe fetch, in the unit of the re-crawl index."""
        return self._reward_sum / self._reward_n if self._reward_n else 0.0

    def _requeue(self, doc: int) -> None:
        raise NotImplementedError

    def _learn(self, doc: int, was_fringe: bool, g: float, children: list[int]) -> None:
        """Policy learning after a fetch (only the Whittle controller learns)."""

    def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
        """A fringe document was linked again by another retrieved page."""

    def frontier_size(self) -> int:
        raise NotImplementedError

    # -- the public interface --------------------------------------------------------------------------

    def add_seeds(self, urls: Iterable[str]) -> None:
        for url in urls:
            if url in self._ids:
                continue
            doc = self._new_doc(url, 0.0, 0)
            self._status[doc] = _FRINGE
            self._enqueue(doc, DiscoveryContext(url=url, parent_url=None, host=_host(url)))

    def next_batch(self, m: int, now: float, host_ready: Callable[[str], bool] | None = None) -> list[str]:
        if m < 0:
            raise ValueError(f"m must be >= 0, got {m}")
        ready: Callable[[int], bool] | None = None
        if host_ready is not None:
            hosts = self._hosts
            outer = host_ready

            def ready(hid: int) -> bool:
                return outer(hosts[hid])

        choose: Callable[[Callable[[int], bool] | None], int | None]
        if self.recrawl_index is None:
            choose = self._pop_fringe
        else:
            self._rekey_recrawl(now)
            choose = self._choose
        out: list[str] = []
        status, urls = self._status, self._urls
        while len(out) < m:
            doc = choose(ready)
            if doc is None:
                break
            status[doc] = _FLIGHT if status[doc] == _FRINGE else _RECRAWL_FLIGHT
            self._flight += 1
            out.append(urls[doc])
        return out

    def _choose(self, ready: Callable[[int], bool] | None) -> int | None:
        if self.recrawl_index is None or not len(self._recrawl):
            return self._pop_fringe(ready)
        best = self._recrawl.peek()
        if best is not None and best[1] > self._fringe_value():
            doc = self._recrawl.pop(ready)
            if doc is not None:
                return doc
        doc = self._pop_fringe(ready)
        if doc is None:
            return self._recrawl.pop(ready)
        return doc

    def report(self, outcome: FetchOutcome, now: float) -> list[str]:
        parent_url, r_new = outcome.url, outcome.relevance
        if r_new < 0:
            raise ValueError(f"relevance must be >= 0, got {r_new} for {parent_url}")
        status = self._status
        doc = self._ids.get(parent_url)
        if doc is None:  # e.g. a redirect target the controller never queued
            doc = self._new_doc(parent_url, 0.0, 0)
            status[doc] = _FLIGHT
            self._flight += 1
        st = status[doc]
        if st in (_FLIGHT, _RECRAWL_FLIGHT):
            self._flight -= 1
        elif st == _FRINGE:
            self._remove_fringe(doc)
        elif st == _RETRIEVED:
            self._recrawl.remove(doc)
        fetches = self._fetches[doc]
        was_fringe = fetches == 0 and st in (_FLIGHT, _FRINGE)
        kind = outcome.kind
        if was_fringe and kind in ("modified", "unchanged"):
            kind = "new"
        if kind == "error":
            status[doc] = _GONE
            return []
        g = reward(kind, self._rel[doc], r_new)  # Eq. 11 with r_k = the last relevance score
        if was_fringe and kind == "new":
            self._reward_sum += g
            self._reward_n += 1
        added: list[int] = []
        added_urls: list[str] = []
        if kind != "deleted":
            depth = self._depth[doc] + 1
            ids_get = self._ids.get
            new_doc, enqueue_link = self._new_doc, self._enqueue_link
            for link in outcome.links:
                url = link.url
                child = ids_get(url)
                if child is None:
                    child = new_doc(url, r_new, depth)
                    status[child] = _FRINGE
                    enqueue_link(child, url, parent_url, r_new, link.anchor_relevance, depth)
                    added.append(child)
                    added_urls.append(url)
                elif status[child] == _FRINGE and child != doc:
                    self._rediscovered(child, parent_url, r_new, link.anchor_relevance)
        self._learn(doc, was_fringe, g, added)
        if kind == "deleted":
            status[doc] = _GONE
        else:
            status[doc] = _RETRIEVED
            self._rel[doc] = r_new
            if fetches == 0:
                self._first_fetch[doc] = now
            self._fetches[doc] = fetches + 1
            if kind == "modified":
                self._changes[doc] += 1
            self._last_fetch[doc] = now
            if self.recrawl_index is not None:
                self._push_recrawl(doc, now)
        return added_urls

    def defer(self, url: str) -> None:
        doc = self._ids.get(url)
        if doc is None:
            raise KeyError(f"defer of a URL the controller does not know: {url}")
        st = self._status[doc]
        if st == _FLIGHT:
            self._flight -= 1
            self._status[doc] = _FRINGE
            self._requeue(doc)
        elif st == _RECRAWL_FLIGHT:
            self._flight -= 1
            self._status[doc] = _RETRIEVED
            self._push_recrawl(doc, self._last_fetch[doc])
        else:
            raise ValueError(f"defer of a URL that is not in flight: {url}")

    def recrawl_size(self) -> int:
        return len(self._recrawl)

    def in_flight(self) -> int:
        return self._flight

    def known(self) -> int:
        return len(self._urls)

    def status(self, url: str) -> str:
        """ "unknown", "fringe", "retrieved" or "gone" (diagnostics and tests)."""
        doc = self._ids.get(url)
        return "unknown" if doc is None else _STATUS_NAMES.get(self._status[doc], "unknown")

    # -- re-crawl arms ---------------------------------------------------------------------------------

    def _arm(self, doc: int) -> RecrawlArm:
        return RecrawlArm(
            url=self._urls[doc],
            relevance=self._rel[doc],
            last_fetch=self._last_fetch[doc],
            first_fetch=self._first_fetch[doc],
            fetches=self._fetches[doc],
            changes=self._changes[doc],
        )

    def _push_recrawl(self, doc: int, now: float) -> None:
        assert self.recrawl_index is not None
        value = self.recrawl_index(self._arm(doc), now)
        if value > 0:
            self._recrawl.push(doc, value, self._host_id[doc])
        else:
            self._recrawl.remove(doc)

    def _rekey_recrawl(self, now: float) -> None:
        """Re-crawl indices grow as a copy ages: each call re-computes the next ``recrawl_rekey`` retrieved
        arms in round-robin order (bounded work per decision instead of a full O(n) refresh)."""
        if self.recrawl_index is None:
            return
        status = self._status
        n = len(status)
        budget = self.config.recrawl_rekey
        cursor = self._rekey_cursor
        for _ in range(min(n, 4 * budget)):
            if cursor >= n:
                cursor = 0
            if status[cursor] == _RETRIEVED:
                self._push_recrawl(cursor, now)
                budget -= 1
                if budget == 0:
                    cursor += 1
                    break
            cursor += 1
        self._rekey_cursor = cursor

    def _remove_fringe(self, doc: int) -> None:
        raise NotImplementedError

    # -- checkpoints -----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        docs = []
        for doc, url in enumerate(self._urls):
            st = self._status[doc]
            st = _FRINGE if st == _FLIGHT else (_RETRIEVED if st == _RECRAWL_FLIGHT else st)
            docs.append(
                [
                    url,
                    st,
                    self._rel[doc],
                    self._parent_rel[doc],
                    self._depth[doc],
                    self._key[doc],
                    self._fetches[doc],
                    self._changes[doc],
                    self._first_fetch[doc],
                    self._last_fetch[doc],
                    self._doc_state(doc),
                ]
            )
        return {
            "format": "oasis-controller/1",
            "policy": self.name,
            "docs": docs,
            "seq": self._seq,
            "fringe": self._fringe_order(),
            "reward": [self._reward_sum, self._reward_n],
            "q": self._q_dict(),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("format") != "oasis-controller/1":
            raise ValueError("not a controller checkpoint (format oasis-controller/1)")
        if state.get("policy") != self.name:
            raise ValueError(f"checkpoint is for policy {state.get('policy')!r}, not {self.name!r}")
        if self._urls:
            raise ValueError("load_state needs a fresh controller")
        self._load_q_dict(state.get("q"))
        states: dict[int, str | None] = {}
        for row in state["docs"]:
            url, st, rel, prel, depth, key, fetches, changes, first, last, dstate = row
            doc = self._new_doc(str(url), float(prel), int(depth))
            self._status[doc] = int(st)
            self._rel[doc] = float(rel)
            self._key[doc] = float(key)
            self._fetches[doc] = int(fetches)
            self._changes[doc] = int(changes)
            self._first_fetch[doc] = float(first)
            self._last_fetch[doc] = float(last)
            if st == _FRINGE:
                states[doc] = dstate
        self._seq = int(state.get("seq", 0))
        self._reward_sum, n = state.get("reward", [0.0, 0])
        self._reward_n = int(n)
        order = [int(d) for d in state.get("fringe", [])]
        order += [d for d in states if d not in set(order)]
        for doc in order:
            self._restore_fringe(doc, states[doc])
        if self.recrawl_index is not None:
            for doc, st in enumerate(self._status):
                if st == _RETRIEVED:
                    self._push_recrawl(doc, self._last_fetch[doc])

    def _doc_state(self, doc: int) -> str | None:
        return None

    def _fringe_order(self) -> list[int]:
        """Fringe documents in queue order (in-flight ones last), so a restore keeps tie order."""
        raise NotImplementedError

    def _restore_fringe(self, doc: int, dstate: str | None) -> None:
        self._requeue(doc)

    def _q_dict(self) -> dict[str, Any] | None:
        return None

    def _load_q_dict(self, data: Any) -> None:
        return None

    def save_q(self, path: str | os.PathLike[str]) -> None:
        raise NotImplementedError(f"policy {self.name!r} learns no Q-table")

    def load_q(self, path: str | os.PathLike[str]) -> None:
        raise NotImplementedError(f"policy {self.name!r} learns no Q-table")


class _KeyedController(_Controller):
    """Baselines: every fringe document has a fixed priority key in one :class:`Frontier`."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._fringe = Frontier()

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        raise NotImplementedError

    def _enqueue(self, doc: int, ctx: DiscoveryContext) -> None:
        self._seq += 1
        self._key[doc] = self._key_for(doc, ctx)
        self._fringe.push(doc, self._key[doc], self._host_id[doc])

    def _requeue(self, doc: int) -> None:
        self._fringe.push(doc, self._key[doc], self._host_id[doc])

    def _remove_fringe(self, doc: int) -> None:
        self._fringe.remove(doc)

    def _pop_fringe(self, host_ready: Callable[[int], bool] | None) -> int | None:
        return self._fringe.pop(host_ready)

    def frontier_size(self) -> int:
        return len(self._fringe)

    def _fringe_order(self) -> list[int]:
        flight = [d for d, s in enumerate(self._status) if s == _FLIGHT]
        return self._fringe.ordered() + flight


class BreadthFirstController(_KeyedController):
    """First discovered, first fetched."""

    name = "bfs"

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        return -float(self._seq)


class RandomController(_KeyedController):
    """A uniformly random fringe document each time."""

    name = "random"

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        return self.rng.random()


class GreedyParentController(_KeyedController):
    """Practical best-first: the highest relevance among the retrieved pages that link to a document."""

    name = "greedy-parent"

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        return ctx.parent_relevance if ctx.parent_url is not None else float("inf")

    def _fringe_value(self) -> float:
        top = self._fringe.peek()
        return top[1] if top is not None else 0.0

    def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
        if parent_rel > self._key[doc]:
            self._key[doc] = parent_rel
            self._fringe.push(doc, parent_rel, self._host_id[doc])


class GreedyOracleController(_KeyedController):
    """Fringe-greedy with oracle relevance: the document's own (unfetched) relevance, from ``oracle``."""

    name = "greedy-oracle"

    def __init__(self, *, oracle: Oracle, **kw: Any) -> None:
        super().__init__(**kw)
        self.oracle = oracle

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        return float(self.oracle(ctx.url))

    def _fringe_value(self) -> float:
        top = self._fringe.peek()
        return top[1] if top is not None else 0.0


class WhittleController(_Controller):
    """The paper's request controller: fringe arms grouped by local state x, ranked by v(x) (Eq. 9) from a
    Q-table learned with Eq. 10 (child-discovery bonus) and the reward of Eq. 11.

    All fringe documents in one state share an index, so the queue holds one *group* per state, keyed by
    v(x): a Q-update re-keys one group, O(log S). Inside a group (equal indices), documents wait in one heap
    per host, ordered by parent relevance + anchor relevance (then discovery order): the tie-break among arms
    whose index is equal. The group serves its hosts round robin, skipping hosts that ``host_ready`` blocks
    (a group whose hosts are all blocked is set aside for that decision). After each active update the
    passive control of the same state is updated too: a passive fringe arm earns 0 and stays in its state,
    so its Eq. 10 sample is ``0 + gamma Q(x, 1)`` (step size ``alpha_passive``); hence
    ``v(x) -> (1 - gamma) Q(x, 1)`` for visited states.
    """

    name = "whittle"

    def __init__(self, *, q: QTable | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        cfg = self.config
        table = q if q is not None else QTable(cfg.q_init)
        self._prior = cfg.prior == "parent"
        # the paper's parent state is the identity of the *first* discovering document, and a url state never
        # changes: only the feature states (generalising, hybrid) are re-derived on rediscovery, and only with
        # the parent prior (with prior "zero" an unseen new state would read 0 and push the document back)
        feature_state = cfg.state in ("generalising", "generalising-host", "hybrid")
        self._restate = cfg.rediscovery == "restate" and feature_state and self._prior
        # learning frozen (learn=False): the given table is read, never changed; unseen states still get the
        # prior (as while learning), seeded into a private working copy so that a transferred table is never
        # worse than the untrained robot for lack of data. save_q writes the untouched table.
        self._frozen: QTable | None = None
        if not cfg.learn and self._prior:
            self._frozen, table = table, table.copy()
        self.q = table
        self.extract = make_state_extractor(
            cfg.state, relevance_bins=cfg.relevance_bins, anchor_bins=cfg.anchor_bins, max_depth=cfg.max_depth
        )
        # the queue of groups: a lazy max-heap of (-v(x), seq, group id) with, per group, the seq and v(x) of
        # its valid entry (seq 0: not queued). Same order as a Frontier on one host (ties FIFO; re-pushing an
        # unchanged v(x) keeps the group's place), without its per-host layer and per-item dicts.
        self._gheap: list[tuple[float, int, int]] = []
        self._gseq = array("q")
        self._gkey = array("d")
        self._hseq = 0
        self._gfull = 0  # groups with live documents (about the valid entries of the heap)
        self._gid: dict[str, int] = {}
        self._gstate: list[str] = []
        self._glive: list[int] = []
        # per group: host -> heap of (-tie-break key, seq, doc); the key orders documents that share an index
        self._ghosts: list[OrderedDict[int, list[tuple[float, int, int]]]] = []
        self._tie = array("d")  # per document: parent relevance + anchor relevance at discovery
        self._doc_state_list: list[str | None] = []
        self._hybrid = cfg.state == "hybrid"
        self._aux: list[str | None] = []  # hybrid: the generalising key beside the queue key
        self._fringe_n = 0
        # uniformly random fringe document (epsilon exploration): array + position map
        self._explore = cfg.epsilon > 0.0
        self._fringe_arr: list[int] = []
        self._fringe_pos: dict[int, int] = {}
        self._link_state = self._link_state_function()
        # the generalising key without a context object (generalising and hybrid states), else None
        self._gen_key: Callable[[float, float, int], str] | None = None
        if isinstance(self.extract, GeneralisingState) and not self.extract.use_host:
            self._gen_key = self.extract.keyer()

    def _link_state_function(self) -> Callable[[int, str, str, float, float, int], str]:
        """``state(doc, url, parent_url, parent_rel, anchor_rel, depth)``: ``self.extract`` of a discovered
        document's context, without building the context for the built-in extractors."""
        extract = self.extract
        if isinstance(extract, GeneralisingState) and not extract.use_host:
            key = extract.keyer()

            def generalising(doc: int, url: str, parent_url: str, pr: float, ar: float, depth: int) -> str:
                return key(pr, ar, depth)

            return generalising
        if isinstance(extract, ParentIdentityState):
            last = ["", ""]  # the children of one page share one key string

            def parent(doc: int, url: str, parent_url: str, pr: float, ar: float, depth: int) -> str:
                if parent_url != last[0]:
                    last[0], last[1] = parent_url, "p:" + parent_url
                return last[1]

            return parent
        if isinstance(extract, UrlIdentityState):

            def own(doc: int, url: str, parent_url: str, pr: float, ar: float, depth: int) -> str:
                return "u:" + url

            return own
        hosts, host_id = self._hosts, self._host_id

        def generic(doc: int, url: str, parent_url: str, pr: float, ar: float, depth: int) -> str:
            return extract(DiscoveryContext(url, parent_url, pr, ar, depth, hosts[host_id[doc]]))

        return generic

    # -- the queue of groups ---------------------------------------------------------------------------

    def _gpush(self, gid: int, v: float) -> None:
        """Queue group ``gid`` with index ``v`` (or re-key it; an unchanged index keeps its place)."""
        gseq = self._gseq
        if gseq[gid] and self._gkey[gid] == v:
            return
        self._hseq += 1
        seq = self._hseq
        gseq[gid] = seq
        self._gkey[gid] = v
        heap = self._gheap
        heapq.heappush(heap, (-v, seq, gid))
        if len(heap) > 2 * self._gfull + 1024:  # mostly stale entries: drop them (in place, O(heap))
            heap[:] = [e for e in heap if gseq[e[2]] == e[1]]
            heapq.heapify(heap)

    def _gpeek(self) -> float | None:
        """v(x) of the best queued group."""
        heap, gseq = self._gheap, self._gseq
        while heap:
            neg, seq, gid = heap[0]
            if gseq[gid] == seq:
                return -neg
            heapq.heappop(heap)
        return None

    def _grow(self, extra: int) -> None:
        super()._grow(extra)
        self._doc_state_list.extend([None] * extra)
        self._tie.frombytes(bytes(extra * self._tie.itemsize))  # set when the document is queued
        if self._hybrid:
            self._aux.extend([None] * extra)

    def _doc_state(self, doc: int) -> str | None:
        return self._doc_state_list[doc]

    def frontier_size(self) -> int:
        return self._fringe_n

    def _live_docs(self, gid: int) -> list[int]:
        status, states, want = self._status, self._doc_state_list, self._gstate[gid]
        hosts = self._ghosts[gid]
        docs = [e for heap in hosts.values() for e in sorted(heap)]
        # a re-stated document may have two entries (its best one first)
        return list(dict.fromkeys(d for _, _, d in docs if status[d] == _FRINGE and states[d] == want))

    def _fringe_order(self) -> list[int]:
        out: list[int] = []
        gkey = self._gkey
        for _, _, gid in sorted((-gkey[g], q, g) for g, q in enumerate(self._gseq) if q):
            out += self._live_docs(gid)
        return out + [d for d, s in enumerate(self._status) if s == _FLIGHT]

    def index_of(self, url: str) -> float:
        """v(x) of a known fringe document (diagnostics)."""
        state = self._doc_state_list[self._ids[url]]
        return self.q.index(state) if state is not None else 0.0

    def _fringe_value(self) -> float:
        # the learned index of the best group; before the Q-table knows anything, the mean first-retrieval
        # reward so far (the expected immediate reward of a fringe fetch) is the floor
        top = self._gpeek()
        return max(top if top is not None else 0.0, super()._fringe_value())

    def _add_to_group(self, doc: int, state: str) -> None:
        gid = self._gid.get(state)
        if gid is None:
            gid = len(self._gstate)
            self._gid[state] = gid
            self._gstate.append(state)
            self._glive.append(0)
            self._ghosts.append(OrderedDict())  # O(1) rotation to the back however many hosts it has
            self._gseq.append(0)
            self._gkey.append(0.0)
        h = self._host_id[doc]
        hosts = self._ghosts[gid]
        heap = hosts.get(h)
        if heap is None:
            heap = []
            hosts[h] = heap  # dict order is the round-robin order of the group's hosts
        self._seq += 1
        heapq.heappush(heap, (-self._tie[doc], self._seq, doc))
        live = self._glive[gid] + 1
        self._glive[gid] = live
        self._fringe_n += 1
        if live == 1:
            self._gfull += 1
            self._gpush(gid, self.q.index(state))
        if self._explore:
            self._fringe_pos[doc] = len(self._fringe_arr)
            self._fringe_arr.append(doc)

    def _enqueue(self, doc: int, ctx: DiscoveryContext) -> None:
        state = self.extract(ctx)
        self._tie[doc] = ctx.parent_relevance + ctx.anchor_relevance
        if self._hybrid:
            self._aux[doc] = state
            own = "u:" + ctx.url
            if own in self.q:
                state = own
        if self._prior and state not in self.q:
            # prior Q(x, 1) = parent relevance, Q(x, 0) = gamma Q(x, 1): the fixed point of the passive update
            p = ctx.parent_relevance if ctx.parent_url is not None else 1.0
            self.q.seed(state, self.config.gamma * p, p)
            if self._hybrid and self._aux[doc] is not None and self._aux[doc] != state:
                self.q.seed(self._aux[doc], self.config.gamma * p, p)  # type: ignore[arg-type]
        self._doc_state_list[doc] = state
        self._add_to_group(doc, state)

    def _enqueue_link(
        self, doc: int, url: str, parent_url: str, parent_rel: float, anchor_rel: float, depth: int
    ) -> None:
        # _enqueue(doc, DiscoveryContext(url, parent_url, parent_rel, anchor_rel, depth, host)), no context
        gen_key = self._gen_key
        if gen_key is not None:
            state = gen_key(parent_rel, anchor_rel, depth)
        else:
            state = self._link_state(doc, url, parent_url, parent_rel, anchor_rel, depth)
        self._tie[doc] = parent_rel + anchor_rel
        q = self.q
        rows = q.rows()
        if self._hybrid:
            self._aux[doc] = state
            own = "u:" + url
            if own in rows:
                state = own
        if self._prior and state not in rows:
            # prior Q(x, 1) = parent relevance, Q(x, 0) = gamma Q(x, 1) (as in _enqueue; in hybrid the queue
            # key is the generalising one here, so there is no second key to seed)
            q.seed(state, self.config.gamma * parent_rel, parent_rel)
        self._doc_state_list[doc] = state
        self._add_to_group(doc, state)

    def _requeue(self, doc: int) -> None:
        state = self._doc_state_list[doc]
        assert state is not None
        self._add_to_group(doc, state)

    def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
        if not self._restate or parent_rel <= self._parent_rel[doc]:
            return
        self._parent_rel[doc] = parent_rel
        old = self._doc_state_list[doc]
        assert old is not None
        if self._hybrid and old.startswith("u:"):
            state = old  # the URL's own learned entry is what ranks it; only the tie-break key rises
        else:
            url, depth = self._urls[doc], self._depth[doc]
            state = self._link_state(doc, url, parent_url, parent_rel, anchor_rel, depth)
            if self._hybrid:
                self._aux[doc] = state
            if self._prior and state not in self.q:
                self.q.seed(state, self.config.gamma * parent_rel, parent_rel)
        tie = max(self._tie[doc], parent_rel + anchor_rel)
        if state == old:
            if tie > self._tie[doc]:  # a second, better entry in the same host heap; the old one is skipped
                self._tie[doc] = tie  # once the document has left the fringe
                self._seq += 1
                heap = self._ghosts[self._gid[state]].setdefault(self._host_id[doc], [])
                heapq.heappush(heap, (-tie, self._seq, doc))
            return
        self._taken(doc)  # leave the old group (its heap entry goes stale: the state no longer matches)
        self._tie[doc] = tie
        self._doc_state_list[doc] = state
        self._add_to_group(doc, state)

    def _restore_fringe(self, doc: int, dstate: str | None) -> None:
        self._doc_state_list[doc] = dstate if dstate is not None else "seed"
        self._tie[doc] = self._parent_rel[doc]  # the tie-break key of a restored document: parent relevance
        self._requeue(doc)

    def _taken(self, doc: int) -> None:
        """Bookkeeping when a fringe document leaves the fringe (popped, or reported directly)."""
        state = self._doc_state_list[doc]
        assert state is not None
        gid = self._gid[state]
        self._glive[gid] -= 1
        self._fringe_n -= 1
        if self._glive[gid] == 0:
            self._gfull -= 1
            self._gseq[gid] = 0  # no longer queued
            self._ghosts[gid].clear()
        if self._explore:
            self._explore_drop(doc)

    def _explore_drop(self, doc: int) -> None:
        """Remove a document from the array of fringe documents (epsilon exploration)."""
        pos = self._fringe_pos.pop(doc)
        last = self._fringe_arr.pop()
        if last != doc:
            self._fringe_arr[pos] = last
            self._fringe_pos[last] = pos

    def _remove_fringe(self, doc: int) -> None:
        self._taken(doc)

    def _take_from(self, gid: int, host_ready: Callable[[int], bool] | None) -> int | None:
        """The next live document of group ``gid`` on a ready host (round robin over its hosts)."""
        hosts = self._ghosts[gid]
        status, states, want = self._status, self._doc_state_list, self._gstate[gid]
        if host_ready is None:  # the same walk as below, without copying the group's host list
            while hosts:
                h = next(iter(hosts))
                heap = hosts.pop(h)
                while heap:
                    doc = heapq.heappop(heap)[2]
                    if status[doc] == _FRINGE and states[doc] == want:
                        if heap:
                            hosts[h] = heap
                        # self._taken(doc), with the group known
                        live = self._glive[gid] - 1
                        self._glive[gid] = live
                        self._fringe_n -= 1
                        if live == 0:
                            self._gfull -= 1
                            self._gseq[gid] = 0
                            hosts.clear()
                        if self._explore:
                            self._explore_drop(doc)
                        return doc
            return None
        for h in list(hosts):  # round robin: a host that served moves to the end of the dict
            if host_ready is not None and not host_ready(h):
                continue
            heap = hosts.pop(h)
            while heap:
                doc = heapq.heappop(heap)[2]
                if status[doc] == _FRINGE and states[doc] == want:
                    if heap:
                        hosts[h] = heap
                    self._taken(doc)  # removes the group when it empties
                    return doc
            # only stale entries were left for this host: it stays out of the dict
        return None

    def _pop_fringe(self, host_ready: Callable[[int], bool] | None) -> int | None:
        if self._explore and self._fringe_arr and self.rng.random() < self.config.epsilon:
            doc = self._fringe_arr[self.rng.randrange(len(self._fringe_arr))]
            if host_ready is None or host_ready(self._host_id[doc]):
                self._taken(doc)
                return doc
        aside: list[int] = []
        found: int | None = None
        heap, gseq, glive = self._gheap, self._gseq, self._glive
        while heap:
            _, seq, gid = heap[0]  # the best entry; popped below (nothing else touches the heap meanwhile)
            if gseq[gid] != seq:
                heapq.heappop(heap)  # stale entry
                continue
            gseq[gid] = 0  # popped
            picked = self._take_from(gid, host_ready)
            if picked is None:
                heapq.heappop(heap)
                if glive[gid] > 0:
                    aside.append(gid)  # every host of this state is blocked right now
                continue
            if glive[gid] > 0:  # back in the queue: _gpush of a group that is not queued, in the popped slot
                v = self.q.index(self._gstate[gid])
                self._hseq += 1
                gseq[gid] = self._hseq
                self._gkey[gid] = v
                heapq.heapreplace(heap, (-v, self._hseq, gid))
            else:
                heapq.heappop(heap)
            found = picked
            break
        for gid in aside:
            self._gpush(gid, self.q.index(self._gstate[gid]))
        return found

    def _rekey_state(self, state: str) -> None:
        gid = self._gid.get(state)
        if gid is not None and self._glive[gid] > 0:
            self._gpush(gid, self.q.index(state))

    def _learn(self, doc: int, was_fringe: bool, g: float, children: list[int]) -> None:
        cfg = self.config
        if not cfg.learn:
            return
        state = self._doc_state_list[doc] if was_fringe else RETRIEVED_STATE
        if state is None:  # reported without ever being queued (redirect target): nothing to credit
            return
        q = self.q
        rows, q_init = q.rows(), q.q_init  # state -> [Q(x,0), Q(x,1), visits]; missing rows read q_init
        q_next = q.value(RETRIEVED_STATE) if self.recrawl_index is not None else 0.0
        child_states = self._doc_state_list
        bonus = 0.0  # sum_j max_u Q(x^j, u) over the newly discovered children, in order (as q_update sums)
        for c in children:
            crow = rows.get(child_states[c])  # type: ignore[arg-type]
            bonus += q_init if crow is None else max(crow[0], crow[1])
        states: tuple[str, ...] = (state,)
        if self._hybrid and was_fringe:
            # learn the URL's own entry and the generalising one from the same sample
            own, aux = "u:" + self._urls[doc], self._aux[doc]
            states = (own,) if aux is None or aux == own else (own, aux)
        alpha, alpha_passive, gamma = cfg.alpha, cfg.alpha_passive, cfg.gamma
        gids, glive = self._gid, self._glive
        for x in states:
            row = rows.get(x)
            if row is None:
                row = rows[x] = [q_init, q_init, 0.0]  # as QTable.set
            # Eq. 10, active control, with the child-discovery bonus
            row[1] = q_update_summed(row[1], g, q_next, bonus, alpha, gamma)
            row[2] += 1.0
            if was_fringe:
                # Eq. 10, passive control: reward 0, same state, next control active
                row[0] = q_update_summed(row[0], 0.0, row[1], 0.0, alpha_passive, gamma)
                gid = gids.get(x)
                if gid is not None and glive[gid] > 0:
                    self._gpush(gid, whittle_index(row[1], row[0]))  # Eq. 9: re-key the state's group

    # -- Q-table persistence ---------------------------------------------------------------------------

    def _q_dict(self) -> dict[str, Any] | None:
        return self.q.to_dict()

    def _load_q_dict(self, data: Any) -> None:
        if data is not None:
            self.q = QTable.from_dict(data)

    def save_q(self, path: str | os.PathLike[str]) -> None:
        (self._frozen if self._frozen is not None else self.q).save(path)

    def load_q(self, path: str | os.PathLike[str]) -> None:
        self.q = QTable.load(path)
        if self._frozen is not None:
            self._frozen, self.q = self.q, self.q.copy()
        for state in self._gid:
            self._rekey_state(state)


def make_controller(
    policy: str,
    *,
    rng: random.Random,
    config: ControllerConfig | None = None,
    oracle: Oracle | None = None,
    recrawl_index: RecrawlIndex | None = None,
    q: QTable | None = None,
) -> _Controller:
    """Build a request controller by policy name (one of :data:`POLICIES`)."""
    cfg = config if config is not None else ControllerConfig()
    common: dict[str, Any] = {"rng": rng, "config": cfg, "recrawl_index": recrawl_index}
    if policy == "whittle":
        return WhittleController(q=q, **common)
    if policy == "bfs":
        return BreadthFirstController(**common)
    if policy == "random":
        return RandomController(**common)
    if policy == "greedy-parent":
        return GreedyParentController(**common)
    if policy == "greedy-oracle":
        if oracle is None:
            raise ValueError("policy 'greedy-oracle' needs an oracle relevance function")
        return GreedyOracleController(oracle=oracle, **common)
    raise ValueError(f"unknown policy {policy!r}; choose one of {POLICIES}")
