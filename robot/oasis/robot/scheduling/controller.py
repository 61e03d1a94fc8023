"""The robot's request controller (papers/004, "Request Controller Algorithm"): which documents to fetch next.

Every document the robot knows is an arm of a restless bandit. Fringe documents (located, not yet fetched)
are ranked by a Whittle index learned from Q-values (Eq. 9, updated by Eq. 10 with the child-discovery bonus
and the reward of Eq. 11); retrieved documents become re-crawl arms in the same queue, ranked by a
``recrawl_index`` hook in the same unit (relevance-weighted reward per step). Baseline policies sit behind
the same interface. The live robot and the offline replay run these classes unchanged.

The public interface (:class:`~oasis.robot.scheduling.interface.RequestController` and the types it
exchanges) is in :mod:`oasis.robot.scheduling.interface`. A controller is made of small parts: the document
table (:mod:`~oasis.robot.scheduling.documents`), a queue (a :class:`Frontier` for the baselines and the
re-crawl arms; the state groups of :mod:`~oasis.robot.scheduling.groups` for the Whittle policy) and, for
the Whittle policy, the learning strategy (:mod:`~oasis.robot.scheduling.learning`).

    make_controller(policy, *, rng, config=ControllerConfig(), oracle=None, recrawl_index=None, q=None)
        policy: "whittle" | "bfs" | "random" | "greedy-parent" | "greedy-anchor" | "greedy-oracle" (needs
        oracle(url) -> r)
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable, Iterable
from typing import Any

from oasis.robot.scheduling.config import ControllerConfig
from oasis.robot.scheduling.documents import (
    FLIGHT,
    FRINGE,
    GONE,
    RECRAWL_FLIGHT,
    RETRIEVED,
    STATUS_NAMES,
    UNFETCHED,
    DocumentTable,
)
from oasis.robot.scheduling.equations import reward
from oasis.robot.scheduling.frontier import Frontier
from oasis.robot.scheduling.groups import GroupQueue, StateGroups, pop_document
from oasis.robot.scheduling.interface import (
    DELETED,
    ERROR,
    MODIFIED,
    NEW,
    UNCHANGED,
    Discovered,
    FetchOutcome,
    RecrawlArm,
    RecrawlIndex,
    RequestController,
)
from oasis.robot.scheduling.learning import RETRIEVED_STATE, WhittleLearning
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.state import DiscoveryContext

__all__ = [
    "POLICIES",
    "RETRIEVED_STATE",
    "ControllerConfig",
    "Discovered",
    "FetchOutcome",
    "RecrawlArm",
    "RecrawlIndex",
    "RequestController",
    "WhittleController",
    "make_controller",
]

logger = logging.getLogger(__name__)

POLICIES = ("whittle", "bfs", "random", "greedy-parent", "greedy-anchor", "greedy-oracle")
_REFETCH_KINDS = frozenset((MODIFIED, UNCHANGED))  # what a re-crawl finds (read as "new" on a first fetch)
REWARD_MEMORY = 64  # first fetches the fringe value's floor remembers (issue 16; chosen on synthetic webs)

Oracle = Callable[[str], float]
HostReady = Callable[[int], bool]


class _Controller:
    """Shared bookkeeping: the document table, the re-crawl queue, report / defer / checkpoints."""

    name = "base"

    def __init__(
        self, *, rng: random.Random, config: ControllerConfig, recrawl_index: RecrawlIndex | None
    ) -> None:
        self.rng = rng
        self.config = config
        self.recrawl_index = recrawl_index
        self.docs = DocumentTable()
        self._recrawl = Frontier()
        self._rekey_cursor = 0
        # URL -> document of every URL handed out by next_batch and not reported or deferred yet: report finds
        # the document here (a small dict) instead of in docs.ids (10^6 entries: a cache miss or two)
        self._flying: dict[str, int] = {}
        self._reward_sum = 0.0  # first-retrieval rewards, for the mean value of a fringe fetch
        self._reward_n = 0
        self._reward_recent = 0.0  # their running mean over about the last REWARD_MEMORY first fetches

    # -- the policy-specific part ----------------------------------------------------------------------

    def _enqueue(
        self, doc: int, url: str, parent_url: str | None, parent_rel: float, anchor_rel: float, depth: int
    ) -> None:
        """Queue a newly located document (a seed when ``parent_url`` is None)."""
        raise NotImplementedError

    def _pop_fringe(self, host_ready: HostReady | None) -> int | None:
        raise NotImplementedError

    REWARD_MEMORY = REWARD_MEMORY

    def _fringe_value(self) -> float:
        """The value of the best fringe fetch, in the unit of the re-crawl index (relevance gained per fetch).

        The floor: what fringe fetches have been finding lately, the running mean of the last
        ~``REWARD_MEMORY`` first-retrieval rewards (Eq. 11, g = r of the new page). Policies whose fringe key
        is a relevance estimate take the larger of it and the floor (a key of 0 -- a page found by a hub of
        no relevance -- does not mean the page is worth nothing: issue 16's collapse)."""
        return self._reward_recent

    def _requeue(self, doc: int) -> None:
        raise NotImplementedError

    def _remove_fringe(self, doc: int) -> None:
        raise NotImplementedError

    def _learn(self, doc: int, was_fringe: bool, g: float, children: list[int]) -> None:
        """Policy learning after a fetch (only the Whittle controller learns)."""

    def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
        """A fringe document was linked again by another retrieved page."""

    def frontier_size(self) -> int:
        raise NotImplementedError

    # -- the public interface --------------------------------------------------------------------------

    def add_seeds(self, urls: Iterable[str]) -> None:
        docs = self.docs
        for url in urls:
            if url in docs.ids:
                continue
            doc = docs.add(url, 0.0, 0, FRINGE)
            self._enqueue(doc, url, None, 0.0, 0.0, 0)

    def next_batch(self, m: int, now: float, host_ready: Callable[[str], bool] | None = None) -> list[str]:
        if m < 0:
            raise ValueError(f"m must be >= 0, got {m}")
        ready: HostReady | None = None
        if host_ready is not None:
            hosts = self.docs.hosts
            outer = host_ready

            def ready(hid: int) -> bool:
                return outer(hosts[hid])

        choose: Callable[[HostReady | None], int | None]
        if self.recrawl_index is None:
            choose = self._pop_fringe
        else:
            self._rekey_recrawl(now)
            choose = self._choose
        out: list[str] = []
        status, urls, flying = self.docs.status, self.docs.urls, self._flying
        while len(out) < m:
            doc = choose(ready)
            if doc is None:
                break
            status[doc] = FLIGHT if status[doc] == FRINGE else RECRAWL_FLIGHT
            url = urls[doc]
            flying[url] = doc
            out.append(url)
        return out

    def _choose(self, ready: HostReady | None) -> int | None:
        if self.recrawl_index is None or not len(self._recrawl):
            return self._pop_fringe(ready)
        best = self._recrawl.peek()
        if best is not None and best[1] > self._fringe_value() * self._new_page_weight():
            doc = self._recrawl.pop(ready)
            if doc is not None:
                return doc
        doc = self._pop_fringe(ready)
        if doc is None:
            return self._recrawl.pop(ready)
        return doc

    def _new_page_weight(self) -> float:
        """A new page's worth over a refresh's in M = min(R, F): 1 while recall binds, 1 - F once deletions
        make freshness bind (the re-crawl hook's ``new_page_weight``, if it has one; docs/replay.md)."""
        weight = getattr(self.recrawl_index, "new_page_weight", None)
        return 1.0 if weight is None else float(weight(self.fringe_relevance()))

    def _recrawl_gone(self, doc: int, kind: str, now: float) -> None:
        """A retrieved page's re-crawl found it deleted (or failed): tell the hook (its collection sums)."""
        gone = getattr(self.recrawl_index, "gone", None)
        if gone is not None:
            gone(self.docs.urls[doc], now - self.docs.last_fetch[doc], kind == DELETED)

    def report(self, outcome: FetchOutcome, now: float) -> list[str]:
        parent_url, r_new = outcome.url, outcome.relevance
        if not r_new >= 0:  # (a NaN too: it would order nothing)
            raise ValueError(f"relevance must be >= 0, got {r_new} for {parent_url}")
        for link in outcome.links:  # a link's anchor relevance is a tie-break key: it must order
            if link.anchor_relevance != link.anchor_relevance:
                raise ValueError(f"anchor relevance of {link.url} is NaN (on {parent_url})")
        docs = self.docs
        status = docs.status
        doc = self._flying.pop(parent_url, None)  # handed out by next_batch: no longer in flight
        if doc is None:
            doc = docs.ids.get(parent_url)
            if doc is None:  # e.g. a redirect target the controller never queued
                doc = docs.add(parent_url, 0.0, 0, FLIGHT)
        st = status[doc]  # in flight: out of _flying above (a redirect target's new row was never in it)
        if st == FRINGE:
            self._remove_fringe(doc)
        elif st == RETRIEVED:
            self._recrawl.remove(doc)
        fetches = docs.fetches[doc]
        unfetched = st in UNFETCHED
        was_fringe = fetches == 0 and unfetched
        kind = outcome.kind
        if was_fringe and kind in _REFETCH_KINDS:
            kind = NEW
        if unfetched:
            # located -> fetched (or gone): its estimate leaves the table's unfetched sum
            docs.unfetched_rel -= docs.parent_rel[doc]
        elif kind in (DELETED, ERROR) and self.recrawl_index is not None:
            self._recrawl_gone(doc, kind, now)
        if kind == ERROR:
            status[doc] = GONE
            return []
        # Eq. 11 with r_k = the last relevance score; a first retrieval earns r_k+1 (reward's first case,
        # without its checks: r_new was checked above and r_k is a checked relevance or 0)
        g = r_new if kind == NEW else reward(kind, docs.rel[doc], r_new)
        if was_fringe and kind == NEW:
            self._reward_sum += g
            n = self._reward_n = self._reward_n + 1
            # the running mean of about the last REWARD_MEMORY first-retrieval rewards (_fringe_value's floor)
            self._reward_recent += (g - self._reward_recent) / (n if n < REWARD_MEMORY else REWARD_MEMORY)
        added: list[int] = []
        added_urls: list[str] = []
        if kind != DELETED:
            self._add_links(doc, parent_url, r_new, outcome.links, added, added_urls)
        self._learn(doc, was_fringe, g, added)
        if kind == DELETED:
            status[doc] = GONE
        else:
            status[doc] = RETRIEVED
            docs.rel[doc] = r_new
            if fetches == 0:
                docs.first_fetch[doc] = now
            docs.fetches[doc] = fetches + 1
            if kind == MODIFIED:
                docs.changes[doc] += 1
            docs.last_fetch[doc] = now
            if self.recrawl_index is not None:
                self._push_recrawl(doc, now)
        return added_urls

    def _add_links(
        self,
        doc: int,
        parent_url: str,
        r_new: float,
        links: Iterable[Discovered],
        added: list[int],
        urls: list[str],
    ) -> None:
        """Locate the links of fetched page ``doc`` (relevance ``r_new``): each new URL is added and queued
        (appended to ``added`` and ``urls``); a fringe document linked again is :meth:`_rediscovered`."""
        docs = self.docs
        status = docs.status
        depth = docs.depth[doc] + 1
        ids_get, add, enqueue = docs.ids.get, docs.add, self._enqueue
        for link in links:
            url = link.url
            child = ids_get(url)
            if child is None:
                child = add(url, r_new, depth, FRINGE)
                enqueue(child, url, parent_url, r_new, link.anchor_relevance, depth)
                added.append(child)
                urls.append(url)
            elif status[child] == FRINGE and child != doc:
                self._rediscovered(child, parent_url, r_new, link.anchor_relevance)

    def defer(self, url: str) -> None:
        docs = self.docs
        doc = docs.ids.get(url)
        if doc is None:
            raise KeyError(f"defer of a URL the controller does not know: {url}")
        st = docs.status[doc]
        if st == FLIGHT:
            self._flying.pop(url, None)
            docs.status[doc] = FRINGE
            self._requeue(doc)
        elif st == RECRAWL_FLIGHT:
            self._flying.pop(url, None)
            docs.status[doc] = RETRIEVED
            self._push_recrawl(doc, docs.last_fetch[doc])
        else:
            raise ValueError(f"defer of a URL that is not in flight: {url}")

    def claim(self, url: str) -> bool:
        docs = self.docs
        doc = docs.ids.get(url)
        if doc is None or docs.status[doc] != FRINGE:
            return False
        self._remove_fringe(doc)
        docs.status[doc] = FLIGHT
        self._flying[url] = doc
        return True

    def evict_fringe(self, keep: int) -> int:
        """Forget every fringe document ranked below the first ``keep`` in queue order (the least valuable
        by this policy's own index; in-flight ones are kept): a bounded frontier (issue 15). An evicted URL
        is unknown again -- its string is freed and a later link to it locates it anew -- and its row stays
        behind as ``GONE`` (a few dozen bytes). Returns the number forgotten. O(n log n): call it rarely."""
        docs = self.docs
        status = docs.status
        order = [d for d in self._fringe_order() if status[d] == FRINGE]
        for doc in order[keep:]:
            self._remove_fringe(doc)
            docs.unfetched_rel -= docs.parent_rel[doc]
            status[doc] = GONE
            del docs.ids[docs.urls[doc]]
            docs.urls[doc] = ""
        return max(0, len(order) - keep)

    def recrawl_size(self) -> int:
        return len(self._recrawl)

    def in_flight(self) -> int:
        return len(self._flying)

    def recrawling(self) -> bool:
        return self.recrawl_index is not None

    def fringe_relevance(self) -> float:
        return max(0.0, self.docs.unfetched_rel)  # (an incremental float sum can end a rounding below 0)

    def estimated_relevance(self, url: str) -> float | None:
        docs = self.docs
        doc = docs.ids.get(url)
        return None if doc is None or docs.status[doc] not in UNFETCHED else docs.parent_rel[doc]

    def known(self) -> int:
        return len(self.docs)

    def status(self, url: str) -> str:
        """ "unknown", "fringe", "retrieved" or "gone" (diagnostics and tests)."""
        doc = self.docs.ids.get(url)
        return "unknown" if doc is None else STATUS_NAMES.get(self.docs.status[doc], "unknown")

    # -- re-crawl arms ---------------------------------------------------------------------------------

    def _arm(self, doc: int) -> RecrawlArm:
        docs = self.docs
        return RecrawlArm(
            url=docs.urls[doc],
            relevance=docs.rel[doc],
            last_fetch=docs.last_fetch[doc],
            first_fetch=docs.first_fetch[doc],
            fetches=docs.fetches[doc],
            changes=docs.changes[doc],
        )

    def _push_recrawl(self, doc: int, now: float) -> None:
        assert self.recrawl_index is not None
        value = self.recrawl_index(self._arm(doc), now)
        if value > 0:
            self._recrawl.push(doc, value, self.docs.host_id[doc])
        else:
            self._recrawl.remove(doc)

    def _rekey_recrawl(self, now: float) -> None:
        """Re-crawl indices grow as a copy ages: each call re-computes the next ``recrawl_rekey`` retrieved
        arms in round-robin order (bounded work per decision instead of a full O(n) refresh)."""
        if self.recrawl_index is None:
            return
        status = self.docs.status
        n = len(status)
        budget = self.config.recrawl_rekey
        cursor = self._rekey_cursor
        for _ in range(min(n, 4 * budget)):
            if cursor >= n:
                cursor = 0
            if status[cursor] == RETRIEVED:
                self._push_recrawl(cursor, now)
                budget -= 1
                if budget == 0:
                    cursor += 1
                    break
            cursor += 1
        self._rekey_cursor = cursor

    # -- checkpoints -----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        docs = self.docs
        return {
            "format": "oasis-controller/1",
            "policy": self.name,
            "docs": [[*docs.row(doc), self._doc_state(doc)] for doc in range(len(docs))],
            "seq": docs.seq,
            "fringe": self._fringe_order(),
            "reward": [self._reward_sum, self._reward_n],
            "q": self._q_dict(),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or state.get("format") != "oasis-controller/1":
            raise ValueError("not a controller checkpoint (format oasis-controller/1)")
        if state.get("policy") != self.name:
            raise ValueError(f"checkpoint is for policy {state.get('policy')!r}, not {self.name!r}")
        docs = self.docs
        if len(docs):
            raise ValueError("load_state needs a fresh controller")
        self._load_q_dict(state.get("q"))
        states: dict[int, str | None] = {}
        for row in state["docs"]:
            url, st, rel, prel, depth, key, fetches, changes, first, last, dstate = row
            if not (float(rel) >= 0 and float(prel) >= 0):  # report refuses these; a damaged file must too
                raise ValueError(f"checkpoint row for {url!r} has relevance {rel!r} / parent {prel!r}")
            doc = docs.add(str(url), float(prel), int(depth), int(st))
            docs.rel[doc] = float(rel)
            docs.key[doc] = float(key)
            docs.fetches[doc] = int(fetches)
            docs.changes[doc] = int(changes)
            docs.first_fetch[doc] = float(first)
            docs.last_fetch[doc] = float(last)
            if st == FRINGE:
                states[doc] = dstate
        docs.seq = int(state.get("seq", 0))
        self._reward_sum, n = state.get("reward", [0.0, 0])
        self._reward_n = int(n)
        self._reward_recent = self._reward_sum / self._reward_n if self._reward_n else 0.0
        order = [int(d) for d in state.get("fringe", [])]
        listed = set(order)  # once: a set per document made a restore quadratic (oasis bench checkpoint)
        order += [d for d in states if d not in listed]
        for doc in order:
            self._restore_fringe(doc, states[doc])
        if self.recrawl_index is not None:
            for doc, st in enumerate(docs.status):
                if st == RETRIEVED:
                    self._push_recrawl(doc, docs.last_fetch[doc])

    def _doc_state(self, doc: int) -> str | None:
        return None

    def _fringe_order(self) -> list[int]:
        """Fringe documents in queue order (in-flight ones last), so a restore keeps tie order."""
        raise NotImplementedError

    def _in_flight_fringe(self) -> list[int]:
        return [d for d, s in enumerate(self.docs.status) if s == FLIGHT]

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

    def _enqueue(
        self, doc: int, url: str, parent_url: str | None, parent_rel: float, anchor_rel: float, depth: int
    ) -> None:
        docs = self.docs
        docs.seq += 1
        host = docs.hosts[docs.host_id[doc]]
        key = self._key_for(doc, DiscoveryContext(url, parent_url, parent_rel, anchor_rel, depth, host))
        docs.key[doc] = key
        self._fringe.push(doc, docs.key[doc], docs.host_id[doc])

    def _requeue(self, doc: int) -> None:
        self._fringe.push(doc, self.docs.key[doc], self.docs.host_id[doc])

    def _remove_fringe(self, doc: int) -> None:
        self._fringe.remove(doc)

    def _pop_fringe(self, host_ready: HostReady | None) -> int | None:
        return self._fringe.pop(host_ready)

    def frontier_size(self) -> int:
        return len(self._fringe)

    def _fringe_order(self) -> list[int]:
        return self._fringe.ordered() + self._in_flight_fringe()


class BreadthFirstController(_KeyedController):
    """First discovered, first fetched."""

    name = "bfs"

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        return -float(self.docs.seq)


class RandomController(_KeyedController):
    """A uniformly random fringe document each time."""

    name = "random"

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        return self.rng.random()


# The tie-break shared by every policy (issue 10: "same tie-break for all"): among fringe documents of equal
# priority, the one with the larger parent relevance + anchor-text relevance goes first (then FIFO) -- the
# order the Whittle controller keeps inside a state group (``_tie``). Keyed baselines fold it into their
# float key with this weight; priorities closer than TIE_WEIGHT * 2 may swap (relevances are in [0, 1]).
TIE_WEIGHT = 1e-7


class _TieBrokenController(_KeyedController):
    """A best-first baseline whose key is ``primary + TIE_WEIGHT * (parent_rel + anchor_rel)``; a fringe
    document linked again by a better page takes the best primary and tie seen (as best-first does)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._tie = self.docs.column("d")
        self._primary = self.docs.column("d")

    def _primary_for(self, doc: int, ctx: DiscoveryContext) -> float:
        raise NotImplementedError

    def _key_for(self, doc: int, ctx: DiscoveryContext) -> float:
        if ctx.parent_url is None:
            self._primary[doc] = float("inf")
            return float("inf")
        self._tie[doc] = ctx.parent_relevance + ctx.anchor_relevance
        self._primary[doc] = self._primary_for(doc, ctx)
        return self._primary[doc] + TIE_WEIGHT * self._tie[doc]

    def _rediscovered_primary(self, doc: int, parent_rel: float, anchor_rel: float) -> float:
        return self._primary[doc]

    def _rediscovered_tie(self, doc: int, parent_rel: float, anchor_rel: float) -> float:
        """The tie-break term a new link offers (kept if above the document's own): its ``p + a``."""
        return parent_rel + anchor_rel

    def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
        docs = self.docs
        primary = max(self._primary[doc], self._rediscovered_primary(doc, parent_rel, anchor_rel))
        tie = max(self._tie[doc], self._rediscovered_tie(doc, parent_rel, anchor_rel))
        key = primary + TIE_WEIGHT * tie
        if key > docs.key[doc]:
            self._primary[doc], self._tie[doc], docs.key[doc] = primary, tie, key
            self._fringe.push(doc, key, docs.host_id[doc])

    def _fringe_value(self) -> float:
        top = self._fringe.peek()
        return max(top[1] if top is not None else 0.0, super()._fringe_value())


class GreedyParentController(_TieBrokenController):
    """Practical best-first: the highest relevance among the retrieved pages that link to a document."""

    name = "greedy-parent"

    def _primary_for(self, doc: int, ctx: DiscoveryContext) -> float:
        return ctx.parent_relevance

    def _rediscovered_primary(self, doc: int, parent_rel: float, anchor_rel: float) -> float:
        return parent_rel


class GreedyAnchorController(_TieBrokenController):
    """Best-first by parent and anchor-text relevance (the practical best-first of focused crawlers): a
    document's key is the best ``parent_rel + anchor_rel`` over the retrieved pages linking to it. It sees
    exactly what the Whittle controller's generalising state sees (issue 10's strongest practical
    baseline)."""

    name = "greedy-anchor"

    def _primary_for(self, doc: int, ctx: DiscoveryContext) -> float:
        return ctx.parent_relevance + ctx.anchor_relevance

    def _rediscovered_primary(self, doc: int, parent_rel: float, anchor_rel: float) -> float:
        return parent_rel + anchor_rel


class GreedyOracleController(_TieBrokenController):
    """Fringe-greedy with oracle relevance: the document's own (unfetched) relevance, from ``oracle``."""

    name = "greedy-oracle"

    def __init__(self, *, oracle: Oracle, **kw: Any) -> None:
        super().__init__(**kw)
        self.oracle = oracle

    def _primary_for(self, doc: int, ctx: DiscoveryContext) -> float:
        return float(self.oracle(ctx.url))


class WhittleController(_Controller):
    """The paper's request controller: fringe arms grouped by local state x, ranked by v(x) (Eq. 9) from a
    Q-table learned with Eq. 10 (child-discovery bonus) and the reward of Eq. 11.

    Parts: the learning strategy ``learning`` (states, Q-table, Eq. 10), the fringe documents by state
    ``groups`` and the priority queue of those groups ``queue``. All fringe documents in one state share an
    index, so the queue holds one *group* per state, keyed by v(x): a Q-update re-keys one group, O(log S).
    Inside a group (equal indices), documents wait in one heap per host, ordered by parent relevance +
    anchor relevance (then discovery order): the tie-break among arms whose index is equal. The group serves
    its hosts round robin, skipping hosts that ``host_ready`` blocks (a group whose hosts are all blocked is
    set aside for that decision).
    """

    name = "whittle"

    def __init__(self, *, q: QTable | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.learning = WhittleLearning(self.config, self.docs, q)
        self._discovered = self.learning.discovered  # bound once: called per discovered link
        self._learn_step = self.learning.learn  # and once per fetch
        self._states = self.learning.states
        self._tie = self.docs.column("d")  # per document: parent relevance + anchor relevance at discovery
        self.groups = StateGroups(self.docs, self._states, self._tie)
        self.queue = GroupQueue()
        # uniformly random fringe document (epsilon exploration): array + position map
        self._explore = self.config.epsilon > 0.0
        self._fringe_arr: list[int] = []
        self._fringe_pos: dict[int, int] = {}

    @property
    def q(self) -> QTable:
        return self.learning.q

    def _doc_state(self, doc: int) -> str | None:
        return self._states[doc]

    def frontier_size(self) -> int:
        return self.groups.size

    def _fringe_order(self) -> list[int]:
        out: list[int] = []
        for gid in self.queue.ordered():
            out += self.groups.docs(gid)
        return out + self._in_flight_fringe()

    def index_of(self, url: str) -> float:
        """v(x) of a known fringe document (diagnostics)."""
        state = self._states[self.docs.ids[url]]
        return self.learning.index(state) if state is not None else 0.0

    def _fringe_value(self) -> float:
        """The fringe's value in the re-crawl index's unit, relevance gained per fetch (one queue in one unit,
        docs/replay.md "One queue in one unit"): the relevance fringe fetches have been finding lately (the
        running mean of recent first-retrieval rewards, Eq. 11's g = r of the new page). Not Q(x,1) = v(x) /
        (1 - gamma): that adds gamma times the value of the children the fetch discovers (Eq. 10), which
        other fetches collect, each at its own cost; compared with a re-crawl's relevance per fetch it held
        re-crawls back (9-12% of raw P on the synthetic changing training webs, issue 10)."""
        return super()._fringe_value()

    def _add_to_group(self, doc: int, state: str) -> None:
        groups = self.groups
        gid = groups.add(doc, state)
        if groups.live[gid] == 1:
            self.queue.push(gid, self.learning.q.index(state))
        if self._explore:
            self._fringe_pos[doc] = len(self._fringe_arr)
            self._fringe_arr.append(doc)

    def _enqueue(
        self, doc: int, url: str, parent_url: str | None, parent_rel: float, anchor_rel: float, depth: int
    ) -> None:
        state = self._discovered(doc, url, parent_url, parent_rel, anchor_rel, depth)
        self._tie[doc] = parent_rel + anchor_rel
        # _add_to_group(doc, state), written out (once per discovered link)
        groups = self.groups
        gid = groups.add(doc, state)
        if groups.live[gid] == 1:
            self.queue.push(gid, self.learning.q.index(state))
        if self._explore:
            self._fringe_pos[doc] = len(self._fringe_arr)
            self._fringe_arr.append(doc)

    def _add_links(
        self,
        doc: int,
        parent_url: str,
        r_new: float,
        links: Iterable[Discovered],
        added: list[int],
        urls: list[str],
    ) -> None:
        """The base class's loop with :meth:`_enqueue` written out (once per link of every fetched page)."""
        docs = self.docs
        status, tie, live = docs.status, self._tie, self.groups.live
        depth = docs.depth[doc] + 1
        ids_get, add, discovered, group_add = docs.ids.get, docs.add, self._discovered, self.groups.add
        for link in links:
            url = link.url
            child = ids_get(url)
            if child is None:
                child = add(url, r_new, depth, FRINGE)
                ar = link.anchor_relevance
                state = discovered(child, url, parent_url, r_new, ar, depth)
                tie[child] = r_new + ar
                gid = group_add(child, state)
                if live[gid] == 1:
                    self.queue.push(gid, self.learning.q.index(state))
                if self._explore:
                    self._fringe_pos[child] = len(self._fringe_arr)
                    self._fringe_arr.append(child)
                added.append(child)
                urls.append(url)
            elif status[child] == FRINGE and child != doc:
                self._rediscovered(child, parent_url, r_new, link.anchor_relevance)

    def _requeue(self, doc: int) -> None:
        state = self._states[doc]
        assert state is not None
        self._add_to_group(doc, state)

    def _rediscovered(self, doc: int, parent_url: str, parent_rel: float, anchor_rel: float) -> None:
        if not self.learning.restate or parent_rel <= self.docs.parent_rel[doc]:
            return
        self.docs.set_parent_rel(doc, parent_rel)
        old = self._states[doc]
        state = self.learning.rediscovered(doc, parent_url, parent_rel, anchor_rel)
        tie = max(self._tie[doc], parent_rel + anchor_rel)
        if state == old:
            if tie > self._tie[doc]:  # a second, better entry in the same host heap; the old one is skipped
                self._tie[doc] = tie  # once the document has left the fringe
                self.groups.add(doc, state, new=False)
            return
        self._taken(doc)  # leave the old group (its heap entry goes stale: the state no longer matches)
        self._tie[doc] = tie
        self._states[doc] = state
        self._add_to_group(doc, state)

    def _restore_fringe(self, doc: int, dstate: str | None) -> None:
        self._states[doc] = dstate if dstate is not None else "seed"
        self._tie[doc] = self.docs.parent_rel[doc]  # a restored document's tie-break key: parent relevance
        self._requeue(doc)

    def _taken(self, doc: int) -> None:
        """Bookkeeping when a fringe document leaves the fringe (popped, or reported directly)."""
        state = self._states[doc]
        assert state is not None
        gid = self.groups.ids.get(state)
        assert gid is not None
        if self.groups.leave(gid):
            self.queue.discard(gid)
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

    def _pop_fringe(self, host_ready: HostReady | None) -> int | None:
        if self._explore and self._fringe_arr and self.rng.random() < self.config.epsilon:
            doc = self._fringe_arr[self.rng.randrange(len(self._fringe_arr))]
            if host_ready is None or host_ready(self.docs.host_id[doc]):
                self._taken(doc)
                return doc
        found = pop_document(self.queue, self.groups, host_ready, self.learning.q.index)
        if found is not None and self._explore:
            self._explore_drop(found)
        return found

    def _rekey_state(self, state: str) -> None:
        gid = self.groups.ids.get(state)
        if gid is not None and self.groups.live[gid] > 0:
            self.queue.push(gid, self.learning.index(state))

    def _learn(self, doc: int, was_fringe: bool, g: float, children: list[int]) -> None:
        q_next = self.learning.q.value(RETRIEVED_STATE) if self.recrawl_index is not None else 0.0
        groups = self.groups
        for state, v in self._learn_step(doc, was_fringe, g, children, q_next):
            gid = groups.ids.get(state)
            if gid is not None and groups.live[gid] > 0:
                self.queue.push(gid, v)  # Eq. 9: re-key the state's group

    # -- Q-table persistence ---------------------------------------------------------------------------

    def _q_dict(self) -> dict[str, Any] | None:
        return self.learning.to_dict()

    def _load_q_dict(self, data: Any) -> None:
        self.learning.load_dict(data)

    def save_q(self, path: str | os.PathLike[str]) -> None:
        self.learning.save(path)

    def load_q(self, path: str | os.PathLike[str]) -> None:
        self.learning.load(path)
        for state in self.groups.states():
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
        if cfg.residual:  # b_i + c(x) per page (scheduling.residual)
            from oasis.robot.scheduling.residual import residual_controller_class

            return residual_controller_class()(q=q, **common)
        return WhittleController(q=q, **common)
    if policy == "bfs":
        return BreadthFirstController(**common)
    if policy == "random":
        return RandomController(**common)
    if policy == "greedy-parent":
        return GreedyParentController(**common)
    if policy == "greedy-anchor":
        return GreedyAnchorController(**common)
    if policy == "greedy-oracle":
        if oracle is None:
            raise ValueError("policy 'greedy-oracle' needs an oracle relevance function")
        return GreedyOracleController(oracle=oracle, **common)
    raise ValueError(f"unknown policy {policy!r}; choose one of {POLICIES}")
