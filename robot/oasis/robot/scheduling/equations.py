"""The request controller's equations (papers/004), as short pure functions.

* Eq. 9  -- the Whittle index of an arm: ``v(x) = Q(x, 1) - Q(x, 0)`` (the paper writes control 2 for
  "passive"; we write 0).
* Eq. 10 -- the Q-value update with the child-discovery bonus: the target adds, to the reward and the
  discounted value of the arm's own next state, the discounted values of the children that this fetch
  discovered for the first time.
* Eq. 11 -- the reward of a fetch: the new relevance on first retrieval, ``max(r_k, r_k+1)`` when the
  document was modified, the last known relevance ``r_k`` when it was deleted, 0 otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable

from oasis.robot.scheduling.interface import FETCH_KINDS


def whittle_index(q_active: float, q_passive: float) -> float:
    # Eq. 9 (papers/004): the subsidy for passivity at which both controls are equally good
    return q_active - q_passive


def q_update(
    q: float,
    g: float,
    q_next: float,
    q_children: Iterable[float],
    *,
    alpha: float,
    gamma: float,
) -> float:
    """Eq. 10 (papers/004): ``Q := (1 - alpha) Q + alpha (g + gamma (Q(x', u') + sum_j Q(x^j, u^j)))``.

    q           Q(x_k^i, u_k^i), the current estimate for the arm's state and control
    g           g(x_k^i, u_k^i, x_k+1^i), the reward of Eq. 11
    q_next      Q(x_k+1^i, u_k+1^i), the value of the arm's own next state
    q_children  Q(x_k+1^j, u_k+1^j) for each child j in c_k+1(i), the children this fetch newly discovered
                (empty when the arm was passive)
    alpha       step size in (0, 1]
    gamma       discount factor in [0, 1)
    """
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    if not 0.0 <= gamma < 1.0:
        raise ValueError(f"gamma must be in [0, 1), got {gamma}")
    bonus = 0.0
    for value in q_children:
        bonus += value
    return q_update_summed(q, g, q_next, bonus, alpha, gamma)


def q_update_summed(q: float, g: float, q_next: float, bonus: float, alpha: float, gamma: float) -> float:
    """Eq. 10 (papers/004) with ``bonus`` = the children's values already summed (in order, from 0.0), and
    no parameter checks: the controller's hot path, with alpha and gamma validated once by its config.
    ``q_update`` computes through this function, so both give the same bits."""
    # Eq. 10 (papers/004): Q := (1 - alpha) Q + alpha (g + gamma (Q(x', u') + sum_j Q(x^j, u^j)))
    return (1.0 - alpha) * q + alpha * (g + gamma * (q_next + bonus))


def reward(kind: str, r_k: float, r_k1: float, *, active: bool = True) -> float:
    """Eq. 11 (papers/004): g(x_k, u_k, x_k+1) for one arm.

    kind   what the fetch found: "new" (first retrieval), "modified", "deleted", "unchanged" or "error"
    r_k    r_k(i), the last relevance score calculated for the document before this fetch
    r_k1   r_k+1(i), the relevance score computed from this fetch
    active u_k = 1 (fetched); a passive arm earns 0
    """
    if kind not in FETCH_KINDS:
        raise ValueError(f"unknown fetch kind {kind!r}; expected one of {FETCH_KINDS}")
    if r_k < 0.0 or r_k1 < 0.0:
        raise ValueError(f"relevance scores must be non-negative, got r_k={r_k}, r_k1={r_k1}")
    if not active:
        return 0.0
    if kind == "new":
        return r_k1
    if kind == "modified":
        return max(r_k, r_k1)
    if kind == "deleted":
        return r_k
    return 0.0
