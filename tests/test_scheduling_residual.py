"""The residual Whittle index of the shipped robot (docs/replay.md "The shipped robot"): each formula by a
hand-worked case, the controller's order against greedy-anchor and against its own keys, and the shipped
table as the default of ``--policies whittle`` and of the live robot."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from oasis.replay.experiment import Experiment, ExperimentConfig, prepare
from oasis.robot.__main__ import build_parser
from oasis.robot.app import build_crawler, config_from_args
from oasis.robot.scheduling import SHIPPED, Discovered, FetchOutcome, QTable, make_controller
from oasis.robot.scheduling.controller import TIE_WEIGHT
from oasis.robot.scheduling.equations import (
    Calibration,
    calibration,
    residual_index,
    running_mean,
    state_correction,
)
from oasis.robot.scheduling.residual import (
    FIT,
    cap_visits,
    shipped_table,
    start_table,
)
from oasis.robot.scheduling.residual import (
    TIE_WEIGHT as RESIDUAL_TIE_WEIGHT,
)
from oasis.web.corpus import load_corpus

EMPTY = replace(SHIPPED, start="empty")


# -- the formulas, by hand ---------------------------------------------------------------------------------


def test_residual_index_is_the_exact_estimate_plus_the_correction() -> None:
    assert residual_index(0.5, -0.125) == 0.375
    assert residual_index(0.5, 0.0) == 0.5  # no correction: greedy-anchor's key


def test_running_mean_is_eq10_with_step_one_over_n() -> None:
    # 0.2 + (0.8 - 0.2) / 3 = 0.4; from 0 with n = 1 it is the sample
    assert running_mean(0.2, 0.8, 3.0) == pytest.approx(0.4)
    assert running_mean(0.0, 0.7, 1.0) == 0.7


def test_calibration_two_slopes_by_hand() -> None:
    # samples (p, a, y): (0,0,.1) (1,0,.3) (0,1,.6) (1,1,.8) lie on y = .1 + .2 p + .5 a
    # sums: n 4, p 2, a 2, y 1.8, pp 2, aa 2, pa 1, py 1.1, ay 1.4
    fit = calibration(4, 2, 2, 1.8, 2, 2, 1, 1.1, 1.4, w_min=0.01)
    assert fit == pytest.approx(Calibration(0.1, 0.2, 0.5))
    assert fit.estimate(1.0, 0.5) == pytest.approx(0.55)


def test_calibration_floors_a_negative_slope() -> None:
    # (0,0,.5) (1,0,.1) (0,1,.6) (1,1,.2): y = .5 - .4 p + .1 a; wp floored at .1, wa = .1
    # a = mean y - .1 * .5 - .1 * .5 = .35 - .1 = .25
    fit = calibration(4, 2, 2, 1.4, 2, 2, 1, 0.3, 0.8, w_min=0.1)
    assert fit == pytest.approx(Calibration(0.25, 0.1, 0.1))


def test_calibration_one_slope_when_anchor_has_no_spread() -> None:
    # (0,0,.1) (1,0,.5): no anchor spread, one slope on p + a: w = cov / var = .1 / .25 = .4, a = .3 - .2 = .1
    assert calibration(2, 1, 0, 0.6, 1, 0, 0, 0.5, 0, w_min=0.01) == pytest.approx(Calibration(0.1, 0.4, 0.4))


def test_calibration_without_spread_or_samples() -> None:
    # one sample (.5, .25, .4): slope 1, a = .4 - .75
    assert calibration(1, 0.5, 0.25, 0.4, 0.25, 0.0625, 0.125, 0.2, 0.1, w_min=0.1) == pytest.approx(
        Calibration(-0.35, 1.0, 1.0)
    )
    assert calibration(0, 0, 0, 0, 0, 0, 0, 0, 0, w_min=0.1) == Calibration(0.0, 1.0, 1.0)


def test_state_correction_shrinks_the_mean_residual() -> None:
    # fit .1 + .2 * .5 + .5 * .5 = .45, mean y .5: residual .05; 3 samples, 2 pseudo-samples:
    # 3 * .05 / 5 = .03
    fit = Calibration(0.1, 0.2, 0.5)
    assert state_correction(0.5, 0.5, 0.5, 3.0, fit, 2.0) == pytest.approx(0.03)
    assert state_correction(0.5, 0.5, 0.5, 3.0, fit, 0.0) == pytest.approx(0.05)
    assert state_correction(0.5, 0.5, 9.0, 0.0, fit, 2.0) == 0.0  # never fetched: no correction


def test_cap_visits_keeps_means_and_scales_the_pooled_sums() -> None:
    q = QTable.from_dict(
        {
            "format": "oasis-qtable/1",
            "q": {
                "g:x": [0.1, 0.2, 40.0],
                "g:y": [0.3, 0.4, 2.0],
                FIT[0]: [40.0, 8.0, 4.0],
                FIT[1]: [2, 4, 6],
            },
        }
    )
    capped = cap_visits(q, 10.0).rows()
    assert capped["g:x"] == (0.1, 0.2, 10.0) and capped["g:y"] == (0.3, 0.4, 2.0)
    assert capped[FIT[0]] == pytest.approx([10.0, 2.0, 1.0]) and capped[FIT[1]] == pytest.approx(
        [0.5, 1, 1.5]
    )
    assert q.rows()["g:x"][2] == 40.0  # the original is untouched


# -- the controller ------------------------------------------------------------------------------------------


def test_hand_worked_crawl_keys_and_eq9_index() -> None:
    """seed s (relevance .5) links to b (anchor .1) and c (anchor .3); c goes first (b_c = .8 > b_b = .6),
    is fetched with relevance .2, and its state learns c(x) = 1 * (.2 - (0 + .5 + .3)) / (1 + shrink 1) =
    -.3; a later document d of c's state (b_d = .8) is keyed .8 - .3 = .5, below b (.6)."""
    ctl = make_controller("whittle", rng=random.Random(0), config=replace(EMPTY, shrink=1.0))
    ctl.add_seeds(["http://w/s"])
    assert ctl.next_batch(1, 0.0) == ["http://w/s"]
    links = [Discovered("http://w/b", "", 0.1), Discovered("http://w/c", "", 0.3)]
    ctl.report(FetchOutcome("http://w/s", "new", 0.5, links), 0.0)
    assert ctl.index_of("http://w/b") == pytest.approx((1 - SHIPPED.gamma) * 0.6)  # Eq. 9: (1 - gamma) Q(1)
    assert ctl.next_batch(1, 1.0) == ["http://w/c"]
    ctl.report(FetchOutcome("http://w/c", "new", 0.2, []), 1.0)
    ctl.report(FetchOutcome("http://w/s", "unchanged", 0.5, [Discovered("http://w/d", "", 0.3)]), 2.0)
    assert ctl.index_of("http://w/d") == pytest.approx((1 - SHIPPED.gamma) * 0.5)
    assert ctl.index_of("http://w/b") == pytest.approx((1 - SHIPPED.gamma) * 0.6)
    assert ctl.next_batch(2, 3.0) == ["http://w/b", "http://w/d"]


