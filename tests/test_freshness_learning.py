"""Learning the index: Whittle Q-learning (papers/001), LSPE (papers/000), unknown parameters (online).

Reduced sizes with fixed seeds; tolerances chosen so that a broken update (wrong sign, no subsidy, frozen
index) fails them.
"""

from __future__ import annotations

import numpy as np
import pytest

from oasis.freshness.ephemeral import paper_model
from oasis.freshness.lspe import LspeConfig, features, run_lspe
from oasis.freshness.online import learned_policy_for
from oasis.freshness.policies import Simulator, WhittlePolicy
from oasis.freshness.qlearning import QLearningConfig, step_alpha, step_gamma, whittle_q_learning
from oasis.freshness.rvi import ArmModel, circulant_arm, restart_arm, whittle_indices_bisection


def test_step_sizes_eq14() -> None:
    assert step_alpha(1.0, 0.2) == pytest.approx(0.2)
    assert step_alpha(501.0, 0.2) == pytest.approx(0.1)
    # gamma(n) = C' / (1 + ceil(n log n / 500)); n = 100: ceil(460.5 / 500) = 1
    assert step_gamma(100, 0.5) == pytest.approx(0.25)
    assert step_gamma(10_000, 1.0) < step_alpha(10_000.0, 1.0)  # slower time scale


def test_q_learning_two_state_chain() -> None:
    P = np.array([[0.5, 0.5], [0.3, 0.7]])
    arm = ArmModel(P0=P, P1=P.copy(), R0=np.array([0.0, 0.5]), R1=np.array([1.0, 0.0]))
    cfg = QLearningConfig(arms=50, active=10, steps=4000, epsilon=0.5)
    res = whittle_q_learning(arm, cfg, np.random.default_rng(0))
    assert res.learned_indices == pytest.approx([1.0, -0.5], abs=0.06)


def test_q_learning_restart_example() -> None:
    arm = restart_arm()
    exact = whittle_indices_bisection(arm)
    cfg = QLearningConfig(arms=100, active=20, steps=4000, epsilon=0.01)
    res = whittle_q_learning(arm, cfg, np.random.default_rng(1), exact_indices=exact)
    # target of the issue: states 1-4 within 0.05 of the exact indices, reward within 2% (epsilon = 0.01)
    assert np.abs(res.learned_indices[:4] - exact[:4]).max() < 0.05
    assert res.reward_ratio() > 0.98


def test_q_learning_circulant_ranking() -> None:
    arm = circulant_arm()
    exact = whittle_indices_bisection(arm)
    cfg = QLearningConfig(arms=100, active=20, steps=4000, epsilon=0.1)
    res = whittle_q_learning(arm, cfg, np.random.default_rng(0), exact_indices=exact)
    lam = res.learned_indices
    # the ranking 3 > 2 > 1 > 4 that the policy uses, and the values within a loose reduced-size tolerance
    assert lam[2] > lam[1] > lam[0] > lam[3]
    assert np.abs(lam - exact).max() < 0.3
    # ~epsilon of the effort goes to exploration (papers/001: "10% loss" at epsilon = 0.1)
    assert 0.85 < res.reward_ratio() < 1.0


def test_online_parameters_reach_95pct_of_oracle() -> None:
    m = paper_model()
    steps = 1500
    learned = Simulator(m, stochastic=True, rng=np.random.default_rng(4)).run(
        learned_policy_for(m), steps=steps, M=1, need_obs=True
    )
    oracle = Simulator(m, stochastic=True, rng=np.random.default_rng(4)).run(
        WhittlePolicy(m), steps=steps, M=1
    )
    assert learned.rewards[500:].mean() >= 0.95 * oracle.rewards[500:].mean()


def test_online_estimates_close_to_truth() -> None:
    m = paper_model()
    pol = learned_policy_for(m)
    Simulator(m, stochastic=True, rng=np.random.default_rng(2)).run(pol, steps=1500, M=2, need_obs=True)
    for i in range(m.N):
        p = pol.params(i)
        assert p is not None
        assert p[0] == pytest.approx(m.alpha()[i], abs=0.05)
        assert p[1] == pytest.approx(m.u()[i], rel=0.1)


def test_lspe_runs_and_learns_thresholds() -> None:
    assert features(np.array([1.0, 2.0])).tolist() == [1.0, 2.0, 1.0, 2.0, 4.0]
    res = run_lspe(paper_model(), LspeConfig(steps=1500), np.random.default_rng(0))
    assert np.isfinite(res.rewards).all()
    assert res.mean_crawls() > 0.3
    # better than crawling only the best source (papers/000 reports about 160 at about one crawl per period)
    assert res.mean_reward(0.5) > 150.0


def test_q_learning_pair_samples_show_rare_active_pairs() -> None:
    # the visit counts that bound the index accuracy at small epsilon (docs/freshness.md): every arm-period
    # is one sample of one pair, a pair's local clock counts the periods it was updated in, and with
    # epsilon = 0.01 the circulant states 1, 2 and 4 are activated almost only by exploration
    arm = circulant_arm()
    steps, arms = 2000, 100
    res = whittle_q_learning(
        arm, QLearningConfig(arms=arms, active=20, steps=steps, epsilon=0.01), np.random.default_rng(0)
    )
    assert res.pair_samples is not None and res.pair_updates is not None
    assert res.pair_samples.shape == (4, 2) and res.pair_updates.shape == (4, 2)
    assert int(res.pair_samples.sum()) == arms * steps
    assert (res.pair_updates <= steps).all() and (res.pair_updates <= res.pair_samples).all()
    active = res.pair_samples[:, 1]
    assert int(active.sum()) == 20 * steps  # exactly M active arms per period
    # state 3 (index 1) takes the active slots; states 1, 2, 4 get a few per cent of its active samples
    assert active[[0, 1, 3]].max() < 0.05 * active[2]
    assert (active > 0).all()  # but exploration still samples every pair (papers/001 Section V)


def test_q_learning_sequential_matches_batched_on_two_state_chain() -> None:
    # papers/001 literally (one update per arm sample, sample clocks) learns the same indices as the batched
    # default; both must reach the known values, so a broken per-sample update fails
    P = np.array([[0.5, 0.5], [0.3, 0.7]])
    arm = ArmModel(P0=P, P1=P.copy(), R0=np.array([0.0, 0.5]), R1=np.array([1.0, 0.0]))
    cfg = QLearningConfig(arms=20, active=4, steps=1500, epsilon=0.5, C_prime=5.0, sequential=True)
    res = whittle_q_learning(arm, cfg, np.random.default_rng(0))
    assert res.learned_indices == pytest.approx([1.0, -0.5], abs=0.06)
    assert res.pair_updates is not None and res.pair_samples is not None
    assert (res.pair_updates == res.pair_samples).all()  # the local clock counts samples
    assert int(res.pair_samples.sum()) == 20 * 1500
