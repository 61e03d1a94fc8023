"""Re-crawl policies on a changing collection at equal fetch budget: freshness F and quality M over time.

Two harnesses:

* :func:`run_collection` (self-contained): D retrieved documents with relevance r_i change as Poisson
  processes of rate lam_i (heterogeneous: mean x Exp(1), as the replay harness's ``ChangeModel``); every
  period exactly B documents are re-crawled by each policy. Policies: ``whittle`` (the per-document
  Whittle index with online change-rate estimates,
  :class:`~oasis.robot.scheduling.recrawl.ChangeRateEstimator` under the pooled empirical-Bayes prior
  :class:`~oasis.robot.scheduling.recrawl.PooledChangeRate`: no constant prior overrides the data) with
  the freshness Whittle index (:func:`~oasis.robot.scheduling.recrawl.freshness_index`),
  ``whittle-oracle`` (the same index with the true rates), ``whittle-ephemeral`` (papers/002 Theorem 1 with
  estimated rates, the index before issue 10), ``uniform`` (oldest first = every D/B periods), ``r-age``
  (relevance-aware round robin: largest r * age), ``adaptive`` (Nutch's AdaptiveFetchSchedule with
  SYNC_DELTA from observed change times, relevance-aware: largest r * age / interval), ``greedy`` (largest
  expected stale relevance r (1 - e^{-lam_hat a}), a myopic baseline). Freshness
  F(t) = sum r_i fresh_i / sum r_i (papers/004 Eq. 1). With no creation or deletion, recall R = F, so quality
  M = min(R, F) = F.
* :func:`run_replay` (through the replay engineer's harness, ``oasis.replay``): a full crawl of a synthetic
  web that changes (modify / delete / create) while the robot's request controller schedules fringe
  documents and re-crawls in one queue; the re-crawl hook is the Whittle index, a uniform interval, or
  Nutch's adaptive interval. Fetch budget: m per step for every policy. F, R and M (papers/004 Eqs. 1-2)
  come from the harness.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oasis.freshness.recrawl import (
    AdaptiveFetchSchedule,
    ScheduleRecrawl,
    UniformSchedule,
    freshness_index_array,
    recrawl_index_array,
)
from oasis.robot.scheduling.recrawl import ChangeRateEstimator, PooledChangeRate, WhittleRecrawl

logger = logging.getLogger(__name__)

FloatArray = NDArray[np.float64]
REFRESH = 20  # periods between full refreshes of the collection harness's rate estimates
COLLECTION_POLICIES = (
    "whittle",
    "whittle-oracle",
    "whittle-ephemeral",
    "uniform",
    "r-age",
    "adaptive",
    "greedy",
)


@dataclass(frozen=True, kw_only=True)
class CollectionConfig:
    docs: int = 1000  # D
    budget: int = 20  # B re-crawls per period
    steps: int = 2000
    mean_rate: float = 0.02  # mean change rate per period (each doc: mean x Exp(1))
    seed: int = 0
    prior_rate: float = 0.05  # change-rate estimator's prior
    inc_rate: float = 0.4  # Nutch defaults
    dec_rate: float = 0.2
    policies: tuple[str, ...] = COLLECTION_POLICIES
    curve_points: int = 200

    def __post_init__(self) -> None:
        if self.docs < 1 or not 1 <= self.budget <= self.docs or self.steps < 1:
            raise ValueError("need docs >= 1, 1 <= budget <= docs, steps >= 1")
        if not self.mean_rate > 0:
            raise ValueError("mean_rate must be > 0")
        unknown = set(self.policies) - set(COLLECTION_POLICIES)
        if unknown:
            raise ValueError(f"unknown policies {sorted(unknown)}; choose from {COLLECTION_POLICIES}")


@dataclass
class CollectionResult:
    F: dict[str, FloatArray]  # relevance-weighted freshness after each period
    F_unweighted: dict[str, FloatArray]
    config: CollectionConfig
    rate_error: float = math.nan  # mean |lam_hat - lam| / mean lam at the end (whittle)
    extra: dict[str, Any] = field(default_factory=dict)

    def mean_F(self, policy: str, *, burn_in: float = 0.5) -> float:
        f = self.F[policy]
        return float(f[int(len(f) * burn_in) :].mean())


def _pick(scores: FloatArray, B: int, rng: np.random.Generator) -> NDArray[np.int64]:
    # top B, ties broken at random
    jitter = np.asarray(rng.random(scores.shape[0]), dtype=np.float64)
    return np.lexsort((jitter, -scores))[:B].astype(np.int64)


def run_collection(
    cfg: CollectionConfig, *, progress: Callable[[int], None] | None = None
) -> CollectionResult:
    world = np.random.default_rng([cfg.seed, 1])
    D, B = cfg.docs, cfg.budget
    r = world.beta(0.5, 1.5, D)  # skewed relevance: a few very relevant documents
    lam = cfg.mean_rate * world.exponential(1.0, D)
    p_change = -np.expm1(-lam)  # probability of at least one change within a period
    # one pre-drawn change stream shared by all policies (common random numbers)
    F: dict[str, FloatArray] = {}
    Fu: dict[str, FloatArray] = {}
    rate_error = math.nan
    for policy in cfg.policies:
        changes = np.random.default_rng([cfg.seed, 2])
        pick_rng = np.random.default_rng([cfg.seed, 3])
        stale = np.zeros(D, dtype=bool)
        last = np.zeros(D)  # all fetched at t = 0
        pool = PooledChangeRate(cfg.prior_rate)
        est = [ChangeRateEstimator(prior_rate=cfg.prior_rate, pool=pool) for _ in range(D)]
        lam_hat = np.full(D, cfg.prior_rate)
        interval = np.full(D, D / B)
        due = np.full(D, D / B)
        modified = np.zeros(D)  # estimated time of the last change seen (SYNC_DELTA)
        sched = AdaptiveFetchSchedule(
            inc_rate=cfg.inc_rate,
            dec_rate=cfg.dec_rate,
            min_interval=1.0,
            max_interval=float(max(cfg.steps, D / B)),
            initial_interval=D / B,
        )
        f = np.zeros(cfg.steps)
        fu = np.zeros(cfg.steps)
        total_r = float(r.sum())
        for t in range(1, cfg.steps + 1):
            stale |= changes.random(D) < p_change
            age = t - last
            if policy == "whittle":
                s = freshness_index_array(r, lam_hat, age)
            elif policy == "whittle-oracle":
                s = freshness_index_array(r, lam, age)
            elif policy == "whittle-ephemeral":  # papers/002 Theorem 1, the index before issue 10
                s = recrawl_index_array(r, lam_hat, age)
            elif policy == "uniform":
                s = age.astype(np.float64)
            elif policy == "r-age":
                s = r * age
            elif policy == "adaptive":
                # due documents by relevance times how overdue they are; the rest only if budget is left
                over = age / interval
                s = np.where(t >= due, r * np.maximum(over, 1.0), 1e-9 * r * over)
            else:  # greedy
                s = r * -np.expm1(-lam_hat * age)
            chosen = _pick(s, B, pick_rng)
            for i in chosen.tolist():
                changed = bool(stale[i])
                if policy in ("whittle", "whittle-ephemeral", "greedy"):
                    est[i].observe(float(age[i]), changed)
                elif policy == "adaptive":
                    if changed:  # a change in (last fetch, t]: its expected time is the middle
                        modified[i] = 0.5 * (last[i] + t)
                    interval[i], due[i] = sched.next_fetch(float(t), float(interval[i]), changed, modified[i])
            if policy in ("whittle", "whittle-ephemeral", "greedy"):
                # the pooled prior moves with every observation: refresh the fetched documents' rates every
                # period and everyone's every REFRESH periods (bounded work)
                if t % REFRESH == 0:
                    lam_hat[:] = [e.rate() for e in est]
                else:
                    for i in chosen.tolist():
                        lam_hat[i] = est[i].rate()
            stale[chosen] = False
            last[chosen] = t
            f[t - 1] = float(r[~stale].sum()) / total_r
            fu[t - 1] = float((~stale).mean())
            if progress is not None:
                progress(1)
        F[policy], Fu[policy] = f, fu
        if policy == "whittle":
            rate_error = float(np.abs(lam_hat - lam).mean() / lam.mean())
    return CollectionResult(F=F, F_unweighted=Fu, config=cfg, rate_error=rate_error)


# -- through the replay harness ------------------------------------------------------------------------


REPLAY_POLICIES = ("whittle", "uniform", "adaptive", "none")


@dataclass(frozen=True, kw_only=True)
class ReplayCompareConfig:
    corpus: str = "synthetic:pages=3000,hosts=20,topics=4,seed=1"
    topic: str | None = None
    m: int = 4
    steps: int = 1500
    modify_rate: float = 0.01
    delete_rate: float = 0.0005
    create_fraction: float = 0.1
    create_rate: float = 0.002
    uniform_interval: float = 200.0
    adaptive_initial: float = 200.0
    seed: int = 0
    policies: tuple[str, ...] = REPLAY_POLICIES
    fringe_policy: str = "greedy-anchor"

    def __post_init__(self) -> None:
        if self.m < 1 or self.steps < 1:
            raise ValueError("m and steps must be >= 1")
        unknown = set(self.policies) - set(REPLAY_POLICIES)
        if unknown:
            raise ValueError(f"unknown policies {sorted(unknown)}; choose from {REPLAY_POLICIES}")


def _hook(policy: str, cfg: ReplayCompareConfig) -> Any:
    if policy == "whittle":
        return WhittleRecrawl(period=1.0)  # the pooled prior learns the rate from what re-crawls see
    if policy == "uniform":
        return ScheduleRecrawl(
            UniformSchedule(interval=cfg.uniform_interval), initial_interval=cfg.uniform_interval
        )
    if policy == "adaptive":
        sched = AdaptiveFetchSchedule(
            min_interval=1.0, max_interval=float(cfg.steps), initial_interval=cfg.adaptive_initial
        )
        return ScheduleRecrawl(sched, initial_interval=cfg.adaptive_initial)
    return None


def run_replay(cfg: ReplayCompareConfig, *, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run each re-crawl hook in the replay harness on the same changing web; returns F/R/M curves."""
    import random

    from oasis.replay.experiment import prepare
    from oasis.replay.simulator import ChangeModel
    from oasis.robot.scheduling.controller import make_controller
    from oasis.web.corpus import load_corpus

    corpus = load_corpus(cfg.corpus)
    prepared = prepare(corpus, cfg.topic)
    changes = ChangeModel(
        modify_rate=cfg.modify_rate,
        delete_rate=cfg.delete_rate,
        create_fraction=cfg.create_fraction,
        create_rate=cfg.create_rate,
    )
    out: dict[str, Any] = {"pages": len(prepared.replay), "policies": {}}
    for policy in cfg.policies:
        ctl = make_controller(
            cfg.fringe_policy,
            rng=random.Random(cfg.seed),
            recrawl_index=_hook(policy, cfg),
        )
        res = prepared.replay.run(
            ctl,
            m=cfg.m,
            steps=cfg.steps,
            changes=changes,
            rng=np.random.default_rng([cfg.seed, 7]),
            progress=progress,
        )
        out["policies"][policy] = {
            "F": res.F,
            "R": res.R,
            "M": res.M,
            "recrawls": res.recrawls,
            "first_fetches": res.first_fetches,
        }
    return out


def summarise(curves: Sequence[float] | FloatArray, *, burn_in: float = 0.5) -> float:
    a = np.asarray(curves, dtype=np.float64)
    return float(a[int(len(a) * burn_in) :].mean()) if a.size else math.nan
