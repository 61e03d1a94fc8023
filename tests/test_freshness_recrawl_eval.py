"""Re-crawl evaluation at equal fetch budget: the self-contained collection and the replay harness."""

from __future__ import annotations

import pytest

from oasis.freshness.recrawl import AdaptiveFetchSchedule, ScheduleRecrawl, UniformSchedule
from oasis.freshness.recrawl_eval import (
    CollectionConfig,
    ReplayCompareConfig,
    run_collection,
    run_replay,
    summarise,
)
from oasis.robot.scheduling.recrawl import WhittleRecrawl


class _Arm:
    def __init__(self, url: str, relevance: float, last_fetch: float, fetches: int, changes: int) -> None:
        self.url, self.relevance, self.last_fetch = url, relevance, last_fetch
        self.fetches, self.changes = fetches, changes


def test_whittle_hook_learns_from_counters() -> None:
    hook = WhittleRecrawl(period=1.0, prior_rate=0.1)
    assert hook(_Arm("a", 1.0, 0.0, 1, 0), 0.0) == 0.0  # just fetched
    first = hook(_Arm("a", 1.0, 0.0, 1, 0), 10.0)
    assert first > 0
    # five re-fetches 2 time units apart, all changed: the estimated rate rises above the prior
    for k in range(1, 6):
        hook(_Arm("a", 1.0, 2.0 * k, 1 + k, k), 2.0 * k)
    assert hook.rate(_Arm("a", 1.0, 10.0, 6, 5)) > 0.5
    assert hook(_Arm("a", 1.0, 10.0, 6, 5), 20.0) > first


def test_schedule_hooks() -> None:
    uni = ScheduleRecrawl(UniformSchedule(interval=5.0), initial_interval=5.0)
    assert 0.0 < uni(_Arm("a", 0.7, 0.0, 1, 0), 4.0) < 1e-8  # not due: only fills otherwise idle fetches
    assert uni(_Arm("a", 0.7, 0.0, 1, 0), 5.0) == 0.7
    ada = ScheduleRecrawl(
        AdaptiveFetchSchedule(min_interval=1.0, max_interval=100.0, initial_interval=10.0),
        initial_interval=10.0,
    )
    assert ada.interval(_Arm("b", 1.0, 0.0, 1, 0)) == 10.0
    assert ada.interval(_Arm("b", 1.0, 10.0, 2, 0)) == pytest.approx(14.0)  # unchanged: x 1.4
    assert ada.interval(_Arm("b", 1.0, 24.0, 3, 1)) == pytest.approx(11.2)  # changed: x 0.8


def test_collection_whittle_beats_uniform_and_adaptive() -> None:
    res = run_collection(CollectionConfig(docs=300, budget=6, steps=600, seed=0))
    F = {p: res.mean_F(p) for p in res.F}
    assert all(0.0 <= v <= 1.0 for v in F.values())
    # the freshness Whittle index (estimated rates under the pooled prior) beats every baseline, the
    # relevance-weighted round robin r * age and papers/002's ephemeral index included (issue 10)
    for base in ("uniform", "r-age", "adaptive", "whittle-ephemeral", "greedy"):
        assert F["whittle"] > F[base], base
        assert F["whittle-oracle"] > F[base], base


def test_replay_harness_comparison_runs() -> None:
    cfg = ReplayCompareConfig(
        corpus="synthetic:pages=300,hosts=3,topics=2,seed=1",
        steps=200,
        m=2,
        uniform_interval=60.0,
        adaptive_initial=60.0,
    )
    out = run_replay(cfg)
    pol = out["policies"]
    assert set(pol) == {"whittle", "uniform", "adaptive", "none"}
    assert pol["none"]["recrawls"] == 0
    for name in ("whittle", "uniform", "adaptive"):
        assert pol[name]["recrawls"] > 0
        # re-crawling keeps the collection fresher than never re-crawling, at the same fetch budget
        assert summarise(pol[name]["F"]) > summarise(pol["none"]["F"])
        assert all(0.0 <= m <= 1.0 for m in pol[name]["M"])
