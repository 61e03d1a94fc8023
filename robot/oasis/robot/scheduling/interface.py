"""The request controller's public interface (papers/004, "Request Controller Algorithm"): what the crawler,
the response processor, the offline replay and the freshness hooks exchange with it. Pure types, no logic.

The one definition of the kinds of fetch outcome, of a discovered link, of a fetch outcome, of a re-crawl
arm and its index hook, and of the :class:`RequestController` protocol the crawler depends on.

Contract: ``next_batch`` pops up to m URLs (fewer if the queue is empty or every host with work is blocked by
``host_ready``); each popped URL must later be passed to ``report`` or ``defer``, and so must each URL
``claim`` hands out (a fringe URL taken out of queue order). ``report`` of a URL the controller never handed
out is accepted (e.g. a redirect target) and learned from as well as possible.
``kind`` is what the fetch found: "new" on the first successful retrieval, "modified"/"unchanged" on a
re-crawl, "deleted" when the document is gone (404/410), "error" for a permanent failure (no learning).

``recrawl_index(arm, now) -> float`` (see :class:`RecrawlArm`) ranks retrieved documents for re-crawling;
``None`` means never re-crawl (the static web of the paper's experiment). Values <= 0 keep the arm passive.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, get_args

FetchKind = Literal["new", "modified", "unchanged", "deleted", "error"]
FETCH_KINDS: Final[tuple[FetchKind, ...]] = get_args(FetchKind)
NEW: Final = "new"  # first successful retrieval
MODIFIED: Final = "modified"  # a re-crawl found new content
UNCHANGED: Final = "unchanged"  # a re-crawl found the same content
DELETED: Final = "deleted"  # the document is gone (404 / 410, or a known page redirected away)
ERROR: Final = "error"  # a permanent failure: nothing to learn


@dataclass(frozen=True, slots=True)
class Discovered:
    """A link found on a retrieved page: the target URL, its anchor text and the anchor's relevance."""

    url: str
    anchor: str = ""
    anchor_relevance: float = 0.0

    def __init__(self, url: str, anchor: str = "", anchor_relevance: float = 0.0) -> None:
        # a frozen dataclass's own __init__ sets each field through object.__setattr__; calling the slots'
        # setters directly takes ~40% less (one Discovered per link of every fetched page)
        _set_url(self, url)
        _set_anchor(self, anchor)
        _set_anchor_relevance(self, anchor_relevance)


@dataclass(frozen=True, slots=True)
class FetchOutcome:
    """What one fetch of ``url`` found: its kind, the page's relevance and the links it holds."""

    url: str
    kind: FetchKind
    relevance: float
    links: Sequence[Discovered] = ()

    def __init__(self, url: str, kind: FetchKind, relevance: float, links: Sequence[Discovered] = ()) -> None:
        _set_outcome_url(self, url)  # (as Discovered.__init__)
        _set_kind(self, kind)
        _set_relevance(self, relevance)
        _set_links(self, links)


# the slots' setters of the two types built per fetch (frozen: nothing else sets them)
_set_url = Discovered.__dict__["url"].__set__
_set_anchor = Discovered.__dict__["anchor"].__set__
_set_anchor_relevance = Discovered.__dict__["anchor_relevance"].__set__
_set_outcome_url = FetchOutcome.__dict__["url"].__set__
_set_kind = FetchOutcome.__dict__["kind"].__set__
_set_relevance = FetchOutcome.__dict__["relevance"].__set__
_set_links = FetchOutcome.__dict__["links"].__set__


@dataclass(frozen=True, slots=True)
class RecrawlArm:
    """What the controller knows about a retrieved document, for a re-crawl index."""

    url: str
    relevance: float  # r_k(i), the last relevance score
    last_fetch: float  # time of the last fetch
    first_fetch: float  # time of the first retrieval
    fetches: int  # number of fetches so far (>= 1)
    changes: int  # fetches that found the document modified


class RecrawlIndex(Protocol):
    """``index(arm, now)``: the re-crawl value of a retrieved document, in the unit of a fringe fetch's
    value (relevance-weighted reward per step); <= 0 keeps the arm passive."""

    def __call__(self, arm: RecrawlArm, now: float, /) -> float: ...


class RequestController(Protocol):
    """Everything the crawler (and the replay) asks of a request controller."""

    name: str

    def add_seeds(self, urls: Iterable[str]) -> None: ...

    def next_batch(
        self, m: int, now: float, host_ready: Callable[[str], bool] | None = None
    ) -> list[str]: ...

    def report(self, outcome: FetchOutcome, now: float) -> list[str]:
        """Learn from a fetch; returns the URLs newly added to the frontier."""

    def defer(self, url: str) -> None:
        """Put a popped URL back (politeness, transient error)."""

    def claim(self, url: str) -> bool:
        """Hand out ``url`` now, out of queue order, if it waits in the fringe: in flight from here, as if
        ``next_batch`` had popped it (later ``report`` or ``defer``). False when it does not wait there
        (unknown, in flight, retrieved or gone). The crawler claims a redirect's target: it is fetched in
        its source's place, with the priority the source had, not the none a link-less hop gives it."""

    def frontier_size(self) -> int:
        """Fringe documents queued (not in flight)."""

    def evict_fringe(self, keep: int) -> int:
        """Forget the fringe documents ranked below the first ``keep``; how many (a bounded frontier)."""

    def recrawl_size(self) -> int:
        """Retrieved documents queued for re-crawl."""

    def in_flight(self) -> int:
        """Popped, neither reported nor deferred."""

    def recrawling(self) -> bool:
        """True when retrieved documents come due again (a re-crawl index is set)."""

    def fringe_relevance(self) -> float:
        """Sum of the estimated relevance (the discovering parent's relevance) of the documents located but
        not yet retrieved (queued or in flight): the denominator's unfetched part of a recall estimate."""

    def estimated_relevance(self, url: str) -> float | None:
        """The term of ``fringe_relevance`` of a located, not yet retrieved ``url`` (queued or in flight);
        None otherwise. Asked before ``report`` of a first retrieval, it is what the estimate said of the
        page, beside what its retrieval found (:class:`oasis.robot.recall.FringeCalibration`)."""

    def state_dict(self) -> dict[str, Any]:
        """Full checkpoint (documents, queues, Q-table), JSON-safe."""

    def load_state(self, state: dict[str, Any]) -> None: ...

    def save_q(self, path: str | os.PathLike[str]) -> None:
        """Write the learned Q-table (Whittle only; others raise NotImplementedError)."""

    def load_q(self, path: str | os.PathLike[str]) -> None: ...
