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

import math
from collections.abc import Iterable
from typing import NamedTuple

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


def residual_index(base: float, correction: float) -> float:
    """Q_i(1) of a fringe document under the residual index (docs/replay.md "The shipped robot"): the exact
    immediate estimate ``b_i`` (parent + anchor relevance, greedy-anchor's key) plus the learned correction
    ``c(x)`` of its state. Its Whittle index (Eq. 9) is ``(1 - gamma) Q_i(1)`` (passive: ``gamma Q_i(1)``)."""
    return base + correction


def running_mean(mean: float, sample: float, n: float) -> float:
    """Eq. 10 with the step size 1 / n (``n`` counts this sample): ``mean + (sample - mean) / n``."""
    return mean + (sample - mean) / n


class Calibration(NamedTuple):
    """The pooled linear calibration of the immediate estimate: ``Q ~ a + wp pr + wa ar``."""

    a: float
    wp: float
    wa: float

    def estimate(self, pr: float, ar: float) -> float:
        return self.a + self.wp * pr + self.wa * ar


def calibration(
    n: float,
    sp: float,
    sa: float,
    sy: float,
    spp: float,
    saa: float,
    spa: float,
    spy: float,
    say: float,
    *,
    w_min: float,
    prior: float = 0.0,
    common: bool = False,
    nonnegative: bool = False,
) -> Calibration:
    """Least squares of the samples y on the parent relevance p and the anchor relevance a of the fetched
    documents, from the sums (n, sum p, sum a, sum y, sum p^2, sum a^2, sum p a, sum p y, sum a y); each slope
    floored at ``w_min`` (> 0: a larger parent or anchor relevance never lowers the estimate). When p and a
    cannot be told apart (no spread in one, or collinear), one slope for p + a (greedy-anchor's sum); with no
    spread at all, slope 1 and a = mean(y - p - a).

    ``prior`` > 0 (``ControllerConfig.fit_prior``): the two slopes are shrunk towards the one common slope on
    b = p + a (greedy-anchor's ratio) with ``prior`` pseudo-samples, ``w' = (n w + prior w_b) / (n + prior)``
    (the intercept re-fitted), so a few noisy samples cannot tilt the order far from greedy-anchor's.
    ``common``: always the one common slope on b = p + a (an affine map of b: greedy-anchor's order).
    ``nonnegative`` (``ControllerConfig.nonnegative``): a negative intercept is replaced by the fit through
    the origin (the raw second moments; the same floors and prior): relevance is never negative, nor is
    the estimate of a page with no evidence."""
    if n <= 0.0:
        return Calibration(0.0, 1.0, 1.0)
    if nonnegative:
        fit = calibration(n, sp, sa, sy, spp, saa, spa, spy, say, w_min=w_min, prior=prior, common=common)
        if fit.a >= 0.0:
            return fit
        # relevance is never negative, so neither is the estimate of a page with no evidence (p = a = 0): the
        # same fit with the first-moment sums zero is the least squares through the origin (a = 0)
        return calibration(n, 0.0, 0.0, 0.0, spp, saa, spa, spy, say, w_min=w_min, prior=prior, common=common)
    mp, ma, my = sp / n, sa / n, sy / n
    vpp, vaa, vpa = spp / n - mp * mp, saa / n - ma * ma, spa / n - mp * ma
    vpy, vay = spy / n - mp * my, say / n - ma * my
    det = vpp * vaa - vpa * vpa
    vbb, vby = vpp + vaa + 2.0 * vpa, vpy + vay  # one slope on b = p + a
    if not common and vpp > 1e-12 and vaa > 1e-12 and det > 1e-6 * vpp * vaa:
        wp = max((vaa * vpy - vpa * vay) / det, w_min)
        wa = max((vpp * vay - vpa * vpy) / det, w_min)
        if prior > 0.0:
            w = max(vby / vbb, w_min)
            wp, wa = (n * wp + prior * w) / (n + prior), (n * wa + prior * w) / (n + prior)
        return Calibration(my - wp * mp - wa * ma, wp, wa)
    if vbb <= 1e-12:
        return Calibration(my - mp - ma, 1.0, 1.0)
    w = max(vby / vbb, w_min)
    return Calibration(my - w * (mp + ma), w, w)


def state_correction(
    mean_p: float, mean_a: float, mean_y: float, n: float, fit: Calibration, shrink: float
) -> float:
    """c(x): the mean residual of the state's n samples over the pooled calibration, ``mean(y) - a - wp
    mean(p) - wa mean(a)``, shrunk towards 0 with ``shrink`` pseudo-samples (empirical Bayes):
    ``n (mean_y - fit(mean_p, mean_a)) / (n + shrink)``."""
    if n <= 0.0:
        return 0.0
    return n * (mean_y - fit.estimate(mean_p, mean_a)) / (n + shrink)


def shrunk_mean(mean: float, n: float, shrink: float) -> float:
    """The mean of ``n`` samples shrunk towards 0 with ``shrink`` pseudo-samples: ``n mean / (n + shrink)``
    (0 when nothing was seen): the empirical-Bayes estimate of a directory's correction d(D)."""
    if n <= 0.0:
        return 0.0
    return n * mean / (n + shrink)


def prequential_choice(losses: dict[int, float], n: float, default: int, tau: float) -> int:
    """Prequential model selection (Dawid 1984): among candidate estimators whose squared errors on the
    realised rewards, each predicted *before* its page was fetched, sum to ``losses[k]`` over ``n`` fetches,
    the one with the best Gaussian prequential log-likelihood ``-(n / 2) ln(loss / n)``, where the training
    split's choice ``default`` gets a head start of ``tau`` nats: another candidate k replaces it only when
    ``(n / 2) ln(losses[default] / losses[k]) > tau`` (and it is the best such). With no evidence (n = 0) or
    ``tau`` infinite: ``default``. Ties go to the smaller k (fewer components)."""
    if n <= 0.0 or tau == float("inf") or default not in losses:
        return default
    floor = 1e-300  # a zero loss (a perfect predictor) still compares
    best, best_score = default, 0.5 * n * math.log(max(losses[default], floor)) - tau
    for k in sorted(losses):
        score = 0.5 * n * math.log(max(losses[k], floor))
        if score < best_score:
            best, best_score = k, score
    return best


def line_sse(n: float, sx: float, sy: float, sxx: float, sxy: float, syy: float) -> float:
    """The residual sum of squares of the least-squares line ``y ~ alpha + beta x`` with ``beta >= 0`` (an
    estimate of relevance does not fall as its evidence rises), from the sums of ``n`` samples: with the
    centred sums Sxx, Sxy, Syy it is ``Syy - 2 beta Sxy + beta^2 Sxx``, ``beta = max(0, Sxy / Sxx)`` (0 when
    every x is the same); the in-link weight of :class:`oasis.robot.scheduling.residual.LinkWeight` is the
    weight whose x has the smallest."""
    if n <= 0.0:
        return 0.0
    cxx, cxy, cyy = sxx - sx * sx / n, sxy - sx * sy / n, syy - sy * sy / n
    beta = max(0.0, cxy / cxx) if cxx > 0.0 else 0.0
    return max(0.0, cyy - 2.0 * beta * cxy + beta * beta * cxx)
