"""The Whittle controller's fringe, grouped by local state (papers/004: every fringe arm in one state shares
the index v(x) of Eq. 9).

* :class:`GroupQueue` -- the priority queue over groups: a lazy max-heap of ``(-v, seq, group)`` with, per
  group, the seq and v of its valid entry (seq 0: not queued). Ties go to the earliest queued group (FIFO);
  re-queueing a group with an unchanged v keeps its place. The same order as a
  :class:`~oasis.robot.scheduling.frontier.Frontier` on one host, without its per-host layer and dicts.
* :class:`StateGroups` -- the documents of each group: one heap per host, ordered by a tie-break key
  (parent relevance + anchor relevance, then queue order), served round robin over the group's hosts.
"""

from __future__ import annotations

import heapq
import struct
from array import array
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from oasis.robot.scheduling.documents import FRINGE, DocumentTable

HostReady = Callable[[int], bool]


def replace_top(heap: list[Any], entry: Any) -> None:
    """``heapq.heapreplace(heap, entry)`` without the sift when ``entry`` still belongs on top (a group served
    or re-keyed is re-queued with the same or a close index: the common case). The top of a binary heap only
    has to be below its two children; heapreplace always walks down to a leaf and back up, a cache miss per
    level once the queue holds 10^5 groups (the parent state at 10^6 queued URLs)."""
    n = len(heap)
    if (n < 2 or entry < heap[1]) and (n < 3 or entry < heap[2]):
        heap[0] = entry
    else:
        heapq.heapreplace(heap, entry)


class GroupQueue:
    """Indexed lazy max-priority queue of small-int items (groups).

    A heap entry is one int that orders as the tuple ``(-key, seq, item)`` (:func:`entry_key`; the host heaps
    use the same form): a comparison reads one object instead of a tuple and its float, which matters once
    the heap holds 10^5 groups (the parent state at 10^6 queued URLs), where each sift is a cache miss per
    level."""

    __slots__ = ("_ent", "_heap", "_hseq", "_key", "_live")

    def __init__(self) -> None:
        self._heap: list[int] = []
        # lists, not typed arrays: a read returns the stored int / float instead of boxing a new one (a few
        # reads per decision; one slot per state group, so the size does not matter)
        self._ent: list[int] = []  # item -> its valid heap entry (0: not queued; an entry is never 0)
        self._key: list[float] = []  # item -> priority of its valid entry
        self._hseq = 0
        self._live = 0  # queued items

    def __len__(self) -> int:
        return self._live

    def __contains__(self, item: int) -> bool:
        return item < len(self._ent) and self._ent[item] != 0

    def push(self, item: int, key: float) -> None:
        """Queue ``item`` with priority ``key`` (or re-key it; an unchanged key keeps its place)."""
        ents = self._ent
        try:
            old = ents[item]
        except IndexError:  # a new item (items are small ints, given out in order): its slots
            self._grow(item)
            old = 0
        if old:
            if self._key[item] == key:
                return
        else:
            self._live += 1
        self._hseq = seq = self._hseq + 1
        self._key[item] = key
        # entry_key(key, seq, item), written out
        bits = _from_bytes(_PACK(-key + 0.0), "big", signed=True)
        if bits < 0:
            bits ^= _LOW63
        ents[item] = entry = (bits + _HIGH) << 96 | seq << 32 | item
        heap = self._heap
        if old and heap[0] == old:
            # the item's valid entry is the top (the group just served, re-keyed by its Q-update): replace it
            # in place instead of leaving a stale entry to pop later; replace_top(heap, entry), written out
            n = len(heap)
            if (n < 2 or entry < heap[1]) and (n < 3 or entry < heap[2]):
                heap[0] = entry
            else:
                heapq.heapreplace(heap, entry)
            return
        heapq.heappush(heap, entry)
        if len(heap) > 2 * self._live + 1024:  # mostly stale entries: drop them (in place, O(heap))
            heap[:] = [e for e in heap if ents[e & DOC_MASK] == e]
            heapq.heapify(heap)

    def _grow(self, item: int) -> None:
        """Slots (not queued) up to ``item`` and some ahead (one growth per many new items)."""
        extra = max(item + 1 - len(self._ent), 64 + (len(self._ent) >> 3))
        self._ent += [0] * extra
        self._key += [0.0] * extra

    def discard(self, item: int) -> None:
        """Forget ``item`` (its heap entry goes stale)."""
        if item < len(self._ent) and self._ent[item]:
            self._ent[item] = 0
            self._live -= 1

    def top(self) -> int | None:
        """The best queued item (still queued), dropping stale entries above it."""
        heap, ents = self._heap, self._ent
        while heap:
            entry = heap[0]
            item = entry & DOC_MASK
            if ents[item] == entry:
                return item
            heapq.heappop(heap)
        return None

    def peek_key(self) -> float | None:
        """The priority of the best queued item."""
        item = self.top()
        return None if item is None else self._key[item]

    def requeue_top(self, key: float) -> None:
        """Give the item of the heap's top entry a fresh entry with ``key``, behind any equal keys (one sift:
        the entry is replaced in place). The top entry must be the one :meth:`top` returned; the item may
        have been discarded meanwhile."""
        heap = self._heap
        item = heap[0] & DOC_MASK
        if not self._ent[item]:
            self._live += 1
        self._hseq += 1
        self._key[item] = key
        self._ent[item] = entry = entry_key(key, self._hseq, item)
        replace_top(heap, entry)

    def drop_top(self) -> None:
        """Remove the heap's top entry (the one :meth:`top` returned); its item is no longer queued."""
        item = heapq.heappop(self._heap) & DOC_MASK
        self.discard(item)

    def ordered(self) -> list[int]:
        """Queued items in pop order (O(n log n))."""
        return [entry & DOC_MASK for entry in sorted(e for e in self._ent if e)]


