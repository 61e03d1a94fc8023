"""An indexed, politeness-aware max-priority queue of integer items.

Items are small ints (the controller interns URLs, or groups of URLs, to ints). Each item belongs to a host
(an int). Operations are O(log n) amortised:

* ``push(item, priority, host)`` inserts or re-prioritises an item,
* ``remove(item)`` forgets it,
* ``pop(host_ready)`` returns the item of highest priority whose host is ready.

Layout: one binary heap of ``(-priority, seq, item)`` per host, and one heap of hosts keyed by their best
item. Updates use lazy invalidation: a new entry is pushed and the item's current ``seq`` is recorded; stale
entries are skipped when they surface and the heaps are compacted when garbage exceeds the live entries.
A blocked host is looked at once per ``pop`` sweep -- its items are never scanned. Ties go to the earliest
pushed item (FIFO), so equal priorities give breadth-first order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator

HostReady = Callable[[int], bool]


class Frontier:
    __slots__ = ("_garbage", "_host_heaps", "_host_of", "_host_top", "_hosts", "_live", "_seq")

    def __init__(self) -> None:
        self._seq = 0
        self._live: dict[int, tuple[float, int]] = {}  # item -> (priority, seq of its valid entry)
        self._host_of: dict[int, int] = {}
        self._host_heaps: dict[int, list[tuple[float, int, int]]] = {}
        self._hosts: list[tuple[float, int, int]] = []  # (-best priority, seq of that entry, host)
        self._host_top: dict[int, int] = {}  # host -> seq of its valid entry in _hosts
        self._garbage = 0

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, item: object) -> bool:
        return item in self._live

    def __iter__(self) -> Iterator[int]:
        return iter(self._live)

    def priority(self, item: int) -> float:
        return self._live[item][0]

    def host(self, item: int) -> int:
        return self._host_of[item]

    def ordered(self) -> list[int]:
        """Live items in the order ``pop`` would return them with every host ready (O(n log n))."""
        return [item for _, _, item in sorted((-p, s, i) for i, (p, s) in self._live.items())]

    def push(self, item: int, priority: float, host: int = 0) -> None:
        """Insert ``item`` or change its priority (a host change is honoured too)."""
        old = self._live.get(item)
        if old is not None:
            if old[0] == priority and self._host_of[item] == host:
                return
            self._garbage += 1
        self._seq += 1
        seq = self._seq
        self._live[item] = (priority, seq)
        self._host_of[item] = host
        heap = self._host_heaps.get(host)
        if heap is None:
            heap = []
            self._host_heaps[host] = heap
        entry = (-priority, seq, item)
        heapq.heappush(heap, entry)
        if heap[0] is entry:
            self._announce(host, -priority, seq)
        self._maybe_compact()

    def remove(self, item: int) -> bool:
        if self._live.pop(item, None) is None:
            return False
        del self._host_of[item]
        self._garbage += 1
        self._maybe_compact()
        return True

    def _walk_ready(
        self, host_ready: HostReady | None, passed: list[tuple[float, int, int]]
    ) -> tuple[tuple[float, int, int], tuple[float, int, int], int] | None:
        """The best item whose host is ready, walking the host heap in order and fixing stale or outdated
        announcements on the way: ``(its host-heap entry, popped; its top item entry, host)``. The entries
        of hosts passed over as not ready are appended to ``passed``: the caller pushes them back."""
        hosts = self._hosts
        while hosts:
            entry = heapq.heappop(hosts)
            _neg, seq, host = entry
            if self._host_top.get(host) != seq:
                continue  # stale host entry
            heap = self._host_heaps[host]
            self._clean_top(heap)
            if not heap:
                del self._host_top[host]
                del self._host_heaps[host]
                continue
            top = heap[0]
            if top[1] != seq:  # the host's best changed since it was announced: re-announce
                self._host_top[host] = top[1]
                heapq.heappush(hosts, (top[0], top[1], host))
                continue
            if host_ready is not None and not host_ready(host):
                passed.append(entry)
                continue
            return entry, top, host
        return None

    def pop(self, host_ready: HostReady | None = None) -> int | None:
        """Remove and return the best item whose host is ready (None if there is none)."""
        blocked: list[tuple[float, int, int]] = []
        try:
            found = self._walk_ready(host_ready, blocked)
            if found is None:
                return None
            _entry, top, host = found
            heap = self._host_heaps[host]
            heapq.heappop(heap)
            item = top[2]
            del self._live[item]
            del self._host_of[item]
            self._clean_top(heap)
            if heap:
                self._announce(host, heap[0][0], heap[0][1])
            else:
                del self._host_top[host]
                del self._host_heaps[host]
            return item
        finally:
            for entry in blocked:
                heapq.heappush(self._hosts, entry)

    def peek(self) -> tuple[int, float] | None:
        """The best item regardless of host readiness, without removing it."""
        while self._hosts:
            _neg, seq, host = self._hosts[0]
            if self._host_top.get(host) != seq:
                heapq.heappop(self._hosts)
                continue
            heap = self._host_heaps[host]
            self._clean_top(heap)
            if not heap:
                heapq.heappop(self._hosts)
                del self._host_top[host]
                del self._host_heaps[host]
                continue
            if heap[0][1] != seq:
                heapq.heappop(self._hosts)
                self._announce(host, heap[0][0], heap[0][1])
                continue
            return heap[0][2], -heap[0][0]
        return None

    # -- internals -------------------------------------------------------------------------------------

    def _announce(self, host: int, neg: float, seq: int) -> None:
        self._host_top[host] = seq
        heapq.heappush(self._hosts, (neg, seq, host))

    def _clean_top(self, heap: list[tuple[float, int, int]]) -> None:
        live = self._live
        while heap:
            _, seq, item = heap[0]
            cur = live.get(item)
            if cur is not None and cur[1] == seq:
                return
            heapq.heappop(heap)
            self._garbage -= 1

    def _maybe_compact(self) -> None:
        if self._garbage > 1024 and self._garbage > len(self._live):
            self.compact()

    def compact(self) -> None:
        """Drop stale entries from every heap (O(n))."""
        heaps: dict[int, list[tuple[float, int, int]]] = {}
        for item, (priority, seq) in self._live.items():
            heaps.setdefault(self._host_of[item], []).append((-priority, seq, item))
        self._hosts = []
        self._host_top = {}
        for host, heap in heaps.items():
            heapq.heapify(heap)
            self._host_top[host] = heap[0][1]
            self._hosts.append((heap[0][0], heap[0][1], host))
        heapq.heapify(self._hosts)
        self._host_heaps = heaps
        self._garbage = 0
