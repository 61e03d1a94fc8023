"""The robot's own recall estimate (oasis.robot.recall): the fringe's relevance, estimated by the linking
page's, calibrated by what first retrievals found; checked by hand-worked cases and, over a real replay of
a synthetic web with the real controller, against the truth."""

from __future__ import annotations

import math
import random

import pytest

from oasis.replay.experiment import prepare
from oasis.robot.recall import FringeCalibration, recall_estimate
from oasis.robot.scheduling import FetchOutcome, make_controller
from oasis.web.corpus import load_corpus


def test_fringe_calibration_hand_worked() -> None:
    cal = FringeCalibration(threshold=0.1, decay=0.5)
    assert cal.ratio == 1.0  # nothing retrieved yet: the raw estimate
    cal.observe(0.4, 0.2)  # estimated 0.4, found 0.2 (indexed)
    assert cal.ratio == pytest.approx(0.2 / 0.4)
    cal.observe(0.6, 0.05)  # found below the threshold: the robot will not index it, so it counts 0
    # weighted sums: estimated 0.5 * 0.4 + 0.6 = 0.8, found 0.5 * 0.2 + 0 = 0.1
    assert cal.ratio == pytest.approx(0.1 / 0.8)
    cal.observe(math.nan, 0.3)  # ignored
    cal.observe(0.2, -1.0)
    assert cal.ratio == pytest.approx(0.1 / 0.8)
    only_zero = FringeCalibration()
    only_zero.observe(0.0, 0.7)  # a page estimated at 0 (a seed, a hub of no relevance) says nothing of rho
    assert only_zero.ratio == 1.0
    with pytest.raises(ValueError, match="threshold"):
        FringeCalibration(threshold=2.0)
    with pytest.raises(ValueError, match="decay"):
        FringeCalibration(decay=1.0)


def test_recall_estimate_hand_worked() -> None:
    # S_C = 2 held, 1.5 of it estimated fresh, the fringe estimated to hold 1 more: R = 1.5 / 3
    assert recall_estimate(2.0, 1.5, 1.0) == pytest.approx(0.5)
    assert recall_estimate(2.0, 2.0, 0.0) == 1.0
    assert recall_estimate(0.0, 0.0, 0.0) == 0.0
    assert recall_estimate(0.0, 0.0, 3.0) == 0.0
    assert recall_estimate(1.0, 1.0, -0.5) == 1.0  # (an incremental fringe sum a rounding below 0)


def test_calibrated_recall_estimate_is_nearer_the_truth_over_a_replayed_crawl() -> None:
    """The real controller crawls a synthetic web page by page, as the crawler does: before each first
    retrieval is reported, its estimated relevance goes to the calibration. After every fetch both
    estimates are compared with the truth, the relevance retrieved over the reachable total."""
    prepared = prepare(load_corpus("synthetic:pages=600,hosts=3,seed=4"), "databases", seed_urls=None)
    rep = prepared.replay
    ctl = make_controller("whittle", rng=random.Random(0))
    ctl.add_seeds(rep.urls[s] for s in rep.seeds)
    cal = FringeCalibration()
    got = 0.0
    raw_err, cal_err = [], []
    for t in range(1, len(rep) + 1):
        batch = ctl.next_batch(1, float(t))
        if not batch:
            break
        (url,) = batch
        i = rep.index[url]
        estimate = ctl.estimated_relevance(url)
        assert estimate is not None and estimate >= 0.0  # the page was located, not yet retrieved
        cal.observe(estimate, rep.rel_list[i])
        got += rep.rel_list[i]
        ctl.report(FetchOutcome(url, "new", rep.rel_list[i], rep.links(i)), float(t))
        assert ctl.estimated_relevance(url) is None  # retrieved: no longer in the fringe
        truth = got / rep.total_relevance
        raw_err.append(abs(recall_estimate(got, got, ctl.fringe_relevance()) - truth))
        cal_err.append(abs(recall_estimate(got, got, cal.ratio * ctl.fringe_relevance()) - truth))
    assert len(raw_err) > 300
    raw_mae, cal_mae = sum(raw_err) / len(raw_err), sum(cal_err) / len(cal_err)
    assert cal_mae < 0.8 * raw_mae, (cal_mae, raw_mae)