# A document's place in its host's heap: one int that orders as the tuple (-tie-break key, seq, doc) would
# (see entry_key), so that a heap comparison reads one object, not a tuple and the float inside it
Entries = int | list[int]  # one entry, or a heap of them (a list), on one host
# a group's entries: None (none), one host's Entries, or host -> Entries in round-robin order (several hosts)
GroupEntries = Entries | OrderedDict[int, Entries] | None


_PACK = struct.Struct(">d").pack
_LOW63 = (1 << 63) - 1
_HIGH = 1 << 63
_from_bytes = int.from_bytes
DOC_MASK = (1 << 32) - 1  # an entry's low 32 bits: its document


def entry_key(tie: float, seq: int, doc: int) -> int:
    """The heap entry of ``doc`` with tie-break key ``tie``, queued as number ``seq``: an int that orders as
    the tuple ``(-tie, seq, doc)`` (ties by queue order; seq is unique). The IEEE bits of ``-tie`` as a signed
    64-bit int, with the 63 low bits of a negative one flipped, order as the floats do (-0.0 counts as 0.0;
    a NaN tie, which no order can hold, is refused earlier by the controller), shifted above a 64-bit seq
    and a 32-bit document. A heap of these ints makes the same moves as a heap of those tuples; each
    comparison reads one int instead of two tuples and their floats (cache misses at 10^6 queued URLs)."""
    bits = int.from_bytes(_PACK(-tie + 0.0), "big", signed=True)
    if bits < 0:
        bits ^= _LOW63
    return (bits + (1 << 63)) << 96 | seq << 32 | doc


