"""Local state x of a fringe document, built only from what is known before fetching it (papers/004,
"Request Controller": each document's local state is drawn from its neighbourhood of retrieved pages).

Extractors map a :class:`DiscoveryContext` to a string key (string keys keep Q-tables portable across
crawls and JSON-serialisable):

* ``parent`` -- the paper's choice: the identity (URL) of the document that discovered it.
* ``generalising`` -- features that transfer between graphs and topics: discretised parent relevance,
  anchor-text relevance and depth (and, optionally, the host).
* ``url`` -- the document's own URL (known before the fetch); it memorises a graph across traversals and
  is useful as an upper reference for what tabular learning can do on a fixed graph.
* ``hybrid`` -- the URL's own entry once the Q-table has one, else the generalising features (the
  controller learns both from every fetch): generalises on a first traversal, memorises on later ones.

Select by name with :func:`make_state_extractor`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

SEED_STATE = "seed"


@dataclass(frozen=True, slots=True)
class DiscoveryContext:
    """What the robot knows about a fringe document when it is discovered."""

    url: str
    parent_url: str | None  # None for seeds
    parent_relevance: float = 0.0
    anchor_relevance: float = 0.0
    depth: int = 0  # link distance from a seed along the discovery path
    host: str = ""


class StateExtractor(Protocol):
    @property
    def name(self) -> str: ...

    def __call__(self, ctx: DiscoveryContext) -> str: ...


def relevance_bin(r: float, bins: int) -> int:
    """Bin of a relevance score in [0, 1]; square-root spacing, because cosine scores crowd near 0."""
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    r = min(max(r, 0.0), 1.0)
    return min(int(math.sqrt(r) * bins), bins - 1)


@dataclass(frozen=True, slots=True)
class ParentIdentityState:
    """The paper's local state: the identity of the document responsible for the discovery."""

    name: str = "parent"

    def __call__(self, ctx: DiscoveryContext) -> str:
        if ctx.parent_url is None:
            return SEED_STATE
        return "p:" + ctx.parent_url


@dataclass(frozen=True, slots=True)
class UrlIdentityState:
    """The document's own URL: a per-document table (memorises one graph)."""

    name: str = "url"

    def __call__(self, ctx: DiscoveryContext) -> str:
        return "u:" + ctx.url


@dataclass(frozen=True, slots=True)
class GeneralisingState:
    """Discretised parent relevance, anchor relevance and depth (and optionally the host)."""

    relevance_bins: int = 8
    anchor_bins: int = 4
    max_depth: int = 6
    use_host: bool = False
    name: str = "generalising"

    def __post_init__(self) -> None:
        if self.relevance_bins < 1 or self.anchor_bins < 1 or self.max_depth < 0:
            raise ValueError("relevance_bins and anchor_bins must be >= 1 and max_depth >= 0")

    def __call__(self, ctx: DiscoveryContext) -> str:
        if ctx.parent_url is None:
            return SEED_STATE
        key = generalising_key(
            relevance_bin(ctx.parent_relevance, self.relevance_bins),
            relevance_bin(ctx.anchor_relevance, self.anchor_bins),
            min(ctx.depth, self.max_depth),
        )
        if self.use_host:
            key += "|h" + ctx.host
        return key

    def keyer(self) -> Callable[[float, float, int], str]:
        """A fast equivalent of ``self(ctx)`` for a discovered (non-seed) document without the host part:
        ``key(parent_relevance, anchor_relevance, depth)``. The few distinct keys are built once and shared
        (one string object per state instead of one per queued document)."""
        if self.use_host:
            raise ValueError("keyer() leaves out the host; call the extractor for generalising-host")
        rbins, abins, max_depth = self.relevance_bins, self.anchor_bins, self.max_depth
        rtop, atop, cells = rbins - 1, abins - 1, max_depth + 1
        sqrt = math.sqrt
        size = rbins * abins * cells
        table: list[str | None] = [None] * (size if size <= 1 << 16 else 0)

        def key(parent_relevance: float, anchor_relevance: float, depth: int) -> str:
            # relevance_bin and min(depth, max_depth), inlined: the clamp to [0, 1] is skipped where it would
            # return its argument; the bin is capped as min(int(...), bins - 1) does
            if 0.0 <= parent_relevance <= 1.0:
                pr = int(sqrt(parent_relevance) * rbins)
            else:
                pr = int(sqrt(min(max(parent_relevance, 0.0), 1.0)) * rbins)
            if pr > rtop:
                pr = rtop
            if 0.0 <= anchor_relevance <= 1.0:
                ar = int(sqrt(anchor_relevance) * abins)
            else:
                ar = int(sqrt(min(max(anchor_relevance, 0.0), 1.0)) * abins)
            if ar > atop:
                ar = atop
            d = depth if depth < max_depth else max_depth
            if d < 0 or not table:
                return generalising_key(pr, ar, d)
            cell = (pr * abins + ar) * cells + d
            found = table[cell]
            if found is None:
                found = table[cell] = generalising_key(pr, ar, d)
            return found

        return key


def generalising_key(parent_bin: int, anchor_bin: int, depth: int) -> str:
    """The state key of the generalising representation (without the host part)."""
    return f"g:pr{parent_bin}|ar{anchor_bin}|d{depth}"


STATE_NAMES = ("parent", "generalising", "generalising-host", "url", "hybrid")


def make_state_extractor(
    name: str, *, relevance_bins: int = 8, anchor_bins: int = 4, max_depth: int = 6
) -> StateExtractor:
    """Build a state extractor by name: one of :data:`STATE_NAMES`."""
    if name == "parent":
        return ParentIdentityState()
    if name == "url":
        return UrlIdentityState()
    if name in ("generalising", "generalising-host", "hybrid"):
        return GeneralisingState(
            relevance_bins=relevance_bins,
            anchor_bins=anchor_bins,
            max_depth=max_depth,
            use_host=name == "generalising-host",
        )
    raise ValueError(f"unknown state representation {name!r}; choose one of {STATE_NAMES}")