def test_shared_tie_break_weight() -> None:
    assert RESIDUAL_TIE_WEIGHT == TIE_WEIGHT


@pytest.fixture(scope="module")
def small_web() -> object:
    return prepare(
        load_corpus("synthetic:pages=300,hosts=3,seed=5"), "databases", seed_urls=None, anchors=True
    )


def test_without_learning_it_is_greedy_anchor(small_web: object) -> None:
    cfg = ExperimentConfig(
        policies=("greedy-anchor", "whittle"), traversals=1, controller=replace(EMPTY, learn=False)
    )
    out = Experiment(small_web, cfg).run()["policies"]  # type: ignore[arg-type]
    assert out["whittle"]["P"] == out["greedy-anchor"]["P"]


def test_queue_keys_stay_equal_to_the_fresh_index_while_learning(small_web: object) -> None:
    """After every report (re-fits included) each queued document's priority is its current b_i + c(x)."""
    ctl = make_controller("whittle", rng=random.Random(1), config=EMPTY)
    replay = small_web.replay  # type: ignore[attr-defined]
    checks = 0

    def check(_: int) -> None:
        nonlocal checks
        frontier, index = ctl.fringe.frontier, ctl.index  # type: ignore[attr-defined]
        for doc in frontier:
            assert frontier.priority(doc) == pytest.approx(index.key(doc), abs=1e-12)
        checks += 1

    replay.run_static(ctl, m=1, steps=len(replay), progress=check)
    assert checks > 100 and len(ctl.q) > 5  # it learned and re-fitted (8, 16, ... samples)
    assert ctl.q.rows()[FIT[0]][0] >= 64


# -- the shipped table is the default ------------------------------------------------------------------------


def test_the_shipped_table_is_package_data_and_the_default(tmp_path: Path) -> None:
    table = shipped_table(SHIPPED.carry)
    states = [k for k in table.rows() if k.startswith("g:")]
    assert len(states) >= 10 and all(table.rows()[k][2] <= SHIPPED.carry for k in states)
    assert SHIPPED.start == "shipped" and SHIPPED.residual
    # make_controller without a table (the live robot on its first start) starts from it
    ctl = make_controller("whittle", rng=random.Random(0), config=SHIPPED)
    assert ctl.q.rows() == table.rows()
    assert start_table(SHIPPED).rows() == table.rows()
    assert len(start_table(EMPTY)) == 0 and len(start_table(replace(SHIPPED, state="hybrid"))) == 0
    # the live robot: its default controller config and table
    args = build_parser().parse_args(["--name", "r", "--engine", "127.0.0.1:1", "--state-dir", str(tmp_path)])
    config = config_from_args(args, name="r", state_dir=tmp_path, default_q_table=tmp_path / "q_table.json")
    assert config.controller == SHIPPED
    crawler, engine = build_crawler(config, "127.0.0.1:1")
    try:
        assert crawler.controller.q.rows() == table.rows()  # type: ignore[attr-defined]
    finally:
        crawler.close()
        engine.close()


def test_replay_whittle_starts_from_the_shipped_table(small_web: object) -> None:
    cfg = ExperimentConfig(policies=("whittle",), traversals=1, controller=replace(SHIPPED, learn=False))
    experiment = Experiment(small_web, cfg)  # type: ignore[arg-type]
    experiment.run()
    assert experiment.q_tables["whittle"].rows() == shipped_table(SHIPPED.carry).rows()


def test_training_split_tool_measures_against_greedy_anchor(tmp_path: Path) -> None:
    """``python -m oasis.replay.shipped``: an untrained, non-learning residual robot is greedy-anchor (0%);
    ``train`` writes a table that the residual index reads."""
    from oasis.replay.shipped import compare, main

    (row,) = compare([replace(EMPTY, learn=False)], 1, None, [0])
    assert row["t1_vs_greedy_anchor"] == [0.0] and row["last_vs_t1"] == [0.0]
    out = tmp_path / "q.json"
    assert main(["train", "--out", str(out), "--traversals", "1", "--runs", "0"]) == 0
    rows = QTable.load(out).rows()
    assert rows[FIT[0]][0] > 1000 and any(k.startswith("g:") for k in rows)
