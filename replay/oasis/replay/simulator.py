"""Discrete-time replay of a crawl over a known web graph, driving a request controller in-process.

Each step t = 1..T the controller hands out up to m URLs (``next_batch``); fetching one reveals the page's
relevance and its out-links (``report``). No gRPC, no HTTP: the same controller classes the live robot runs.

The web may change (papers/002's ephemeral content; papers/004's ``V_t``): documents are modified, deleted
and created by Poisson processes with per-document rates (:class:`ChangeModel`; all rates 0 = the static
web of the paper's experiment). A created document becomes visible through its in-links, whose pages count
as modified at that moment. Collection quality R, F, M (Eqs. 1-2) is tracked incrementally after every step.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from oasis.replay.metrics import freshness_from_sums, performance, quality, recall_from_sums
from oasis.robot.scheduling import FetchKind
from oasis.robot.scheduling.controller import Discovered, FetchOutcome, RequestController
from oasis.web.model import WebGraph
from oasis.web.synthetic import reachable_mask

logger = logging.getLogger(__name__)

Progress = Callable[[int], None]  # called with the number of steps just completed

MODIFY, DELETE, CREATE = 0, 1, 2  # event kinds
# (event times sorted, node of each event, kind of each event, creation time of every node: 0 = present)
Events = tuple[npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int8], npt.NDArray[np.float64]]


@dataclass(frozen=True, kw_only=True)
class ChangeModel:
    """Poisson change processes per document; each rate is a mean per time step.

    ``heterogeneous`` draws each document's rates as the mean times an Exp(1) factor (a few documents change
    often, most rarely); otherwise every document has the mean rate.
    """

    modify_rate: float = 0.0
    delete_rate: float = 0.0
    create_fraction: float = 0.0  # share of non-seed documents absent at t = 0
    create_rate: float = 0.0  # rate at which each absent document appears
    heterogeneous: bool = True
    # the web answers Last-Modified, as the living web and most servers do: a first retrieval tells the
    # controller's re-crawl hook whether the page changed since the crawl started (the live robot's
    # ``WhittleRecrawl.observe_history``; the time since the page's last modification or creation, at t = 0
    # for a page present and unchanged since then)
    last_modified: bool = False

    def __post_init__(self) -> None:
        for name in ("modify_rate", "delete_rate", "create_rate"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be finite and >= 0, got {value}")
        if not 0.0 <= self.create_fraction < 1.0:
            raise ValueError(f"create_fraction must be in [0, 1), got {self.create_fraction}")
        if self.create_fraction > 0 and self.create_rate <= 0:
            raise ValueError("create_fraction > 0 needs create_rate > 0")

    @property
    def static(self) -> bool:
        return self.modify_rate == 0 and self.delete_rate == 0 and self.create_fraction == 0


@dataclass
class ReplayResult:
    """Curves over steps t = 1..T and the fetch log."""

    R: list[float]
    F: list[float]
    M: list[float]
    fetched: list[int]  # node ids in fetch order (re-crawls included)
    fetched_relevance: list[float]
    first_fetches: int
    recrawls: int
    meta: dict[str, object] = field(default_factory=dict)

    @property
    def P(self) -> float:
        return performance(self.M)


def reachable_from(graph: WebGraph, seeds: Sequence[int]) -> npt.NDArray[np.bool_]:
    return reachable_mask(graph.indptr, graph.indices, np.asarray(seeds, dtype=np.int64))


class Replay:
    """One web graph with relevance scores, replayed against any number of controllers."""

    def __init__(
        self,
        graph: WebGraph,
        relevance: npt.NDArray[np.float64] | Sequence[float],
        seeds: Sequence[int],
        *,
        anchor_relevance: npt.NDArray[np.float64] | Sequence[float] | None = None,
    ) -> None:
        """``anchor_relevance`` (optional) is aligned with ``graph.indices``: the topic relevance of the
        anchor text of each link."""
        rel = np.asarray(relevance, dtype=np.float64)
        if rel.shape != (len(graph),):
            raise ValueError(f"relevance has {rel.shape} entries for {len(graph)} pages")
        if len(rel) and (not np.all(np.isfinite(rel)) or rel.min() < 0):
            raise ValueError("relevance scores must be finite and >= 0")
        if not len(seeds):
            raise ValueError("at least one seed page is needed")
        for s in seeds:
            if not 0 <= int(s) < len(graph):
                raise ValueError(f"seed {s} is not a page of the graph")
        self.graph = graph
        self.relevance = rel
        self.rel_list: list[float] = rel.tolist()
        self.seeds = [int(s) for s in seeds]
        self.urls: list[str] = list(graph.urls)
        self.index: dict[str, int] = {u: i for i, u in enumerate(self.urls)}
        self.anchor: list[float] | None = None
        if anchor_relevance is not None:
            anchor = np.asarray(anchor_relevance, dtype=np.float64)
            if anchor.shape != graph.indices.shape:
                raise ValueError("anchor_relevance must have one entry per link (aligned with graph.indices)")
            self.anchor = anchor.tolist()
        self.reach = reachable_from(graph, self.seeds)
        self.reachable = int(self.reach.sum())
        self.total_relevance = float(rel[self.reach].sum())
        self._indptr: list[int] = graph.indptr.tolist()
        self._indices = graph.indices
        # each page's modification rate in the last drawn change events (the true rates of a changing run,
        # for the ``whittle-true`` re-crawl reference; zeros until events are drawn)
        self.modify_rates: npt.NDArray[np.float64] = np.zeros(len(self.urls))

    def __len__(self) -> int:
        return len(self.urls)

    def with_link_order(self, seed: int) -> Replay:
        """The same web with every page's links in a random order (``seed``; 0: as served): the same pages,
        links, anchors and relevance, so it changes only what a policy's first-in-first-out tie-break sees
        -- the order siblings of equal evidence are found in. Every policy run on it meets the same order,
        so two policies compared on each of many orders are compared paired, over their luck in ties."""
        if seed == 0:
            return self
        g = self.graph
        rng = np.random.default_rng(seed)
        indices = g.indices.copy()
        anchor = None if self.anchor is None else np.asarray(self.anchor, dtype=np.float64)
        ptr = self._indptr
        for i in range(len(self.urls)):
            lo, hi = ptr[i], ptr[i + 1]
            if hi - lo > 1:
                perm = lo + rng.permutation(hi - lo)
                indices[lo:hi] = g.indices[perm]
                if anchor is not None:
                    anchor[lo:hi] = anchor[perm]
        graph = WebGraph(urls=g.urls, indptr=g.indptr, indices=indices, relevance=g.relevance, seeds=g.seeds)
        return Replay(graph, self.relevance, self.seeds, anchor_relevance=anchor)

    def links(self, i: int) -> list[Discovered]:
        lo, hi = self._indptr[i], self._indptr[i + 1]
        urls = self.urls
        ar = self.anchor
        if ar is None:
            return [Discovered(urls[j]) for j in self._indices[lo:hi].tolist()]
        return [
            Discovered(urls[j], "", a) for j, a in zip(self._indices[lo:hi].tolist(), ar[lo:hi], strict=True)
        ]

    def steps_for(self, budget: int, m: int) -> int:
        """T = ceil(budget / m) steps."""
        if m < 1 or budget < 0:
            raise ValueError("m must be >= 1 and the budget >= 0")
        return -(-budget // m)

    # -- static web (F = 1): the paper's experiment ----------------------------------------------------

    def run_static(
        self,
        controller: RequestController,
        *,
        m: int,
        steps: int,
        progress: Progress | None = None,
    ) -> ReplayResult:
        controller.add_seeds(self.urls[s] for s in self.seeds)
        index, rel = self.index, self.rel_list
        total = self.total_relevance
        got = bytearray(len(self.urls))
        acc = 0.0
        R: list[float] = []
        fetched: list[int] = []
        fetched_rel: list[float] = []
        exhausted = False
        recrawls = 0
        for t in range(1, steps + 1):
            now = float(t)
            batch = [] if exhausted else controller.next_batch(m, now)
            if not batch:
                exhausted = True
            for url in batch:
                i = index[url]
                r = rel[i]
                kind: FetchKind = "new"
                if not got[i]:
                    got[i] = 1
                    acc += r
                else:  # a re-crawl of a page that never changes (issue 16: it was reported "new")
                    kind = "unchanged"
                    recrawls += 1
                fetched.append(i)
                fetched_rel.append(r)
                controller.report(FetchOutcome(url, kind, r, self.links(i)), now)
            R.append(recall_from_sums(acc, total))
            if progress is not None:
                progress(1)
        return ReplayResult(
            R=R,
            F=[1.0] * len(R),
            M=list(R),
            fetched=fetched,
            fetched_relevance=fetched_rel,
            first_fetches=len(fetched) - recrawls,
            recrawls=recrawls,
        )

    # -- changing web ----------------------------------------------------------------------------------

    def run(
        self,
        controller: RequestController,
        *,
        m: int,
        steps: int,
        changes: ChangeModel | None = None,
        rng: np.random.Generator | None = None,
        progress: Progress | None = None,
        events: Events | None = None,
    ) -> ReplayResult:
        """Replay ``steps`` steps of m fetches. With ``changes`` (not static) the web changes meanwhile;
        ``rng`` draws the change processes (required then). ``events`` replaces the drawn processes by a
        given event list (see :meth:`change_events`; tests use it for hand-worked cases)."""
        if events is None and (changes is None or changes.static):
            return self.run_static(controller, m=m, steps=steps, progress=progress)
        if events is None:
            if rng is None or changes is None:
                raise ValueError("a changing web needs an rng for its Poisson processes")
            events = self.change_events(changes, steps, rng)
        history = changes is not None and changes.last_modified
        return self._run_changing(
            controller, m=m, steps=steps, events=events, progress=progress, last_modified=history
        )

    def change_events(self, changes: ChangeModel, steps: int, rng: np.random.Generator) -> Events:
        """Pre-drawn events (time, node, kind) sorted by time, and each node's creation time (0 = present)."""
        n = len(self.urls)
        horizon = float(steps)

        def rates(mean: float) -> npt.NDArray[np.float64]:
            if changes.heterogeneous:
                return mean * rng.exponential(1.0, n)
            return np.full(n, mean)

        times: list[npt.NDArray[np.float64]] = []
        nodes: list[npt.NDArray[np.int64]] = []
        kinds: list[npt.NDArray[np.int8]] = []
        created = np.zeros(n)
        if changes.create_fraction > 0:
            absent = rng.random(n) < changes.create_fraction
            absent[self.seeds] = False
            idx = np.flatnonzero(absent)
            created[idx] = rng.exponential(1.0 / changes.create_rate, len(idx))
            keep = idx[created[idx] <= horizon]
            created[idx[created[idx] > horizon]] = math.inf
            times.append(created[keep])
            nodes.append(keep.astype(np.int64))
            kinds.append(np.full(len(keep), CREATE, dtype=np.int8))
        if changes.modify_rate > 0:
            mu = rates(changes.modify_rate)
            self.modify_rates = mu
            counts = rng.poisson(mu * horizon)
            who = np.repeat(np.arange(n, dtype=np.int64), counts)
            when = rng.uniform(0.0, horizon, len(who))
            ok = when > created[who]
            times.append(when[ok])
            nodes.append(who[ok])
            kinds.append(np.full(int(ok.sum()), MODIFY, dtype=np.int8))
        if changes.delete_rate > 0:
            delta = rates(changes.delete_rate)
            with np.errstate(divide="ignore", over="ignore"):
                when = created + rng.exponential(1.0, n) / delta
            who = np.flatnonzero(when <= horizon)
            who = who[~np.isin(who, self.seeds)]
            times.append(when[who])
            nodes.append(who.astype(np.int64))
            kinds.append(np.full(len(who), DELETE, dtype=np.int8))
        t = np.concatenate(times) if times else np.zeros(0)
        v = np.concatenate(nodes) if nodes else np.zeros(0, dtype=np.int64)
        k = np.concatenate(kinds) if kinds else np.zeros(0, dtype=np.int8)
        order = np.argsort(t, kind="stable")
        return t[order], v[order], k[order], created

    def upper_bound_curve(self, events: Events, *, m: int, steps: int) -> list[float]:
        """An upper bound of M(C_t), t = 1..T, on a changing web, for every schedule of m fetches per step.

        By step t at most t m distinct documents have been fetched, so the fresh relevance S_CV(t) in the
        collection is at most the sum of the t m largest relevances among the documents that exist at t; and
        F <= 1. Hence M(C_t) <= R(C_t) <= top_{tm}(V_t) / S_V(t) (Eq. 1 with the same reachable set and
        the same event stream as the policies). A document that does not exist yet is never counted, so
        this reference never "fetches" a page before it exists, and P_ratio <= 1 holds for every policy
        (tested as a property). On a static web it equals the closed-form upper bound.
        """
        ev_t, ev_v, ev_k, created_at = events
        rel = self.relevance
        reach = self.reach
        nodes = np.flatnonzero(reach)
        order = nodes[np.lexsort((nodes, -rel[nodes]))]  # reachable, by decreasing relevance
        pos = np.full(len(rel), -1, dtype=np.int64)
        pos[order] = np.arange(len(order))
        size = len(order)
        cnt = [0] * (size + 1)  # Fenwick trees over the sorted positions: counts and relevance sums
        tot = [0.0] * (size + 1)
        rel_sorted = rel[order].tolist()

        def update(k: int, sign: int) -> None:
            r = sign * rel_sorted[k]
            k += 1
            while k <= size:
                cnt[k] += sign
                tot[k] += r
                k += k & -k

        def top(k: int) -> float:
            # sum of the k first present positions (binary lifting over the count tree)
            idx, acc, left = 0, 0.0, k
            step = 1 << size.bit_length()
            while step:
                nxt = idx + step
                if nxt <= size and cnt[nxt] <= left:
                    idx = nxt
                    left -= cnt[nxt]
                    acc += tot[nxt]
                step >>= 1
            return acc

        exists = created_at == 0.0
        S_V = 0.0
        for k, i in enumerate(order.tolist()):
            if exists[i]:
                update(k, 1)
                S_V += rel_sorted[k]
        ev_t_l, ev_v_l, ev_k_l = ev_t.tolist(), ev_v.tolist(), ev_k.tolist()
        e, n_events = 0, len(ev_t_l)
        out: list[float] = []
        for t in range(1, steps + 1):
            while e < n_events and ev_t_l[e] <= t:
                i, kind = ev_v_l[e], ev_k_l[e]
                e += 1
                if kind == MODIFY or pos[i] < 0:
                    continue
                if kind == DELETE and exists[i]:
                    exists[i] = False
                    update(int(pos[i]), -1)
                    S_V -= rel_sorted[pos[i]]
                elif kind == CREATE and not exists[i]:
                    exists[i] = True
                    update(int(pos[i]), 1)
                    S_V += rel_sorted[pos[i]]
            out.append(recall_from_sums(max(top(t * m), 0.0), max(S_V, 0.0)))
        return out

    def _run_changing(
        self,
        controller: RequestController,
        *,
        m: int,
        steps: int,
        events: Events,
        progress: Progress | None,
        last_modified: bool = False,
    ) -> ReplayResult:
        n = len(self.urls)
        hook = getattr(controller, "recrawl_index", None) if last_modified else None
        observe_history = getattr(hook, "observe_history", None)
        ev_t, ev_v, ev_k, created_at = events
        ev_t_l, ev_v_l, ev_k_l = ev_t.tolist(), ev_v.tolist(), ev_k.tolist()
        created = created_at.tolist()
        # in-links, for "a new page modifies the pages that link to it"
        order = np.argsort(self.graph.indices, kind="stable")
        src = np.repeat(np.arange(n), np.diff(self.graph.indptr))[order]
        in_ptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(in_ptr, self.graph.indices.astype(np.int64) + 1, 1)
        in_ptr = np.cumsum(in_ptr)
        in_ptr_l, in_src = in_ptr.tolist(), src.tolist()

        rel, reach = self.rel_list, self.reach.tolist()
        exists = [c == 0.0 for c in created]
        version = [0] * n
        changed_at = list(created)  # the time of each page's current version (its Last-Modified)
        coll_version = [-1] * n  # -1: not in the collection
        S_V = math.fsum(r for r, e, h in zip(rel, exists, reach, strict=True) if e and h)
        S_C = 0.0
        S_CV = 0.0

        def fresh(i: int) -> bool:
            return coll_version[i] >= 0 and exists[i] and coll_version[i] == version[i]

        def modify(i: int, when: float) -> None:
            nonlocal S_CV
            if not exists[i]:
                return
            if fresh(i) and reach[i]:
                S_CV -= rel[i]
            version[i] += 1
            changed_at[i] = when

        controller.add_seeds(self.urls[s] for s in self.seeds)
        R: list[float] = []
        F: list[float] = []
        fetched: list[int] = []
        fetched_rel: list[float] = []
        first = recrawls = 0
        e = 0
        n_events = len(ev_t_l)
        index, urls = self.index, self.urls
        for t in range(1, steps + 1):
            now = float(t)
            while e < n_events and ev_t_l[e] <= now:
                i, kind, when = ev_v_l[e], ev_k_l[e], ev_t_l[e]
                e += 1
                if kind == MODIFY:
                    modify(i, when)
                elif kind == DELETE:
                    if exists[i]:
                        if fresh(i) and reach[i]:
                            S_CV -= rel[i]
                        exists[i] = False
                        if reach[i]:
                            S_V -= rel[i]
                else:  # create
                    exists[i] = True
                    if reach[i]:
                        S_V += rel[i]
                    for p in in_src[in_ptr_l[i] : in_ptr_l[i + 1]]:
                        modify(p, when)
            for url in controller.next_batch(m, now):
                i = index[url]
                r = rel[i]
                fetched.append(i)
                fetched_rel.append(r)
                kind_s: FetchKind
                if coll_version[i] < 0 and not exists[i]:
                    kind_s = "deleted"
                elif not exists[i]:
                    kind_s = "deleted"
                    if reach[i]:
                        S_C -= r
                    coll_version[i] = -1
                elif coll_version[i] < 0:
                    kind_s = "new"
                    first += 1
                    if observe_history is not None:  # the reference: the crawl's start, t = 0
                        observe_history(urls[i], now, now - changed_at[i])
                    if reach[i]:
                        S_C += r
                        S_CV += r
                    coll_version[i] = version[i]
                else:
                    recrawls += 1
                    if coll_version[i] != version[i]:
                        kind_s = "modified"
                        if reach[i]:
                            S_CV += r
                        coll_version[i] = version[i]
                    else:
                        kind_s = "unchanged"
                if kind_s == "deleted":
                    links: list[Discovered] = []
                else:
                    links = [d for d in self.links(i) if created[index[d.url]] <= now]
                controller.report(
                    FetchOutcome(
                        urls[i],
                        kind_s,
                        r if kind_s != "deleted" else 0.0,
                        links,
                    ),
                    now,
                )
            Rt = recall_from_sums(max(S_CV, 0.0), max(S_V, 0.0))
            Ft = freshness_from_sums(max(S_CV, 0.0), max(S_C, 0.0))
            R.append(Rt)
            F.append(Ft)
            if progress is not None:
                progress(1)
        M = [quality(a, b) for a, b in zip(R, F, strict=True)]
        return ReplayResult(
            R=R,
            F=F,
            M=M,
            fetched=fetched,
            fetched_relevance=fetched_rel,
            first_fetches=first,
            recrawls=recrawls,
            meta={"events": n_events},
        )