class StateGroups:
    """Fringe documents by state: ``add``, ``take`` (round robin over a group's ready hosts) and ``remove``.

    A document's current state is ``states[doc]`` (a table column); a host heap entry is stale once its
    document has left the fringe or changed state, and is skipped when it surfaces.

    A group holds as few containers as its hosts need: one entry (an int) for a single document, a heap (a
    list) for documents on one host, and a host -> entry-or-heap ``OrderedDict`` only once a second host
    appears. The order is that of one ``OrderedDict`` of heaps per group (tests/test_scheduling_fastpaths.py
    checks it against that plain form): the forms save the garbage collector's work, which the parent state
    pays per fetched page (at 10^6 queued URLs a dict and ten lists per group were 1.2 million tracked
    objects, and a full collection of them took ~0.5 s of CPU once per ~70,000 decisions)."""

    __slots__ = ("_groups", "_states", "_status", "_table", "_tie", "ids", "live", "size", "state")

    def __init__(self, table: DocumentTable, states: list[str | None], tie: array[Any]) -> None:
        self._table = table
        self._status = table.status
        self._states = states
        self._tie = tie
        self.ids: dict[str, int] = {}  # state -> group
        self.state: list[str] = []  # group -> its state
        self.live: list[int] = []  # group -> fringe documents in it
        self._groups: list[GroupEntries] = []  # group -> its entries (forms above)
        self.size = 0  # fringe documents in all groups

    def states(self) -> list[str]:
        return list(self.ids)

    def add(self, doc: int, state: str, new: bool = True) -> int:
        """Put fringe document ``doc`` (``states[doc] == state``) in its group with its tie-break key; returns
        the group. The caller queues the group when it was empty before (``live[group] == 1``). ``new=False``:
        a second, better entry of a document already in the group (the old one is skipped once the document
        is gone)."""
        gid = self.ids.get(state)
        if gid is None:
            gid = len(self.state)
            self.ids[state] = gid
            self.state.append(state)
            self.live.append(0)
            self._groups.append(None)
        table = self._table
        table.seq = seq = table.seq + 1
        # entry_key(self._tie[doc], seq, doc), written out (once per discovered link)
        bits = _from_bytes(_PACK(-self._tie[doc] + 0.0), "big", signed=True)
        if bits < 0:
            bits ^= _LOW63
        entry = (bits + _HIGH) << 96 | seq << 32 | doc
        groups = self._groups
        g = groups[gid]
        if g is None:
            groups[gid] = entry
        else:
            host_id = table.host_id
            h = host_id[doc]
            if isinstance(g, int):
                h0 = host_id[g & DOC_MASK]
                if h0 == h:  # heapq.heappush([g], entry)
                    groups[gid] = [g, entry] if g < entry else [entry, g]
                else:  # a second host: the host -> entries form, the first host first
                    groups[gid] = OrderedDict(((h0, g), (h, entry)))
            elif isinstance(g, list):  # (never empty: an emptied heap is replaced by None)
                if host_id[g[0] & DOC_MASK] == h:
                    heapq.heappush(g, entry)
                else:
                    groups[gid] = OrderedDict(((host_id[g[0] & DOC_MASK], g), (h, entry)))
            else:
                cur = g.get(h)
                if cur is None:
                    g[h] = entry
                elif isinstance(cur, int):
                    g[h] = [cur, entry] if cur < entry else [entry, cur]
                else:
                    heapq.heappush(cur, entry)
        if new:
            self.live[gid] += 1
            self.size += 1
        return gid

    def leave(self, gid: int) -> bool:
        """One document left group ``gid``; True when the group became empty (the caller unqueues it)."""
        live = self.live[gid] - 1
        self.live[gid] = live
        self.size -= 1
        if live == 0:
            self._groups[gid] = None  # its stale entries go
            return True
        return False

    def _single(self, gid: int, host_ready: HostReady | None) -> int | None:
        """:meth:`take` for a group on one host (an entry or a heap)."""
        groups, status, states, want = self._groups, self._status, self._states, self.state[gid]
        g = groups[gid]
        if isinstance(g, int):
            doc = g & DOC_MASK
            if host_ready is not None and not host_ready(self._table.host_id[doc]):
                return None
            groups[gid] = None
            return doc if status[doc] == FRINGE and states[doc] == want else None
        assert isinstance(g, list)
        if host_ready is not None and not host_ready(self._table.host_id[g[0] & DOC_MASK]):
            return None
        while g:
            doc = heapq.heappop(g) & DOC_MASK
            if status[doc] == FRINGE and states[doc] == want:
                if not g:
                    groups[gid] = None
                return doc
        groups[gid] = None
        return None

    def take(self, gid: int, host_ready: HostReady | None) -> int | None:
        """Remove and return the next fringe document of group ``gid`` on a ready host (round robin over the
        group's hosts: a host that served moves to the end); None if every host with work is blocked. The
        caller calls :meth:`leave` for the returned document."""
        hosts = self._groups[gid]
        if hosts is None:
            return None
        if not isinstance(hosts, OrderedDict):
            return self._single(gid, host_ready)
        status, states, want = self._status, self._states, self.state[gid]
        # without host_ready, always the first host (no copy of the group's host list)
        order = None if host_ready is None else iter(list(hosts))
        while True:
            if order is None:
                if not hosts:
                    return None
                h = next(iter(hosts))
            else:
                h = next(order, -1)
                if h < 0:
                    return None
                if not host_ready(h):  # type: ignore[misc]
                    continue
            heap = hosts.pop(h)
            if isinstance(heap, int):
                doc = heap & DOC_MASK
                if status[doc] == FRINGE and states[doc] == want:
                    return doc
                continue
            while heap:
                doc = heapq.heappop(heap) & DOC_MASK
                if status[doc] == FRINGE and states[doc] == want:
                    if heap:
                        hosts[h] = heap
                    return doc
            # only stale entries were left for this host: it stays out of the dict

    def hosts(self, gid: int) -> dict[int, list[int]]:
        """Group ``gid``'s entries as host -> heap, hosts in round-robin order (the plain form; a copy)."""
        g = self._groups[gid]
        if g is None:
            return {}
        table = self._table
        if isinstance(g, OrderedDict):
            return {h: [e] if isinstance(e, int) else list(e) for h, e in g.items()}
        if isinstance(g, int):
            return {table.host_id[g & DOC_MASK]: [g]}
        return {table.host_id[g[0] & DOC_MASK]: list(g)}

    def docs(self, gid: int) -> list[int]:
        """The fringe documents of group ``gid``, host by host in heap order (a re-stated document may have
        two entries: its best one counts)."""
        status, states, want = self._status, self._states, self.state[gid]
        entries = [e for heap in self.hosts(gid).values() for e in sorted(heap)]
        docs = (e & DOC_MASK for e in entries)
        return list(dict.fromkeys(d for d in docs if status[d] == FRINGE and states[d] == want))


