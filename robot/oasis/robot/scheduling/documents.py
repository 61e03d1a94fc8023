"""The request controller's document table: every document the robot knows, interned to a small int, with
its facts in compact per-document columns (the arms of papers/004's restless bandit).

Columns are typed arrays (8 or 4 bytes per document) allocated ahead in zeroed blocks, so their length is the
capacity; documents are ``0 .. len(table) - 1``. A policy that needs columns of its own registers them with
:meth:`DocumentTable.column` / :meth:`DocumentTable.list_column` and they grow with the table.

The table also keeps the sum of the estimated relevance (the discovering parent's relevance) of the
documents located but not yet retrieved, updated as documents enter and leave that set.
"""

from __future__ import annotations

import re
from array import array
from typing import Any

# document status codes
FRINGE, FLIGHT, RETRIEVED, RECRAWL_FLIGHT, GONE = 1, 2, 3, 4, 5
# status sets for membership tests on the hot path (a constant set: no tuple built per test)
UNFETCHED = frozenset((FRINGE, FLIGHT))  # located, not retrieved yet
STATUS_NAMES = {
    FRINGE: "fringe",
    FLIGHT: "fringe",
    RETRIEVED: "retrieved",
    RECRAWL_FLIGHT: "retrieved",
    GONE: "gone",
}

_HOST_SEARCH = re.compile(r"//([^/?#]*)").search


def host_of(url: str) -> str:
    """``host[:port]`` of an absolute URL (the unit of politeness): what follows the first ``//`` up to the
    first ``/``, ``?`` or ``#``; "" without ``//``. A fast split for canonical URLs."""
    found = _HOST_SEARCH(url)
    return found.group(1) if found is not None else ""


class DocumentTable:
    """URL interning, host interning and the per-document columns."""

    __slots__ = (
        "_arrays",
        "_cap",
        "_lists",
        "changes",
        "depth",
        "fetches",
        "first_fetch",
        "host_id",
        "host_ids",
        "hosts",
        "ids",
        "key",
        "last_fetch",
        "parent_rel",
        "rel",
        "seq",
        "status",
        "unfetched_rel",
        "urls",
    )

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.urls: list[str] = []
        self.status = bytearray()
        self.hosts: list[str] = []
        self.host_ids: dict[str, int] = {}
        self._cap = 0
        self.host_id = array("i")
        self.rel = array("d")  # r_k(i): last relevance score (0 until retrieved)
        self.parent_rel = array("d")  # relevance of the discovering page (the estimate of r before a fetch)
        self.depth = array("i")
        self.key = array("d")  # priority key for baseline policies
        self.fetches = array("i")
        self.changes = array("i")
        self.first_fetch = array("d")
        self.last_fetch = array("d")
        self._arrays: list[array[Any]] = [
            self.host_id,
            self.rel,
            self.parent_rel,
            self.depth,
            self.key,
            self.fetches,
            self.changes,
            self.first_fetch,
            self.last_fetch,
        ]
        self._lists: list[list[Any]] = []
        self.seq = 0  # queue-order counter of the policies (FIFO tie-breaks), checkpointed
        # sum of parent_rel over FRINGE and FLIGHT documents (the controller takes a document out when it
        # reports the fetch)
        self.unfetched_rel = 0.0

    def __len__(self) -> int:
        return len(self.urls)

    def column(self, typecode: str) -> array[Any]:
        """A new zeroed per-document array column that grows with the table."""
        col: array[Any] = array(typecode)
        col.frombytes(bytes(self._cap * col.itemsize))
        self._arrays.append(col)
        return col

    def list_column(self) -> list[Any]:
        """A new per-document list column (None until set) that grows with the table."""
        col: list[Any] = [None] * self._cap
        self._lists.append(col)
        return col

    def host_index(self, host: str) -> int:
        hid = self.host_ids.get(host)
        if hid is None:
            hid = len(self.hosts)
            self.host_ids[host] = hid
            self.hosts.append(host)
        return hid

    def add(self, url: str, parent_rel: float, depth: int, status: int) -> int:
        """Intern a new document; r_k, key, fetches, changes, first/last fetch start at 0."""
        doc = len(self.urls)
        if doc == self._cap:
            self._grow(max(1024, doc >> 3))
        self.ids[url] = doc
        self.urls.append(url)
        self.status.append(status)
        found = _HOST_SEARCH(url)  # host_of(url), inlined (a test checks the two agree)
        host = found.group(1) if found is not None else ""
        hid = self.host_ids.get(host)
        self.host_id[doc] = hid if hid is not None else self.host_index(host)
        self.parent_rel[doc] = parent_rel
        self.depth[doc] = depth
        if status in UNFETCHED:
            self.unfetched_rel += parent_rel
        return doc

    def _grow(self, extra: int) -> None:
        """Add ``extra`` zeroed slots to every per-document column."""
        for col in self._arrays:
            col.frombytes(bytes(extra * col.itemsize))
        pad = [None] * extra
        for lcol in self._lists:
            lcol.extend(pad)
        self._cap += extra

    def set_parent_rel(self, doc: int, value: float) -> None:
        """Change the estimated relevance of a document that is not retrieved yet."""
        self.unfetched_rel += value - self.parent_rel[doc]
        self.parent_rel[doc] = value

    def row(self, doc: int) -> list[Any]:
        """The checkpoint row of a document (in-flight documents are saved as queued)."""
        st = self.status[doc]
        st = FRINGE if st == FLIGHT else (RETRIEVED if st == RECRAWL_FLIGHT else st)
        return [
            self.urls[doc],
            st,
            self.rel[doc],
            self.parent_rel[doc],
            self.depth[doc],
            self.key[doc],
            self.fetches[doc],
            self.changes[doc],
            self.first_fetch[doc],
            self.last_fetch[doc],
        ]
