"""papers/002 section 8 / papers/003: policies on the 4-source example, the exact optimum, the bound."""

from __future__ import annotations

import numpy as np
import pytest

from oasis.freshness.ephemeral import Model, Source, paper_model
from oasis.freshness.optimal import cycle_mean_reward, optimal_schedule, relaxation_bound
from oasis.freshness.policies import (
    BestOnlyPolicy,
    GreedyPolicy,
    RoundRobinPolicy,
    Simulator,
    WhittlePolicy,
)


def _det(policy: object, M: float, steps: int = 400) -> float:
    return Simulator(paper_model()).run(policy, steps=steps, M=M).mean_reward(100)  # type: ignore[arg-type]


def test_m1_deterministic_against_hand_worked_values() -> None:
    m = paper_model()
    u, a = m.u(), m.alpha()
    # best-only: crawl source 1 every period, reward u_1 = 179.79 (papers/002 Section 8)
    assert _det(BestOnlyPolicy(m), 1) == pytest.approx(u[0])
    # round robin: each source every 4 periods, X_i(4) = u_i (1 - a_i^4) / (1 - a_i); papers/003 prints 208
    rr = float(np.sum(u * (1 - a**4) / (1 - a)) / 4)
    assert _det(RoundRobinPolicy(4), 1) == pytest.approx(rr)
    assert rr == pytest.approx(208.33, abs=0.01)
    # Whittle crawls sources 1 and 2 alternately: (u_1 (1 + a_1) + u_2 (1 + a_2)) / 2
    alt = float((u[0] * (1 + a[0]) + u[1] * (1 + a[1])) / 2)
    assert _det(WhittlePolicy(m), 1) == pytest.approx(alt)
    assert alt == pytest.approx(260.39, abs=0.01)
    assert _det(GreedyPolicy(m), 1) == pytest.approx(alt)
    assert cycle_mean_reward(m, [(0,), (1,)]) == pytest.approx(alt)


def test_exact_optimum_and_relaxation_bound_m1() -> None:
    m = paper_model()
    opt = optimal_schedule(m, 1)
    whittle = _det(WhittlePolicy(m), 1)
    bound, _ = relaxation_bound(m, 1)
    assert opt.mean_reward <= opt.upper_bound + 1e-9
    assert whittle <= bound + 1e-6
    # on this instance the Whittle policy is optimal and meets the relaxation bound
    assert whittle == pytest.approx(opt.mean_reward, rel=1e-9)
    assert bound == pytest.approx(opt.mean_reward, rel=1e-4)


def test_m2_whittle_near_optimal_and_better_than_greedy() -> None:
    m = paper_model()
    opt = optimal_schedule(m, 2, eps=1e-3)  # coarser caps keep the test fast
    whittle = _det(WhittlePolicy(m), 2, steps=2000)
    assert whittle <= opt.upper_bound + 1e-6
    assert whittle >= opt.mean_reward - 0.5
    assert whittle > _det(GreedyPolicy(m), 2, steps=2000) + 5.0
    # Figure 3: source 1 is always crawled under M = 2
    res = Simulator(m).run(WhittlePolicy(m), steps=300, M=2)
    assert res.crawled[50:, 0].all()


def test_stochastic_arrivals_have_mean_u() -> None:
    m = paper_model()
    sim = Simulator(m, stochastic=True, rng=np.random.default_rng(3))
    res = sim.run(RoundRobinPolicy(4), steps=3000, M=1)
    # the round-robin reward in the stochastic model has the deterministic value as its mean (Eq. 19)
    assert res.mean_reward(100) == pytest.approx(208.33, rel=0.01)


def test_budget_mode_respects_costs() -> None:
    m = Model(
        sources=(
            Source(xi=1.0, mu=0.5, lam=10.0, C=2.0),
            Source(xi=1.0, mu=0.5, lam=10.0, C=1.0),
            Source(xi=0.5, mu=0.5, lam=10.0, C=1.0),
        )
    )
    res = Simulator(m).run(WhittlePolicy(m, budget=True), steps=200, M=2.0)
    spent = res.crawled.astype(float) @ m.C()
    assert spent.max() <= 2.0 + 1e-12
    assert res.crawled.sum() > 0