def pop_document(
    queue: GroupQueue, groups: StateGroups, host_ready: HostReady | None, index: Callable[[str], float]
) -> int | None:
    """The next fringe document to fetch, from the best queued group that has one on a ready host (None if
    there is none). The document leaves its group; the group goes back in the queue with ``index(state)``,
    behind the groups of equal index, or out of it once empty. A group whose hosts are all blocked right
    now is set aside for this call and queued again with ``index(state)`` at the end.

    This is ``queue.top()``, ``groups.take(group, host_ready)``, ``groups.leave(group)`` and
    ``queue.requeue_top(...)`` / ``queue.drop_top()`` in one frame (the controller calls it once per
    decision): the queue steps and, without ``host_ready``, the walk of ``take`` are inlined.
    tests/test_scheduling_fastpaths.py checks it against that composition of the plain methods.
    """
    heap, ents = queue._heap, queue._ent
    live, entries_of = groups.live, groups._groups
    status, states = groups._status, groups._states
    aside: list[int] | None = None  # (allocated only when a group is set aside)
    found: int | None = None
    while heap:
        top = heap[0]
        gid = top & DOC_MASK
        if ents[gid] != top:  # a stale entry above the best group (as top() drops it)
            heapq.heappop(heap)
            continue
        picked: int | None = None
        if host_ready is None:  # take(gid, None): the group's first host, stale entries skipped
            g = entries_of[gid]
            if isinstance(g, int):  # one document
                entries_of[gid] = None
                doc = g & DOC_MASK
                if status[doc] == FRINGE and states[doc] == groups.state[gid]:
                    picked = doc
            elif isinstance(g, list):  # one host
                want = groups.state[gid]
                while g:
                    doc = heapq.heappop(g) & DOC_MASK
                    if status[doc] == FRINGE and states[doc] == want:
                        picked = doc
                        break
                if not g:
                    entries_of[gid] = None
            elif g:  # several hosts
                want = groups.state[gid]
                while g and picked is None:
                    h, entries = g.popitem(False)  # the first host (round robin)
                    if isinstance(entries, int):
                        doc = entries & DOC_MASK
                        if status[doc] == FRINGE and states[doc] == want:
                            picked = doc
                        continue
                    while entries:
                        doc = heapq.heappop(entries) & DOC_MASK
                        if status[doc] == FRINGE and states[doc] == want:
                            if entries:
                                g[h] = entries
                            picked = doc
                            break
        else:
            picked = groups.take(gid, host_ready)
        if picked is None:  # drop_top(): every host of this state is blocked (or none has work)
            heapq.heappop(heap)
            ents[gid] = 0
            queue._live -= 1
            if live[gid] > 0:
                if aside is None:
                    aside = []
                aside.append(gid)
            continue
        n = live[gid] - 1  # leave(gid)
        live[gid] = n
        groups.size -= 1
        if n == 0:  # the group is empty: drop its stale entries and drop_top()
            entries_of[gid] = None
            heapq.heappop(heap)
            ents[gid] = 0
            queue._live -= 1
        else:  # requeue_top(index(state)): a fresh entry behind the equal keys, replacing the top in place
            key = index(groups.state[gid])
            queue._hseq = hseq = queue._hseq + 1
            keys = queue._key
            if key == keys[gid]:  # (the usual case) the top entry's key bits serve: entry_key(key, hseq, gid)
                entry = top >> 96 << 96 | hseq << 32 | gid
            else:
                bits = _from_bytes(_PACK(-key + 0.0), "big", signed=True)
                if bits < 0:
                    bits ^= _LOW63
                entry = (bits + _HIGH) << 96 | hseq << 32 | gid
            keys[gid] = key
            ents[gid] = entry  # replace_top(heap, entry):
            n = len(heap)
            if (n < 2 or entry < heap[1]) and (n < 3 or entry < heap[2]):
                heap[0] = entry
            else:
                heapq.heapreplace(heap, entry)
        found = picked
        break
    if aside is not None:
        for gid in aside:
            queue.push(gid, index(groups.state[gid]))
    return found
