"""The request controller's learning and state parameters."""

from __future__ import annotations

from dataclasses import dataclass

from oasis.robot.scheduling.state import STATE_NAMES


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
    # parent relevance of the document that first reaches it: start as fringe-greedy, learn from there) or
    # "anchor" (parent relevance + the link's anchor-text relevance: start as greedy-anchor)
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
        if self.prior not in ("zero", "parent", "anchor"):
            raise ValueError(f"prior must be 'zero', 'parent' or 'anchor', got {self.prior!r}")
        if self.rediscovery not in ("keep", "restate"):
            raise ValueError(f"rediscovery must be 'keep' or 'restate', got {self.rediscovery!r}")
        if self.recrawl_rekey < 1:
            raise ValueError("recrawl_rekey must be >= 1")


# The robot as shipped (issue 10 item 4; ``oasis replay --policies whittle`` and the live robot's default):
# the generalising state, the anchor prior (an unseen state starts as greedy-anchor's key) and the Eq. 10 step
# size alpha = 0.2, chosen on the training split of docs/replay.md "The shipped robot" (synthetic seeds 1-3,
# postgresql-doc-15) and never on the evaluation split.
SHIPPED = ControllerConfig(state="generalising", prior="anchor", alpha=0.2)
