"""The residual Whittle index of the shipped robot (docs/replay.md "The shipped robot"): each formula by a
hand-worked case, the controller's order against greedy-anchor and against its own keys, and the shipped
table as the default of ``--policies whittle`` and of the live robot."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oasis.replay.baselines import GreedyAnchorMeanController, GreedyAnchorShuffledController
from oasis.replay.experiment import Experiment, ExperimentConfig, prepare
from oasis.robot.__main__ import build_parser
from oasis.robot.app import build_crawler, config_from_args
from oasis.robot.scheduling import SHIPPED, Discovered, FetchOutcome, QTable, make_controller
from oasis.robot.scheduling.controller import TIE_WEIGHT
from oasis.robot.scheduling.documents import FLIGHT
from oasis.robot.scheduling.equations import (
    Calibration,
    calibration,
    prequential_choice,
    residual_index,
    running_mean,
    shrunk_mean,
    state_correction,
)
from oasis.robot.scheduling.frontier import Frontier
from oasis.robot.scheduling.residual import (
    DIR_ROW,
    FIT,
    PREQ,
    SEED_STATE,
    WEB_ROWS,
    cap_visits,
    shipped_table,
    start_table,
    url_directory,
)
from oasis.robot.scheduling.residual import (
    TIE_WEIGHT as RESIDUAL_TIE_WEIGHT,
)
from oasis.web.corpus import load_corpus

EMPTY = replace(SHIPPED, start="empty")
# the residual index alone (no directory term, no calibration prior): the hand-worked cases of its formulas
PLAIN = replace(
    EMPTY,
    dir_weight=0.0,
    dir_min=0.0,
    fit_prior=0.0,
    carry_state=None,
    select_tau=None,
    select_default=7,
    duel_z=None,
    nonnegative=False,
)
# the directory term on and the other new options (the decisions' reference implementation covers them)
DIRS = replace(PLAIN, dir_weight=1.0, dir_shrink=2.0, fit_prior=4.0, carry_state=2.0)


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


def test_nonnegative_calibration_refits_a_negative_intercept_through_the_origin() -> None:
    """(p, a, y) = (1, 0, 0), (2, 0, 1): least squares y = p - 1 (intercept -1: a page with no evidence would
    be estimated at -1, so a page of relevance 0 realises more than its estimate); ``nonnegative`` re-fits
    through the origin: w = sum p y / sum p^2 = 2 / 5 = .4, a = 0. A positive intercept is kept as it is."""
    sums = (2, 3, 0, 1, 5, 0, 0, 2, 0)
    assert calibration(*sums, w_min=0.01) == pytest.approx(Calibration(-1.0, 1.0, 1.0))
    assert calibration(*sums, w_min=0.01, nonnegative=True) == pytest.approx(Calibration(0.0, 0.4, 0.4))
    positive = (2, 1, 0, 0.6, 1, 0, 0, 0.5, 0)  # the case above: intercept .1
    assert calibration(*positive, w_min=0.01, nonnegative=True) == pytest.approx(Calibration(0.1, 0.4, 0.4))


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


def test_calibration_prior_shrinks_the_slopes_towards_one() -> None:
    """The exact two-slope fit y = 0.1 + 0.2 p + 0.5 a of test_calibration_two_slopes_by_hand, its one slope
    on b = p + a being 0.35 (cov(b, y) / var(b) = 0.175 / 0.5); with 4 pseudo-samples on 4 samples each slope
    is the mean of its own and 0.35, and the intercept is re-fitted: mean y - wp mean p - wa mean a."""
    fit = calibration(4, 2, 2, 1.8, 2, 2, 1, 1.1, 1.4, w_min=0.01, prior=4.0)
    wp, wa = (0.2 + 0.35) / 2, (0.5 + 0.35) / 2
    assert fit == pytest.approx(Calibration(0.45 - wp * 0.5 - wa * 0.5, wp, wa))
    assert calibration(4, 2, 2, 1.8, 2, 2, 1, 1.1, 1.4, w_min=0.01, prior=0.0) == pytest.approx(
        Calibration(0.1, 0.2, 0.5)
    )


def test_shrunk_mean_and_url_directory() -> None:
    assert shrunk_mean(-0.6, 1.0, 1.0) == pytest.approx(-0.3)
    assert shrunk_mean(0.4, 3.0, 0.0) == pytest.approx(0.4) and shrunk_mean(0.4, 0.0, 2.0) == 0.0
    assert url_directory("http://h/a/b.html") == "http://h/a/" and url_directory("http://h/") == "http://h/"


def test_cap_visits_caps_states_and_fit_separately() -> None:
    rows = {"g:x": [0.1, 0.2, 40.0], FIT[0]: [40.0, 8.0, 4.0]}
    q = QTable.from_dict({"format": "oasis-qtable/1", "q": rows})
    capped = cap_visits(q, 10.0, 0.0).rows()  # carry_state 0: the calibration transfers, no state's c(x)
    assert capped["g:x"] == (0.1, 0.2, 0.0) and capped[FIT[0]] == pytest.approx([10.0, 2.0, 1.0])


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
    ctl = make_controller("whittle", rng=random.Random(0), config=replace(PLAIN, shrink=1.0))
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


def _directory_case(cfg: Any) -> Any:
    """The directory case's controller after its first two fetches: seed s (relevance .5) links to a/b
    (anchor .1), a/c (anchor .3) and e/f (anchor .25); c goes first and is fetched with relevance .2."""
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg)
    ctl.add_seeds(["http://w/s"])
    assert ctl.next_batch(1, 0.0) == ["http://w/s"]
    links = [Discovered("http://w/a/b", "", 0.1), Discovered("http://w/a/c", "", 0.3)]
    ctl.report(FetchOutcome("http://w/s", "new", 0.5, [*links, Discovered("http://w/e/f", "", 0.25)]), 0.0)
    assert ctl.next_batch(1, 1.0) == ["http://w/a/c"]
    ctl.report(FetchOutcome("http://w/a/c", "new", 0.2, []), 1.0)
    return ctl


def test_hand_worked_directory_term() -> None:
    """The directory term, by hand (greedy-anchor's estimate: calibrate off; shrink 1, dir_weight 1,
    dir_shrink 1): seed s (relevance .5) links to a/b (anchor .1), a/c (anchor .3) and e/f (anchor .25); c
    goes first (b_c = .8) and is fetched with relevance .2. Its state (shared by f: parent bin 1, anchor bin
    1, depth 1) learns c(x) = (.2 - .8) / (1 + 1) = -.3 at once: f is keyed .75 - .3 = .45, b still .6.
    Directory a/ learns the residual .2 - .8 - 0 = -.6, d(a/) = -.6 / (1 + 1) = -.3, which enters the keys at
    the next re-fit: then b is .6 - .3 = .3 and f goes first."""
    ctl = _directory_case(replace(PLAIN, shrink=1.0, dir_weight=1.0, dir_shrink=1.0, calibrate=False))
    assert ctl.q.rows()[DIR_ROW + "http://w/a/"] == pytest.approx((-0.6, 0.0, 1.0))
    assert ctl.index_of("http://w/a/b") == pytest.approx((1 - SHIPPED.gamma) * 0.6)
    assert ctl.index_of("http://w/e/f") == pytest.approx((1 - SHIPPED.gamma) * 0.45)
    ctl.index.refit()  # what the 8th sample does (then the fringe re-keys every document)
    ctl.fringe.rebuild()
    assert ctl.index.fit == Calibration(0.0, 1.0, 1.0)  # calibrate off: greedy-anchor's estimate stays
    assert ctl.index_of("http://w/a/b") == pytest.approx((1 - SHIPPED.gamma) * 0.3)
    assert ctl.next_batch(2, 2.0) == ["http://w/e/f", "http://w/a/b"]


@pytest.mark.parametrize("dir_min", [0.0, 1.0, 2.0])
def test_the_directory_term_waits_for_dir_min_fetches(dir_min: float) -> None:
    """The case above with ``dir_min``: d(a/) = -.3 enters the keys at a re-fit only once the directory rows
    hold ``dir_min`` fetches in all. After c's fetch they hold 1: with dir_min 0 or 1 b is keyed .3 at the
    re-fit and f goes first; with dir_min 2 nothing is published and b (.6) keeps its place. After b's fetch
    (relevance .5: rows hold 2) the next re-fit publishes d(a/) for every dir_min of the three."""
    cfg = replace(PLAIN, shrink=1.0, dir_weight=1.0, dir_shrink=1.0, calibrate=False, dir_min=dir_min)
    ctl = _directory_case(cfg)
    ctl.index.refit()
    ctl.fringe.rebuild()
    waits = dir_min > 1.0
    assert ctl.index.published == ({} if waits else {DIR_ROW + "http://w/a/": pytest.approx(-0.3)})
    assert ctl.index_of("http://w/a/b") == pytest.approx((1 - SHIPPED.gamma) * (0.6 if waits else 0.3))
    assert ctl.next_batch(1, 2.0) == ["http://w/a/b" if waits else "http://w/e/f"]
    if waits:  # b's fetch: residual .5 - .6 = -.1; a/ holds 2 fetches, mean -.35, d(a/) = -.7 / 3
        ctl.report(FetchOutcome("http://w/a/b", "new", 0.5, []), 2.0)
        ctl.index.refit()
        assert ctl.index.published == {DIR_ROW + "http://w/a/": pytest.approx(-0.7 / 3)}


def test_dir_min_must_be_a_count() -> None:
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="dir_min"):
            replace(SHIPPED, dir_min=bad)


def test_prequential_choice_by_hand() -> None:
    """Dawid's prequential selection: the default (training choice) keeps its place unless another
    candidate's Gaussian prequential log-likelihood beats it by more than tau nats."""
    losses = {0: 4.0, 1: 4.0, 2: 12.0, 3: 10.0}
    # (10 / 2) ln(10 / 4) = 4.58 nats in favour of 0 and 1 (a tie: the fewer components, 0)
    assert prequential_choice(losses, 10.0, 3, 2.0) == 0
    assert prequential_choice(losses, 10.0, 3, 5.0) == 3  # not enough evidence for tau = 5
    assert prequential_choice(losses, 0.0, 3, 0.0) == 3  # no evidence: the training choice
    assert prequential_choice(losses, 10.0, 3, float("inf")) == 3
    assert prequential_choice({0: 9.0, 3: 1.0}, 10.0, 3, 0.0) == 3  # the default is the best: kept


def test_prequential_selection_drops_a_component_with_worse_loss() -> None:
    """The directory case above with prequential selection (tau 0): fetching c (y .2, every candidate
    predicts .8: squared error .36 each) and then a/b (y .6, predicted .6 without d(D), .6 - .3 with the
    live d(a/) = -.3: errors 0 and .09). The candidates with d(D) have the larger loss (.45 vs .36), so at
    the re-fit the index drops d(D) (and, tied, the other components: mask 0): f is keyed .75 again."""
    cfg = replace(PLAIN, shrink=1.0, dir_weight=1.0, dir_shrink=1.0, calibrate=False, select_tau=0.0)
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg)
    assert ctl.index.mask == 7  # no evidence yet: the training choice (every component)
    ctl.add_seeds(["http://w/s"])
    ctl.next_batch(1, 0.0)
    links = [Discovered("http://w/a/b", "", 0.1), Discovered("http://w/a/c", "", 0.3)]
    ctl.report(FetchOutcome("http://w/s", "new", 0.5, [*links, Discovered("http://w/e/f", "", 0.25)]), 0.0)
    assert ctl.next_batch(1, 1.0) == ["http://w/a/c"]
    ctl.report(FetchOutcome("http://w/a/c", "new", 0.2, []), 1.0)
    assert ctl.next_batch(1, 2.0) == ["http://w/a/b"]  # .6 against f's .75 - .3
    assert ctl.index.states[ctl.docs.ids["http://w/a/b"]] != ctl.index.states[ctl.docs.ids["http://w/e/f"]]
    ctl.report(FetchOutcome("http://w/a/b", "new", 0.6, []), 2.0)
    rows = ctl.q.rows()
    assert rows[PREQ[0]] == pytest.approx((0.36, 0.36, 0.36))  # masks 0, 1, 2
    assert rows[PREQ[1]] == pytest.approx((0.36, 0.45, 0.45))  # masks 3, 4, 5
    assert rows[PREQ[2]] == pytest.approx((0.45, 0.45, 2.0))  # masks 6, 7; n
    ctl.index.refit()
    ctl.fringe.rebuild()
    assert ctl.index.mask == 0 and ctl.index.published == {}
    assert ctl.index_of("http://w/e/f") == pytest.approx((1 - SHIPPED.gamma) * 0.75)  # c(x) = -.3 unused
    strict = replace(cfg, select_tau=1.0)  # (2 / 2) ln(.45 / .36) = .22 nats < 1: the training choice stays
    ctl.index.config = strict
    ctl.index.refit()
    assert ctl.index.mask == 7


def _fit_rows(samples: list[tuple[float, float, float]]) -> QTable:
    """A table whose pooled calibration sums hold ``samples`` (p, a, y)."""
    q = QTable(0.0)
    n = float(len(samples))
    sp, sa, sy = (sum(s[i] for s in samples) for i in range(3))
    q.put(FIT[0], (n, sp, sa))
    q.put(FIT[1], (sy, sum(p * p for p, _a, _y in samples), sum(a * a for _p, a, _y in samples)))
    spa = sum(p * a for p, a, _y in samples)
    q.put(FIT[2], (spa, sum(p * y for p, _a, y in samples), sum(a * y for _p, a, y in samples)))
    return q


def test_the_duel_falls_back_to_greedy_anchor_when_learning_loses() -> None:
    """The prequential duel, by hand. The table's samples have y = anchor relevance, so the two-slope fit
    is wp = .1 (floored), wa = 1, a = .2 - .035 - .2 = -.035; greedy-anchor's one-slope fit on b is
    w = .01 / .0325, a = .2 - .55 w. Seed s1 (relevance .9) links z (anchor 0: b .9, estimate .055), seed s2
    (.1) links x (anchor .4: b .5, estimate .375): the index fetches x where greedy-anchor would fetch z. x
    earns 0: the duel adds 0 - (a + .9 w) = -.308 < 0 = -z sqrt(...) (z = 0, one scored fetch): lost, so the
    index falls back to greedy-anchor's order (one slope, no c(x)) for the rest of its life."""
    samples = [(0.5, 0.1, 0.1), (0.5, 0.3, 0.3), (0.2, 0.1, 0.1), (0.2, 0.3, 0.3)]
    w = 0.01 / 0.0325
    for z, lost in ((0.0, True), (10.0, False)):
        cfg = replace(PLAIN, shrink=1.0, duel_z=z, duel_min=1)
        ctl = make_controller("whittle", rng=random.Random(0), config=cfg, q=_fit_rows(samples))
        idx = ctl.index
        assert idx.fit == pytest.approx(Calibration(-0.035, 0.1, 1.0))
        assert idx.fit_common == pytest.approx(Calibration(0.2 - 0.55 * w, w, w))
        ctl.add_seeds(["http://w/s1", "http://w/s2"])
        ctl.next_batch(1, 0.0)
        ctl.report(FetchOutcome("http://w/s1", "new", 0.9, [Discovered("http://w/z", "", 0.0)]), 0.0)
        ctl.next_batch(1, 1.0)
        ctl.report(FetchOutcome("http://w/s2", "new", 0.1, [Discovered("http://w/x", "", 0.4)]), 1.0)
        assert ctl.next_batch(1, 2.0) == ["http://w/x"]
        ctl.report(FetchOutcome("http://w/x", "new", 0.0, []), 2.0)
        assert idx.duel_n == 1 and idx.duel_sum == pytest.approx(-(0.2 - 0.55 * w + 0.9 * w))
        assert idx.fallen is lost
        if lost:
            assert idx.mask == 0 and idx.fit == idx.fit_common
            estimate = idx.fit_common.estimate(0.9, 0.0)
            assert ctl.index_of("http://w/z") == pytest.approx((1 - SHIPPED.gamma) * estimate)


def test_shared_tie_break_weight() -> None:
    assert RESIDUAL_TIE_WEIGHT == TIE_WEIGHT


@pytest.fixture(scope="module")
def small_web() -> object:
    return prepare(
        load_corpus("synthetic:pages=300,hosts=3,seed=5"), "databases", seed_urls=None, anchors=True
    )


SELECT = replace(DIRS, select_tau=0.0, duel_z=0.0, duel_min=1)  # prequential selection and the duel on


@pytest.mark.parametrize("config", [EMPTY, PLAIN, DIRS, SELECT], ids=["shipped", "plain", "dirs", "select"])
def test_without_learning_it_is_greedy_anchor(small_web: object, config: Any) -> None:
    """With nothing learned and the best link only (``link_mean`` 0) the index orders as greedy-anchor."""
    cfg = ExperimentConfig(
        policies=("greedy-anchor", "whittle"),
        traversals=1,
        controller=replace(config, learn=False, link_mean=0.0),
    )
    out = Experiment(small_web, cfg).run()["policies"]  # type: ignore[arg-type]
    assert out["whittle"]["P"] == out["greedy-anchor"]["P"]


Pages = dict[str, tuple[float, list[tuple[str, float]]]]  # url -> (relevance, [(link, anchor relevance)])


def _fetch_order(ctl: Any, pages: Pages, steps: int) -> list[str]:
    """Crawl ``pages`` from the seed http://w/s one fetch at a time (a page not listed: relevance 0, no links)
    for ``steps`` fetches; returns the fetch order."""
    ctl.add_seeds(["http://w/s"])
    order: list[str] = []
    for step in range(steps):
        (url,) = ctl.next_batch(1, float(step))
        rel, links = pages.get(url, (0.0, []))
        ctl.report(FetchOutcome(url, "new", rel, [Discovered(u, "", a) for u, a in links]), float(step))
        order.append(url)
    return order


def _crawl_order(ctl: Any) -> list[str]:
    """Seed s (relevance .5) links to x (anchor .1), y and z (anchor .0: b .5 each); x (relevance .2) links to
    y again. Returns the fetch order."""
    pages: Pages = {
        "http://w/s": (0.5, [("http://w/x", 0.1), ("http://w/y", 0.0), ("http://w/z", 0.0)]),
        "http://w/x": (0.2, [("http://w/y", 0.0)]),
        "http://w/y": (0.0, []),
        "http://w/z": (0.0, []),
    }
    return _fetch_order(ctl, pages, 4)


def test_hand_worked_link_mean() -> None:
    """The in-link evidence (link_mean .5), by hand: after s, x goes first (b .6); its link to y adds the
    parent relevance .2, so y's estimate is .5 x .5 (best) + .5 x (.5 + .2) / 2 (mean) = .425, below z's .5,
    which greedy-anchor would fetch after y (FIFO among equal b .5). With link_mean 0 the order is
    greedy-anchor's."""
    config = replace(PLAIN, learn=False, link_mean=0.5)
    mixed = make_controller("whittle", rng=random.Random(0), config=config)
    assert _crawl_order(mixed) == ["http://w/s", "http://w/x", "http://w/z", "http://w/y"]
    y = mixed.docs.ids["http://w/y"]
    assert mixed.index.base[y] == pytest.approx(0.425)
    assert mixed.index.links[y] == 2.0
    best = make_controller("whittle", rng=random.Random(0), config=replace(PLAIN, learn=False, link_mean=0.0))
    assert _crawl_order(best) == ["http://w/s", "http://w/x", "http://w/y", "http://w/z"]


def test_greedy_anchor_mean_by_hand() -> None:
    """greedy-anchor-mean, the non-learning baseline of the same evidence, takes the same order by hand
    (y .425 after z .5); greedy-anchor keeps y's best link (.5) and fetches it first (FIFO)."""
    mean = GreedyAnchorMeanController(rng=random.Random(0), config=PLAIN, recrawl_index=None)
    assert _crawl_order(mean) == ["http://w/s", "http://w/x", "http://w/z", "http://w/y"]
    anchor = make_controller("greedy-anchor", rng=random.Random(0), config=PLAIN)
    assert _crawl_order(anchor) == ["http://w/s", "http://w/x", "http://w/y", "http://w/z"]


def _star_order(ctl: Any) -> list[str]:
    """Seed s (relevance .5) links to x (anchor .1: b .6) and to y1..y6 (anchor 0: b .5 each, exact ties); x
    (relevance .2) links to y3 again (b .2, below its .5). Returns the fetch order."""
    ys = [f"http://w/y{i}" for i in range(1, 7)]
    pages: Pages = {
        "http://w/s": (0.5, [("http://w/x", 0.1)] + [(y, 0.0) for y in ys]),
        "http://w/x": (0.2, [("http://w/y3", 0.0)]),
    }
    return _fetch_order(ctl, pages, 8)


def test_greedy_anchor_shuffled_breaks_only_exact_ties_at_random() -> None:
    """greedy-anchor-shuffled keeps greedy-anchor's order between different p + a (s, then x at .6) and puts
    the six exact ties (.5) in an order drawn by its rng: the same for one seed, different across seeds,
    where greedy-anchor keeps discovery order (FIFO); a weaker second link (x -> y3 at .2) changes nothing."""
    ys = [f"http://w/y{i}" for i in range(1, 7)]
    anchor = make_controller("greedy-anchor", rng=random.Random(0), config=PLAIN)
    assert _star_order(anchor) == ["http://w/s", "http://w/x", *ys]

    def shuffled(seed: int) -> list[str]:
        ctl = GreedyAnchorShuffledController(rng=random.Random(seed), config=PLAIN, recrawl_index=None)
        return _star_order(ctl)

    orders = [shuffled(seed) for seed in range(8)]
    for order in orders:
        assert order[:2] == ["http://w/s", "http://w/x"] and sorted(order[2:]) == ys
    assert shuffled(3) == orders[3]
    assert len({tuple(o) for o in orders}) > 2  # 720 orders of the ties: 8 draws repeat one with p < 4%
    assert any(o[2:] != ys for o in orders)


def test_greedy_anchor_shuffled_reports_its_spread(small_web: object) -> None:
    """Like ``random``, ``greedy-anchor-shuffled`` is the mean of ``random_runs`` runs with their spread; with
    its ties shuffled it is not greedy-anchor's own P on a web that has ties."""
    cfg = ExperimentConfig(policies=("greedy-anchor", "greedy-anchor-shuffled"), traversals=1, random_runs=4)
    pol = Experiment(small_web, cfg).run()["policies"]  # type: ignore[arg-type]
    entry = pol["greedy-anchor-shuffled"]
    assert entry["runs"] == 4
    assert entry["P_ratio_min"] <= entry["P_ratio"][0] <= entry["P_ratio_max"]
    assert entry["P_ratio_std"] > 0.0 and entry["P_ratio_min"] < entry["P_ratio_max"]


def test_greedy_anchor_dir_is_a_fixed_rule_baseline(small_web: object) -> None:
    """greedy-anchor plus the directory's shrunk mean residual r - b_i, fresh in every crawl (nothing
    carried): the same P every run, different from greedy-anchor's on a web whose directories differ."""
    cfg = ExperimentConfig(policies=("greedy-anchor", "greedy-anchor-dir"), traversals=1)
    out = Experiment(small_web, cfg).run()  # type: ignore[arg-type]
    again = Experiment(small_web, cfg).run()  # type: ignore[arg-type]
    pol = out["policies"]
    assert pol["greedy-anchor-dir"]["P"] == again["policies"]["greedy-anchor-dir"]["P"]
    assert pol["greedy-anchor-dir"]["P"] != pol["greedy-anchor"]["P"]
    assert out["strongest_baseline"]["policy"] in ("greedy-anchor", "greedy-anchor-dir")


def test_queue_keys_stay_equal_to_the_fresh_index_while_learning(small_web: object) -> None:
    """After every report (re-fits included) each queued document's priority is its current b_i + c(x)."""
    ctl = make_controller("whittle", rng=random.Random(1), config=EMPTY)
    replay = small_web.replay  # type: ignore[attr-defined]
    checks = 0

    def check(_: int) -> None:
        nonlocal checks
        fringe, index = ctl.fringe, ctl.index  # type: ignore[attr-defined]
        for state, queue in fringe.queues.items():
            for doc in queue:
                assert index.states[doc] == state
                assert fringe.corr[state] + queue.priority(doc) == index.key(doc)
                if state != SEED_STATE:
                    exact = index.value(doc) + TIE_WEIGHT * index.base[doc]
                    assert index.key(doc) == pytest.approx(exact, abs=1e-11)
        checks += 1

    replay.run_static(ctl, m=1, steps=len(replay), progress=check)
    assert checks > 100 and len(ctl.q) > 5  # it learned and re-fitted (8, 16, ... samples)
    assert ctl.q.rows()[FIT[0]][0] >= 64


def test_a_checkpoint_restores_every_fringe_key_and_the_next_decisions() -> None:
    """A restored shipped controller keys every fringe document as before (b_i AND its anchor part, so the
    calibrated estimate a + wp pr_i + wa ar_i is unchanged) and makes the same next decisions."""
    rng = random.Random(5)

    def url(i: int) -> str:
        return f"http://h{i % 3}.example.org/p{i}.html"

    ctl = make_controller("whittle", rng=random.Random(1), config=SHIPPED)
    ctl.add_seeds([url(0)])
    n = 1
    for step in range(60):  # enough fetches for several re-fits of the calibration
        batch = ctl.next_batch(1, float(step))
        links = [Discovered(url(n + j), "", rng.random()) for j in range(4)]
        n += 4
        ctl.report(FetchOutcome(batch[0], "new", rng.random(), links), float(step))
    restored = make_controller("whittle", rng=random.Random(1), config=SHIPPED)
    restored.load_state(json.loads(json.dumps(ctl.state_dict())))
    queued = [d for d in ctl._fringe_order() if ctl.docs.status[d] != FLIGHT]
    assert len(queued) > 100 and any(ctl.index.anchor[d] > 0 for d in queued)
    for doc in queued:
        assert restored.docs.urls[doc] == ctl.docs.urls[doc]
        assert restored.index.anchor[doc] == ctl.index.anchor[doc]
        assert restored.index.key(doc) == ctl.index.key(doc)
    assert [restored.next_batch(1, 99.0) for _ in range(20)] == [ctl.next_batch(1, 99.0) for _ in range(20)]


# -- the shipped table is the default ------------------------------------------------------------------------


def test_the_shipped_table_is_package_data_and_the_default(tmp_path: Path) -> None:
    table = shipped_table(SHIPPED.carry, SHIPPED.carry_state)
    states = [k for k in table.rows() if k.startswith("g:")]
    assert SHIPPED.carry_state == 0.0  # only the pooled calibration carries (as SHIPPED.carry samples)
    assert len(states) >= 10 and all(table.rows()[k][2] == 0.0 for k in states)
    assert table.rows()[FIT[0]][0] == pytest.approx(SHIPPED.carry)
    assert not any(k.startswith(DIR_ROW) for k in table.rows())  # directories are web-specific
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
    assert experiment.q_tables["whittle"].rows() == shipped_table(SHIPPED.carry, SHIPPED.carry_state).rows()


def test_training_split_tool_measures_against_greedy_anchor(tmp_path: Path) -> None:
    """``python -m oasis.replay.shipped``: an untrained, non-learning residual robot is greedy-anchor (0%);
    with greedy-anchor-mean's in-link weight and no calibration or directory term it is greedy-anchor-mean
    (0%), never ahead of the strongest same-evidence baseline; ``train`` writes a table that the residual
    index reads."""
    from oasis.replay.baselines import ANCHOR_MEAN_WEIGHT
    from oasis.replay.shipped import compare, main

    (row,) = compare([replace(EMPTY, learn=False, link_mean=0.0)], 1, None, [0])
    assert row["t1_vs_greedy_anchor"] == [0.0] and row["last_vs_t1"] == [0.0]
    assert row["worst_later_vs_t1"] == row["best_later_vs_t1"] == [0.0]  # one traversal: nothing later
    assert row["t1_vs_strongest_same_evidence"][0] <= 0.0
    mean_rule = replace(EMPTY, learn=False, link_mean=ANCHOR_MEAN_WEIGHT, calibrate=False, dir_weight=0.0)
    (row,) = compare([mean_rule], 1, None, [0])
    assert row["t1_vs_greedy_anchor_mean"] == [0.0] and row["t1_vs_greedy_anchor"] != [0.0]
    assert row["t1_vs_strongest_same_evidence"][0] <= 0.0
    out = tmp_path / "q.json"
    assert main(["train", "--out", str(out), "--traversals", "1", "--runs", "0"]) == 0
    rows = QTable.load(out).rows()
    assert rows[FIT[0]][0] > 1000 and any(k.startswith("g:") for k in rows)
    assert not any(k.startswith(WEB_ROWS) for k in rows)  # directories and the like: the web's own


def test_tie_noise_tool_measures_the_shipped_robot_against_shuffled_ties(tmp_path: Path) -> None:
    """``python -m oasis.replay.shipped noise``: the robot's margin is the one ``compare`` measures from the
    shipped table; the shuffled ties' spread brackets their mean; the table, JSON and PNG are written; a
    spread of one draw is refused."""
    from oasis.replay.shipped import compare, main, tie_noise

    (row,) = tie_noise([0], shuffles=3)
    table = shipped_table(SHIPPED.carry, SHIPPED.carry_state)
    (cmp,) = compare([replace(SHIPPED, start="empty")], 1, table, [0])
    assert row["robot"] == pytest.approx(cmp["t1_vs_greedy_anchor"][0], abs=1e-9)
    assert row["shuffled_min"] <= row["shuffled_mean"] <= row["shuffled_max"]
    assert row["shuffled_sd"] >= 0.0
    assert main(["noise", "--out", str(tmp_path), "--shuffles", "2", "--runs", "0"]) == 0
    saved = json.loads((tmp_path / "noise.json").read_text(encoding="utf-8"))
    assert [r["run"] for r in saved] == [0] and saved[0]["robot"] == pytest.approx(row["robot"])
    assert (tmp_path / "noise.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit):
        main(["noise", "--out", str(tmp_path), "--shuffles", "1", "--runs", "0"])


def test_inlink_summary_by_hand() -> None:
    """``inlink_summary``: the correlations, sign counts, the robot over the mean and the corpora whose
    topics disagree on the in-link mean, on four hand-made runs; tied ranks share their mean rank."""
    from oasis.replay.shipped import _ranks, inlink_summary

    assert _ranks([3.0, 1.0, 3.0, 2.0]) == [2.5, 0.0, 2.5, 1.0]

    def run(corpus: str, ga: float, mean: float, robot: float) -> dict[str, object]:
        return {
            "corpus": corpus,
            "greedy_anchor": ga,
            "greedy_anchor_mean": mean,
            "robot_P": robot,
            "mean": 100.0 * (mean / ga - 1.0),
            "robot": 100.0 * (robot / ga - 1.0),
            "robot_over_mean": 100.0 * (robot / mean - 1.0),
        }

    rows = [
        run("a", 100.0, 110.0, 110.0),  # mean +10%, robot +10% (= the mean)
        run("a", 100.0, 95.0, 96.0),  # mean -5%, robot -4% (1.05% over the mean)
        run("b", 100.0, 100.02, 101.0),  # mean +0.02%: neither helps nor hurts (level 0.05%)
        run("b", 200.0, 190.0, 201.0),  # mean -5%, robot +0.5%: the one sign that differs
    ]
    s = inlink_summary(rows)
    mean, robot = [10.0, -5.0, 0.02, -5.0], [10.0, -4.0, 1.0, 0.5]
    mx, my = sum(mean) / 4, sum(robot) / 4
    sxy = sum((a - mx) * (b - my) for a, b in zip(mean, robot, strict=True))
    sxx, syy = sum((a - mx) ** 2 for a in mean), sum((b - my) ** 2 for b in robot)
    assert s["pearson"] == pytest.approx(sxy / (sxx * syy) ** 0.5)
    # ranks: mean [3, 0.5, 2, 0.5], robot [3, 0, 2, 1] -> Pearson of the ranks
    assert s["spearman"] == pytest.approx(0.9486832980505138)
    assert s["same_sign"] == 3 and s["robot_ahead"] == 3 and s["mean_ahead"] == 2
    assert (s["mean_helps"], s["mean_hurts"]) == (1, 2)
    ahead = (s["robot_ahead_where_mean_helps"], s["robot_ahead_where_mean_is_level"])
    assert ahead == (1, 1) and s["robot_ahead_where_mean_hurts"] == 1  # run 4 only (run 2: -4%)
    over = [0.0, 100.0 * (96.0 / 95.0 - 1.0), 100.0 * (101.0 / 100.02 - 1.0), 100.0 * (201.0 / 190.0 - 1.0)]
    assert s["robot_over_mean_mean"] == pytest.approx(sum(over) / 4)
    assert s["robot_over_mean_median"] == pytest.approx((over[1] + over[2]) / 2)
    assert s["robot_within_half_percent_of_mean"] == 1
    assert s["corpora"] == 2 and s["corpora_with_both"] == ["a"]  # b's +0.02% is level, not "helps"
    assert inlink_summary([])["pearson"] is None


def test_inlink_tool_measures_the_robot_against_the_in_link_mean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m oasis.replay.shipped inlink``: per run the robot's and greedy-anchor-mean's margins are
    the ones ``compare`` (the robot from the shipped table) and ``baseline_ps`` measure; the JSON (rows and
    summary) and the PNG are written; ``--split`` names the runs of a split (a stand-in split here: the
    evaluation splits' corpora are not installed by the test command)."""
    from oasis.replay.shipped import (
        SPLITS,
        TRAINING,
        _prepare,
        baseline_ps,
        compare,
        inlink_evidence,
        main,
        pct,
    )

    (row,) = inlink_evidence([TRAINING[0]])
    table = shipped_table(SHIPPED.carry, SHIPPED.carry_state)
    (cmp,) = compare([replace(SHIPPED, start="empty")], 1, table, [0])
    assert row["robot"] == pytest.approx(cmp["t1_vs_greedy_anchor"][0], abs=1e-9)
    ps = baseline_ps(_prepare(*TRAINING[0]), ("greedy-anchor", "greedy-anchor-mean"))
    assert row["mean"] == pytest.approx(pct(ps["greedy-anchor-mean"], ps["greedy-anchor"]), abs=1e-9)
    assert row["robot_over_mean"] == pytest.approx(pct(row["robot_P"], ps["greedy-anchor-mean"]), abs=1e-9)
    assert main(["inlink", "--out", str(tmp_path), "--runs", "0"]) == 0
    saved = json.loads((tmp_path / "inlink.json").read_text(encoding="utf-8"))
    assert [r["run"] for r in saved["runs"]] == ["0"] and saved["runs"][0]["mean"] == pytest.approx(
        row["mean"]
    )
    assert saved["summary"]["runs"] == 1 and saved["summary"]["pearson"] is None  # one point: no correlation
    assert (tmp_path / "inlink.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    monkeypatch.setitem(SPLITS, "holdout-test", (TRAINING[0],))
    assert main(["inlink", "--out", str(tmp_path / "split"), "--split", "holdout-test"]) == 0
    (split_row,) = json.loads((tmp_path / "split" / "inlink.json").read_text(encoding="utf-8"))["runs"]
    assert split_row["run"] == "holdout-test/0" and split_row["robot"] == pytest.approx(row["robot"])


def test_a_link_order_is_the_same_web_with_each_pages_links_permuted() -> None:
    """``Replay.with_link_order``: order 0 is the web as served; another order has every page's links (with
    their anchors) as a permutation of the served ones, the same pages, relevance and seeds, the same order
    for the same seed, and a different order somewhere (synthetic run 0: its pages have many links)."""
    from oasis.replay.shipped import TRAINING, _prepare

    replay = _prepare(*TRAINING[0]).replay
    assert replay.with_link_order(0) is replay
    one, again, two = replay.with_link_order(1), replay.with_link_order(1), replay.with_link_order(2)
    assert one.urls == replay.urls and one.seeds == replay.seeds and one.reachable == replay.reachable
    assert (one.relevance == replay.relevance).all()
    moved = 0
    for i in range(len(replay)):
        served = [(d.url, d.anchor_relevance) for d in replay.links(i)]
        shuffled = [(d.url, d.anchor_relevance) for d in one.links(i)]
        assert sorted(shuffled) == sorted(served)
        assert shuffled == [(d.url, d.anchor_relevance) for d in again.links(i)]
        moved += shuffled != served
    assert moved > len(replay) // 2
    assert any([d.url for d in one.links(i)] != [d.url for d in two.links(i)] for i in range(len(replay)))


def test_link_order_tool_pairs_the_robot_and_greedy_anchor_on_each_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m oasis.replay.shipped orders``: order 0's margin is the one ``compare`` measures on the web
    as served; each other order's is the robot's raw P over greedy-anchor's on that same order; the mean,
    standard error and verdict follow the margins; the table, JSON and PNG are written; one order is refused.
    """
    import math
    import statistics

    from oasis.replay.shipped import TRAINING, _prepare, compare, link_orders, main

    (row,) = link_orders([TRAINING[0]], orders=3)
    table = shipped_table(SHIPPED.carry, SHIPPED.carry_state)
    (cmp,) = compare([replace(SHIPPED, start="empty")], 1, table, [0])
    assert row["as_served"] == row["margins"][0] == pytest.approx(cmp["t1_vs_greedy_anchor"][0], abs=1e-9)
    prepared = _prepare(*TRAINING[0])
    shuffled = replace(prepared, replay=prepared.replay.with_link_order(2))
    pol = Experiment(shuffled, ExperimentConfig(policies=("greedy-anchor", "whittle"), traversals=1)).run()
    ps = {k: float(v["P"][0]) for k, v in pol["policies"].items()}
    assert row["margins"][2] == pytest.approx(100 * (ps["whittle"] / ps["greedy-anchor"] - 1), abs=1e-9)
    assert row["mean"] == pytest.approx(statistics.fmean(row["margins"]))
    assert row["se"] == pytest.approx(statistics.stdev(row["margins"]) / math.sqrt(3))
    assert row["ahead_on"] == sum(m > 0 for m in row["margins"])
    expect = "ahead" if row["mean"] > 2 * row["se"] else "behind" if row["mean"] < -2 * row["se"] else "level"
    assert row["verdict"] == expect
    assert main(["orders", "--out", str(tmp_path), "--orders", "2", "--runs", "0"]) == 0
    printed = capsys.readouterr().out
    assert "as served: ahead on" in printed and f"{row['as_served']:+.2f}" in printed
    saved = json.loads((tmp_path / "orders.json").read_text(encoding="utf-8"))
    assert [r["run"] for r in saved] == ["0"] and saved[0]["margins"] == pytest.approx(row["margins"][:2])
    assert (tmp_path / "orders.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "orders-size.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert row["pages"] == prepared.meta["reachable"] == saved[0]["pages"] > 100
    assert f"  100 pages or more: 1 runs, mean {saved[0]['mean']:+.2f}%" in printed
    with pytest.raises(SystemExit):
        main(["orders", "--out", str(tmp_path), "--orders", "1", "--runs", "0"])
    with pytest.raises(ValueError, match="orders must be >= 2"):
        link_orders([TRAINING[0]], orders=1)
    # --config: the residual robot that neither learns nor mixes in the in-link mean is greedy-anchor on
    # every order (0% each time: the orders are the same for both, anchors moved with their links)
    plain = '{"start": "empty", "learn": false, "link_mean": 0.0}'
    assert main(["orders", "--out", str(tmp_path), "--orders", "3", "--runs", "0", "--config", plain]) == 0
    (same,) = json.loads((tmp_path / "orders.json").read_text(encoding="utf-8"))
    assert same["margins"] == [0.0, 0.0, 0.0] and same["verdict"] == "level"


def test_link_order_tool_pairs_later_traversals_with_the_robots_own_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``orders --traversals N``: on each link order the robot learns on over N traversals (its default
    table, fresh per order), and each later traversal's raw P is paired with its own first on that order;
    the last traversal's mean, standard error and verdict, the orders it improves on, the best and worst
    later traversals and the dips follow those margins; a robot that does not learn is flat on every order
    to the digit; the table, JSON and both PNGs are written; --traversals 0 is refused."""
    import math
    import statistics

    from oasis.replay.shipped import _prepare, link_orders, main

    corpus, topic = "synthetic:pages=300,hosts=2,topics=2,seed=1", "databases"
    (row,) = link_orders([(corpus, topic)], orders=3, traversals=3)
    assert "later" not in link_orders([(corpus, topic)], orders=2)[0]  # one traversal: no pairing over time
    prepared = _prepare(corpus, topic)
    shuffled = replace(prepared, replay=prepared.replay.with_link_order(1))
    cfg = ExperimentConfig(policies=("greedy-anchor", "whittle"), traversals=3)
    own = [float(p) for p in Experiment(shuffled, cfg).run()["policies"]["whittle"]["P"]]
    assert own[2] != own[0]  # the robot learns on this web: traversal 3 is not traversal 1
    assert row["later"][1] == pytest.approx([100 * (own[1] / own[0] - 1), 100 * (own[2] / own[0] - 1)])
    last = [o[-1] for o in row["later"]]
    assert row["traversals"] == 3 and len(row["later"]) == 3
    assert row["last_mean"] == pytest.approx(statistics.fmean(last))
    assert row["last_se"] == pytest.approx(statistics.stdev(last) / math.sqrt(3))
    mean, se = row["last_mean"], row["last_se"]
    assert row["last_verdict"] == ("improves" if mean > 2 * se else "falls" if mean < -2 * se else "flat")
    assert row["improves_on"] == sum(x > 0 for x in last)
    assert row["best_mean"] == pytest.approx(statistics.fmean(max(o) for o in row["later"]))
    assert row["worst_mean"] == pytest.approx(statistics.fmean(min(o) for o in row["later"]))
    assert row["dips_on"] == sum(min(o) < 0 for o in row["later"])
    # a robot that does not learn runs the same traversal every time: flat, 0% on every order
    frozen = '{"learn": false}'
    argv = ["orders", "--out", str(tmp_path), "--orders", "2", "--runs", "0", "--traversals", "2"]
    assert main([*argv, "--config", frozen]) == 0
    (still,) = json.loads((tmp_path / "orders.json").read_text(encoding="utf-8"))
    assert still["later"] == [[0.0], [0.0]] and still["last_verdict"] == "flat" and still["dips_on"] == 0
    printed = capsys.readouterr().out
    assert "traversal 2 vs the robot's own first, over link orders: improves 0, flat 1, falls 0" in printed
    assert (tmp_path / "orders-later.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(SystemExit):
        main(["orders", "--out", str(tmp_path), "--runs", "0", "--traversals", "0"])
    with pytest.raises(ValueError, match="traversals must be >= 1"):
        link_orders([(corpus, topic)], orders=2, traversals=0)


def test_versus_compares_two_robots_run_by_run_by_hand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``versus``: per run the paired difference of two robots' margins over the same orders (mean, SE,
    better / worse by 2 SE, else level), and over runs the mean, its SE and the counts, worked by hand;
    runs or orders that differ are refused; ``orders --versus`` runs the second robot on the same orders."""
    import math

    from oasis.replay.shipped import TRAINING, link_orders, main, versus

    def row(topic: str, margins: list[float]) -> dict[str, Any]:
        return {"corpus": "c", "topic": topic, "margins": margins}

    mine = [row("a", [1.0, 2.0, 3.0]), row("b", [0.0, 0.0, 0.0]), row("c", [-1.0, -1.0, -1.5])]
    theirs = [row("a", [0.0, 0.0, 0.0]), row("b", [1.0, -1.0, 0.0]), row("c", [0.0, 0.0, 0.0])]
    out = versus(mine, theirs)
    a, b, c = out["runs"]
    assert a["mean"] == pytest.approx(2.0) and a["se"] == pytest.approx(1.0 / math.sqrt(3))  # sd 1
    assert a["verdict"] == "better"  # 2 > 2 x 0.577
    assert b["mean"] == pytest.approx(0.0) and b["verdict"] == "level"
    assert c["mean"] == pytest.approx(-7.0 / 6.0) and c["verdict"] == "worse"  # sd 0.289, SE 0.167
    assert out["mean"] == pytest.approx((2.0 + 0.0 - 7.0 / 6.0) / 3)
    means = [2.0, 0.0, -7.0 / 6.0]
    m = sum(means) / 3
    sd = math.sqrt(sum((x - m) ** 2 for x in means) / 2)
    assert out["se"] == pytest.approx(sd / math.sqrt(3)) and (out["better"], out["worse"]) == (1, 1)
    with pytest.raises(ValueError, match="same runs"):
        versus(mine, theirs[:2])
    with pytest.raises(ValueError, match="same runs and orders"):
        versus(mine, [row("a", [0.0, 0.0]), *theirs[1:]])
    # the CLI: the robot as shipped against greedy-anchor's own order (a residual robot that neither learns
    # nor mixes the mean: 0% on every order), so each difference is the shipped robot's margin itself; over
    # two traversals each robot's later traversal is its own (the non-learning one's equals its first)
    plain = '{"start": "empty", "learn": false, "link_mean": 0.0}'
    argv = ["orders", "--out", str(tmp_path), "--orders", "2", "--runs", "0", "--versus", plain]
    assert main([*argv, "--traversals", "2"]) == 0
    (saved,) = json.loads((tmp_path / "orders.json").read_text(encoding="utf-8"))
    (alone,) = link_orders([TRAINING[0]], orders=2, traversals=2)
    assert saved["versus"]["mean"] == pytest.approx(alone["mean"])
    assert saved["last_mean"] == pytest.approx(alone["last_mean"]) and alone["last_mean"] != 0.0
    assert saved["versus"]["later"]["last_mean"] == 0.0 and saved["versus"]["later"]["last_verdict"] == "flat"
    printed = capsys.readouterr().out
    assert "difference over runs: mean" in printed and "the --versus robot's traversal 2" in printed
    assert "others" not in saved  # the second robot's rows are compared, not saved
    with pytest.raises(SystemExit):
        main(["orders", "--out", str(tmp_path), "--runs", "0", "--versus", "[1"])


def test_link_orders_runs_more_robots_on_one_preparation_as_their_own_calls() -> None:
    """``link_orders(..., others=...)``: each further robot's row (on the same web prepared once, against
    greedy-anchor run once per order) is exactly the row of its own call, and the first robot's row is
    unchanged by them; a robot with no traversal is refused."""
    from oasis.replay.shipped import FEATURES_ONLY, link_orders

    web = [("synthetic:pages=200,hosts=2,topics=2,seed=3", "databases")]
    plain = replace(SHIPPED, start="empty", learn=False, link_mean=0.0, link_learn=None, explore_every=0)
    (row,) = link_orders(web, 3, traversals=3, others=[(FEATURES_ONLY, 3), (plain, 1)])
    features, flat = row.pop("others")
    assert row == link_orders(web, 3, traversals=3)[0]
    assert features == link_orders(web, 3, FEATURES_ONLY, 3)[0]
    assert flat == link_orders(web, 3, plain, 1)[0] and "later" not in flat
    assert flat["margins"] == [0.0, 0.0, 0.0]  # greedy-anchor's own order: the pairing is exact
    with pytest.raises(ValueError, match="traversals"):
        link_orders(web, 2, others=[(plain, 0)])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["noise", "--out", "OUT", "--runs", "0,9999"], "--runs must be in 0.."),  # no such training run
        (["noise", "--out", "OUT", "--runs", "-1"], "--runs must be in 0.."),
        (["compare", "--runs", "0,x"], "--runs must be comma-separated"),  # not a number
        (["train", "--out", "OUT/q.json", "--runs", "999"], "--runs must be in 0.."),
        (["noise", "--out", "FILE/sub", "--runs", "0"], "cannot write to folder"),  # under a regular file
        (["inlink", "--out", "FILE/sub", "--runs", "0"], "cannot write to folder"),
        (["inlink", "--out", "OUT", "--runs", "0,9999"], "--runs must be in 0.."),
        (["inlink", "--out", "OUT", "--split", "holdout-999"], "invalid choice"),
        (["orders", "--out", "FILE/sub", "--runs", "0"], "cannot write to folder"),
        (["orders", "--out", "OUT", "--runs", "0,9999"], "--runs must be in 0.."),
        (["evaluate", "--split", "holdout-6", "--out", "FILE/sub"], "cannot write to folder"),
        (
            ["evaluate", "--split", "holdout-6", "--out", "OUT", "--traversals", "1"],
            "--traversals must be >= 2",
        ),
        (["evaluate", "--out", "OUT"], "give either --split or --corpus/--topic"),  # no run at all
        (["evaluate", "--split", "holdout-6", "--out", "OUT", "--orders", "1"], "--orders must be 0"),
        (["orders", "--out", "OUT", "--runs", "0", "--orders", "1"], "--orders must be >= 2"),
        (["orders", "--out", "OUT", "--runs", "0", "--config", '{"no_such": 1}'], "--config must be a JSON"),
        (["orders", "--out", "OUT", "--runs", "0", "--config", "[1"], "--config must be a JSON"),
    ],
)
def test_training_split_tool_refuses_bad_arguments_before_any_run(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A clumsy ``--runs`` or an ``--out`` that cannot be created is a usage error (exit 2, one line saying
    why) before any replay runs, not a traceback after minutes of work; nothing is written."""
    from oasis.replay.shipped import main

    (tmp_path / "FILE").write_text("x", encoding="utf-8")
    args = [a.replace("OUT", str(tmp_path / "out")).replace("FILE", str(tmp_path / "FILE")) for a in argv]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_evaluate_tool_is_oasis_replay_and_issue_10s_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m oasis.replay.shipped evaluate``: each run is ``oasis replay`` with the evaluation policies
    (its results.json on disk), and the table's margins are the raw-P ratios of that file; the counts of the
    three targets follow them; the pairing over link orders is the ``orders`` tool's; evaluation.json holds
    the rows; a run without its topic is a usage error."""
    from oasis.replay.shipped import EVAL_POLICIES, FEATURES_ONLY, SPLITS, TRAINING, link_orders, main

    corpus, topic = "synthetic:pages=300,hosts=2,topics=2,seed=1", "databases"
    argv = ["evaluate", "--corpus", corpus, "--topic", topic, "--out", str(tmp_path)]
    assert main([*argv, "--traversals", "3", "--random-runs", "1", "--orders", "3"]) == 0
    table = capsys.readouterr().out
    results = json.loads((tmp_path / "run-0" / "results.json").read_text(encoding="utf-8"))
    pol = results["policies"]
    assert list(pol) == EVAL_POLICIES.split(",") and len(pol["whittle"]["P"]) == 3
    (row,) = json.loads((tmp_path / "evaluation.json").read_text(encoding="utf-8"))["runs"]
    w, h = pol["whittle"]["P"], pol["whittle:hybrid"]["P"]
    assert row["t1_vs_greedy_anchor"] == pytest.approx(100 * (w[0] / pol["greedy-anchor"]["P"][0] - 1))
    assert row["t1_vs_greedy_anchor_mean"] == pytest.approx(
        100 * (w[0] / pol["greedy-anchor-mean"]["P"][0] - 1)
    )
    firsts = [pol[b]["P"][0] for b in ("greedy-anchor", "greedy-anchor-dir", "greedy-anchor-mean")]
    assert row["t1_vs_strongest_same_evidence"] == pytest.approx(100 * (w[0] / max(firsts) - 1))
    assert row["best_later_vs_t1"] == pytest.approx(100 * (max(w[1:]) / w[0] - 1))
    assert row["worst_later_vs_t1"] == pytest.approx(100 * (min(w[1:]) / w[0] - 1))
    assert row["hybrid_vs_oracle"] == pytest.approx(100 * (max(h) / pol["greedy-oracle"]["P"][0] - 1))
    ahead = int(row["t1_vs_greedy_anchor"] > 0)
    assert f"first traversal ahead of greedy-anchor: {ahead} of 1" in table
    assert f"{row['t1_vs_greedy_anchor']:+.2f}%" in table
    (paired,) = link_orders([(corpus, topic)], 3, traversals=3)
    assert row["orders"] == 3 and row["orders_mean"] == pytest.approx(paired["mean"])
    assert row["orders_se"] == pytest.approx(paired["se"]) and row["orders_verdict"] == paired["verdict"]
    assert paired["margins"][0] == pytest.approx(row["t1_vs_greedy_anchor"])  # order 0: the web as served
    assert "first traversal over 3 link orders (paired, by 2 standard errors): ahead " in table
    # the later traversals paired with the robot's own first on each order (order 0: the served table's)
    assert row["orders_last_mean"] == pytest.approx(paired["last_mean"])
    assert row["orders_last_verdict"] == paired["last_verdict"] and row["orders_dips_on"] == paired["dips_on"]
    assert paired["later"][0][-1] == pytest.approx(100 * (w[-1] / w[0] - 1))
    counts = ", ".join(f"{v} {int(row['orders_last_verdict'] == v)}" for v in ("improves", "flat", "falls"))
    assert f"own first over 3 link orders (paired, by 2 standard errors): {counts} of 1" in table
    # and the same without the URL-keyed directory term: the orders tool's figures for FEATURES_ONLY, the
    # shipped robot with only dir_weight changed (to 0)
    assert replace(SHIPPED, dir_weight=0.0, link_replay=None) == FEATURES_ONLY and SHIPPED.dir_weight > 0.0
    (features,) = link_orders([(corpus, topic)], 3, FEATURES_ONLY, traversals=3)
    assert row["features_last_mean"] == pytest.approx(features["last_mean"])
    assert row["features_last_se"] == pytest.approx(features["last_se"])
    assert row["features_last_verdict"] == features["last_verdict"]
    assert (features["margins"], features["later"]) != (paired["margins"], paired["later"])  # another robot
    own = ", ".join(f"{v} {int(row['features_last_verdict'] == v)}" for v in ("improves", "flat", "falls"))
    assert f"the replayed weight (what generalises): {own} of 1" in table
    assert all(len(runs) == 4 for runs in SPLITS.values())
    *seen, unseen = SPLITS.values()  # every split but the newest has been run once and is training now
    assert all(run in TRAINING for runs in seen for run in runs)
    assert not any(run in TRAINING for run in unseen)
    # a run that cannot load keeps the rows before it and says which command failed (exit 1)
    gone = str(tmp_path / "no-such-corpus")
    more = ["--corpus", gone, "--topic", topic, "--out", str(tmp_path / "part"), "--traversals", "2"]
    more += ["--orders", "0"]
    assert main(["evaluate", "--corpus", corpus, "--topic", topic, *more, "--random-runs", "1"]) == 1
    assert f"--corpus {gone}" in capsys.readouterr().err
    kept = json.loads((tmp_path / "part" / "evaluation.json").read_text(encoding="utf-8"))["runs"]
    assert [r["corpus"] for r in kept] == [corpus] and "orders_mean" not in kept[0]  # --orders 0: not paired
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--corpus", corpus, "--out", str(tmp_path / "x")])
    assert exc.value.code == 2 and "one --topic per --corpus" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(
            ["evaluate", "--split", "holdout-6", "--corpus", corpus, "--topic", topic, "--out", str(tmp_path)]
        )


def test_hindsight_ceiling_by_hand() -> None:
    """``compare --ceiling``: per run the best configuration in hindsight; a run where even that best is not
    ahead of greedy-anchor (<= 0) is behind under every rule that picks among them."""
    from oasis.replay.shipped import hindsight_ceiling

    rows = [
        {"t1_vs_greedy_anchor": [1.0, -2.0, 0.0, -0.5]},
        {"t1_vs_greedy_anchor": [0.5, -1.0, 0.0, 3.0]},
        {"t1_vs_greedy_anchor": [1.0, -3.0, -0.1, 2.0]},
    ]
    ceiling = hindsight_ceiling(rows)
    assert ceiling["best"] == [1.0, -1.0, 0.0, 3.0]
    assert ceiling["config"] == [0, 1, 0, 1]  # the first configuration among equals
    assert ceiling["behind"] == [1, 2] and ceiling["ahead"] == 2  # level (0.0) is not ahead
    with pytest.raises(ValueError, match="no configurations"):
        hindsight_ceiling([])
    with pytest.raises(ValueError):  # runs misaligned between configurations
        hindsight_ceiling([{"t1_vs_greedy_anchor": [1.0]}, {"t1_vs_greedy_anchor": [1.0, 2.0]}])


# -- the per-state fringe against plain references: the same decisions ---------------------------------------


class _PlainFringe:
    """The reference: every queued document's key computed afresh at each pop (``index.key``, then FIFO by
    push number), the best one whose host is ready by a full scan. O(n) per pop: small crawls only."""

    def __init__(self, index: Any, table: Any) -> None:
        self.index, self._table = index, table
        self.live: dict[int, int] = {}  # doc -> push number
        self._seq = 0

    def __len__(self) -> int:
        return len(self.live)

    def push(self, doc: int) -> None:
        self._seq += 1
        self.live[doc] = self._seq

    def remove(self, doc: int) -> None:
        self.live.pop(doc, None)

    def rekey(self, state: str) -> None:
        pass

    def rebuild(self) -> None:
        pass

    def _order(self) -> list[tuple[float, int, int]]:
        key = self.index.key
        return sorted((-key(doc), seq, doc) for doc, seq in self.live.items())

    def pop(self, host_ready: Any) -> int | None:
        host = self._table.host_id
        for _neg, _seq, doc in self._order():
            if host_ready is None or host_ready(host[doc]):
                del self.live[doc]
                return doc
        return None

    def peek(self) -> float | None:
        order = self._order()
        return -order[0][0] if order else None

    def fringe_order(self) -> list[int]:
        status = self._table.status
        return [doc for _n, _s, doc in self._order()] + [d for d, s in enumerate(status) if s == FLIGHT]


class _GlobalFringe:
    """The implementation this one replaced: one host-aware :class:`Frontier` of every document keyed by
    ``value + TIE_WEIGHT b`` (unrounded), every document of a state re-pushed when its c(x) moves. Its ties
    follow re-push order, so it is compared on crawls without tied keys."""

    def __init__(self, index: Any, table: Any) -> None:
        self.index, self._table = index, table
        self.frontier = Frontier()

    def _key(self, doc: int) -> float:
        index = self.index
        if index.states[doc] == SEED_STATE:
            return float("inf")
        return float(index.value(doc) + TIE_WEIGHT * index.base[doc])

    def __len__(self) -> int:
        return len(self.frontier)

    def push(self, doc: int) -> None:
        self.frontier.push(doc, self._key(doc), self._table.host_id[doc])

    def remove(self, doc: int) -> None:
        self.frontier.remove(doc)

    def rekey(self, state: str) -> None:
        group = self.index.group
        for doc in [d for d in self.frontier if group(d) == state]:
            self.push(doc)

    def rebuild(self) -> None:
        for doc in list(self.frontier):
            self.push(doc)

    def pop(self, host_ready: Any) -> int | None:
        return self.frontier.pop(host_ready)

    def peek(self) -> float | None:
        top = self.frontier.peek()
        return None if top is None else top[1]

    def fringe_order(self) -> list[int]:
        status = self._table.status
        return self.frontier.ordered() + [d for d, s in enumerate(status) if s == FLIGHT]


def _controller(fringe: str, config: Any, q: QTable | None = None) -> Any:
    ctl = make_controller("whittle", rng=random.Random(1), config=config, q=q)
    if fringe == "plain":
        ctl.fringe = _PlainFringe(ctl.index, ctl.docs)
    elif fringe == "global":
        ctl.fringe = _GlobalFringe(ctl.index, ctl.docs)
    return ctl


def _crawl(
    fringe: str, seed: int, *, config: Any, steps: int, polite: bool, ties: bool, tmp: Path
) -> list[Any]:
    """A random crawl of hosts h0..h5 (links to new and known pages, higher anchor relevance re-discovering,
    errors, deferrals, evictions, a checkpoint restore and a ``load_q`` midway); the decision trace."""
    rng = random.Random(seed)
    ctl = _controller(fringe, config)
    ctl.add_seeds([f"http://h{h}.test/" for h in range(3)])
    trace: list[Any] = []
    nxt = 0

    def score() -> float:
        return rng.choice((0.0, 0.25, 0.5, 1.0)) if ties else rng.random() ** 2

    for step in range(steps):
        blocked = {f"h{h}.test" for h in range(6) if rng.random() < 0.4} if polite else set()

        def ready(host: str, blocked: set[str] = blocked) -> bool:
            return host not in blocked

        batch = ctl.next_batch(rng.randint(1, 3), float(step), ready if polite else None)
        trace.append((step, batch, ctl.frontier_size(), ctl._fringe_value()))
        for url in batch:
            roll = rng.random()
            if roll < 0.05:
                ctl.defer(url)
                continue
            if roll < 0.1:
                ctl.report(FetchOutcome(url, "error", 0.0, []), float(step))
                continue
            links = []
            for _ in range(rng.randint(0, 4)):
                if nxt and rng.random() < 0.3:  # a known page, maybe by a better link
                    i = rng.randrange(nxt)
                    target = f"http://h{rng.randrange(6)}.test/d{i % 4}/{i}"
                else:
                    target, nxt = f"http://h{rng.randrange(6)}.test/d{nxt % 4}/{nxt}", nxt + 1
                links.append(Discovered(target, "", score()))
            ctl.report(FetchOutcome(url, "new", score(), links), float(step))
        if step == steps // 3:  # checkpoint restore
            state = json.loads(json.dumps(ctl.state_dict()))
            ctl = _controller(fringe, config)
            ctl.load_state(state)
            trace.append(("restored", ctl._fringe_order()))
        if step == steps // 2:  # load_q: a table of other values (scaled) re-keys everything
            table = ctl.q.copy()
            for name, row in list(table.rows().items()):
                table.put(name, (row[0], row[1] * 1.5, row[2]))
            table.save(tmp / f"{fringe}.json")
            ctl.load_q(tmp / f"{fringe}.json")
        if step % 37 == 36:
            trace.append(("evicted", ctl.evict_fringe(max(0, ctl.frontier_size() - 5))))
    trace.append(("end", ctl._fringe_order(), ctl.q.to_dict()))
    return trace


@pytest.mark.parametrize("polite", [False, True])
@pytest.mark.parametrize(
    "config",
    [EMPTY, SHIPPED, DIRS, replace(DIRS, dir_self=False)],
    ids=["empty", "shipped", "dirs", "self-out"],
)
def test_same_decisions_as_the_plain_and_the_global_fringe(tmp_path: Path, polite: bool, config: Any) -> None:
    fast = _crawl("fast", 11, config=config, steps=240, polite=polite, ties=True, tmp=tmp_path)
    plain = _crawl("plain", 11, config=config, steps=240, polite=polite, ties=True, tmp=tmp_path)
    assert fast == plain
    fast = _crawl("fast", 12, config=config, steps=240, polite=polite, ties=False, tmp=tmp_path)
    plain = _crawl("plain", 12, config=config, steps=240, polite=polite, ties=False, tmp=tmp_path)
    old = _crawl("global", 12, config=config, steps=240, polite=polite, ties=False, tmp=tmp_path)
    assert fast == plain
    # the replaced implementation: the same documents in the same order (its keys differ by rounding only)
    assert [t[:3] for t in fast if isinstance(t[0], int)] == [t[:3] for t in old if isinstance(t[0], int)]
    assert fast[-1][1] == old[-1][1]
    fetched = sum(len(t[1]) for t in fast if isinstance(t[0], int))
    assert fetched > 200 and len(fast[-1][2]["q"]) > 10  # it crawled and learned (several re-fits)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), polite=st.booleans(), ties=st.booleans(), dirs=st.booleans())
def test_property_same_decisions_as_the_plain_fringe(
    tmp_path: Path, seed: int, polite: bool, ties: bool, dirs: bool
) -> None:
    config = DIRS if dirs else EMPTY
    fast = _crawl("fast", seed, config=config, steps=90, polite=polite, ties=ties, tmp=tmp_path)
    assert fast == _crawl("plain", seed, config=config, steps=90, polite=polite, ties=ties, tmp=tmp_path)


def test_stale_entries_stay_bounded() -> None:
    """Many re-keys (every fetch moves a c(x)) leave at most twice the live state entries (+64) behind."""
    ctl = make_controller("whittle", rng=random.Random(1), config=EMPTY)
    ctl.add_seeds(["http://h0.test/"])
    rng = random.Random(5)
    for i in range(3000):
        batch = ctl.next_batch(1, 0.0)
        if not batch:
            break
        links = [Discovered(f"http://h{rng.randrange(9)}.test/{i}-{j}", "", rng.random()) for j in range(2)]
        ctl.report(FetchOutcome(batch[0], "new", rng.random(), links), 0.0)
        fringe = ctl.fringe  # type: ignore[attr-defined]
        assert len(fringe._states) <= 2 * len(fringe._entry) + 64
        assert len(fringe) == sum(len(q) for q in fringe.queues.values()) == ctl.frontier_size()
    assert ctl.frontier_size() > 2000


# -- session 11: the in-link weight learned on the web, and exploration ------------------------------------


def test_line_sse_by_hand() -> None:
    """The squared error of the least-squares line with a non-negative slope, from sums: points on a line
    leave 0; a falling cloud gets slope 0 (the centred sum of squares of y); one x gets slope 0 too."""
    from oasis.robot.scheduling.equations import line_sse

    def sums(xy: list[tuple[float, float]]) -> tuple[float, ...]:
        n = float(len(xy))
        return (
            n,
            sum(x for x, _ in xy),
            sum(y for _, y in xy),
            sum(x * x for x, _ in xy),
            sum(x * y for x, y in xy),
            sum(y * y for _, y in xy),
        )

    assert line_sse(*sums([(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)])) == pytest.approx(0.0, abs=1e-12)
    assert line_sse(*sums([(0.0, 2.0), (1.0, 1.0), (2.0, 0.0)])) == pytest.approx(
        2.0
    )  # beta 0: Syy - n ybar^2
    assert line_sse(*sums([(1.0, 0.0), (1.0, 2.0)])) == pytest.approx(2.0)
    # (0, 0), (1, 0), (2, 3): beta = Sxy / Sxx = 3 / 2, SSE = Syy - beta Sxy = 6 - 4.5 = 1.5
    assert line_sse(*sums([(0.0, 0.0), (1.0, 0.0), (2.0, 3.0)])) == pytest.approx(1.5)
    assert line_sse(0.0, 0.0, 0.0, 0.0, 0.0, 0.0) == 0.0


def test_link_weight_decides_once_by_hand() -> None:
    """LinkWeight by hand: samples whose reward is their best link's (B) and not their mean's (M) fit k = 0
    exactly, so at the first check (link_min 3) the weight moves from .5 to 0; it then holds, whatever the
    later samples say. Rewards that follow M move it to 1; a margin the evidence does not clear keeps .5."""
    from oasis.robot.scheduling.residual import LinkWeight

    cfg = replace(SHIPPED, link_learn=0.05, link_min=3, link_check=1)
    lw = LinkWeight(cfg)
    best_rules = [(0.5, 0.1, 0.5), (0.2, 0.2, 0.2), (0.9, 0.3, 0.9)]
    assert [lw.add(b, m, r, 0.5) for b, m, r in best_rules] == [None, None, 0.0]
    assert lw.errors()[0.0] == pytest.approx(0.0, abs=1e-12) and lw.errors()[0.5] > 0.0
    assert all(lw.add(b, m, m, 0.0) is None for b, m, _r in best_rules * 5)  # decided: it holds
    state = lw.state()
    assert state[3] == -1.0  # "decided", a finite float in a checkpoint
    again = LinkWeight(cfg)
    again.restore(state)
    assert again.errors() == lw.errors() and again.add(0.9, 0.1, 0.1, 0.0) is None
    mean_rules = LinkWeight(cfg)
    assert [mean_rules.add(b, m, m, 0.5) for b, m, _r in best_rules] == [None, None, 1.0]
    strict = LinkWeight(replace(cfg, link_learn=0.999999))
    noisy = [(0.5, 0.1, 0.3), (0.2, 0.2, 0.25), (0.9, 0.3, 0.5)]
    assert [strict.add(b, m, r, 0.5) for b, m, r in noisy] == [None, None, None]
    with pytest.raises(ValueError, match="link_mean must be one of"):
        replace(SHIPPED, link_mean=0.4)
    with pytest.raises(ValueError, match="link_learn"):
        replace(SHIPPED, link_learn=1.0)
    with pytest.raises(ValueError, match="explore_every"):
        replace(SHIPPED, explore_every=-1)


def _explore_order(ctl: Any) -> list[str]:
    """Seed s (relevance .5) links to y1..y3 (anchor 0: b .5 each); y1 (relevance 0) links to z (anchor .3: b
    .3) and w (anchor .25: b .25), y2 (relevance 0) links to z again (anchor 0). Returns the fetch order."""
    pages: Pages = {
        "http://w/s": (0.5, [("http://w/y1", 0.0), ("http://w/y2", 0.0), ("http://w/y3", 0.0)]),
        "http://w/y1": (0.0, [("http://w/z", 0.3), ("http://w/w", 0.25)]),
        "http://w/y2": (0.0, [("http://w/z", 0.0)]),
    }
    return _fetch_order(ctl, pages, 6)


def test_exploration_fetches_greedy_anchors_page_at_every_nth_disagreement() -> None:
    """Exploration by hand (rewards teach nothing here: c(x) shrunk away, no calibration, no learned weight).
    After s and y1..y3 (b .5 each, first in, first out) the index's in-link mean puts z at .5 x .3 + .5 x .15
    = .225, below w's .25, where greedy-anchor keeps z's best link (.3): one disagreement. With
    ``explore_every`` 1 the index fetches greedy-anchor's z there; with 2 the first disagreement is its own;
    with learning off there is no exploration at all."""
    base = replace(PLAIN, calibrate=False, shrink=1e12, link_mean=0.5, link_learn=None)
    ys = ["http://w/s", "http://w/y1", "http://w/y2", "http://w/y3"]
    anchor = make_controller("greedy-anchor", rng=random.Random(0), config=PLAIN)
    assert _explore_order(anchor) == [*ys, "http://w/z", "http://w/w"]
    plain = make_controller("whittle", rng=random.Random(0), config=base)
    assert _explore_order(plain) == [*ys, "http://w/w", "http://w/z"]
    every = make_controller("whittle", rng=random.Random(0), config=replace(base, explore_every=1))
    assert _explore_order(every) == [*ys, "http://w/z", "http://w/w"] and every.index.disagreements == 1
    second = make_controller("whittle", rng=random.Random(0), config=replace(base, explore_every=2))
    assert _explore_order(second) == [*ys, "http://w/w", "http://w/z"] and second.index.disagreements == 1
    off = make_controller("whittle", rng=random.Random(0), config=replace(base, explore_every=1, learn=False))
    assert _explore_order(off) == [*ys, "http://w/w", "http://w/z"] and off.index.disagreements == 0


def test_learned_link_weight_re_keys_the_fringe_and_survives_a_checkpoint() -> None:
    """The learned weight in the controller: two samples already say the reward is the best link's (B), and
    the third, y's fetch (links .5 from s, 0 from a and b: B .5, M 1/6, reward .5), is counted at its fetch
    (link_min 3): k moves from .5 to 0 and every fringe page with two or more links is re-keyed by its best
    link (z: .3, no longer .5 x .3 + .5 x .15 = .225). The checkpoint carries the weight and the sums."""
    cfg = replace(PLAIN, calibrate=False, shrink=1e12, link_mean=0.5, link_learn=0.05, link_min=3)
    ctl = make_controller("whittle", rng=random.Random(0), config=cfg)
    idx = ctl.index
    assert idx.link_weight.add(0.9, 0.3, 0.9, 0.5) is None and idx.link_weight.add(0.2, 0.2, 0.2, 0.5) is None
    ctl.add_seeds(["http://w/s"])
    ctl.next_batch(1, 0.0)
    links = [Discovered(u, "", 0.0) for u in ("http://w/a", "http://w/b", "http://w/y")]
    ctl.report(FetchOutcome("http://w/s", "new", 0.5, links), 0.0)
    for step, url in enumerate(("http://w/a", "http://w/b"), start=1):
        assert ctl.next_batch(1, float(step)) == [url]
        z_anchor = 0.3 if url.endswith("a") else 0.0
        out = [Discovered("http://w/y", "", 0.0), Discovered("http://w/z", "", z_anchor)]
        ctl.report(FetchOutcome(url, "new", 0.0, out), float(step))
    z = ctl.docs.ids["http://w/z"]
    assert idx.links[z] == 2.0 and idx.base[z] == pytest.approx(0.225) and idx.link_mean == 0.5
    assert ctl.next_batch(1, 3.0) == ["http://w/y"]  # .5 x .5 + .5 x .5 / 3 = .333, above z's .225
    ctl.report(FetchOutcome("http://w/y", "new", 0.5, []), 3.0)
    assert idx.link_mean == 0.0 and idx.base[z] == pytest.approx(0.3)
    state = json.loads(json.dumps(ctl.state_dict()))
    again = make_controller("whittle", rng=random.Random(0), config=cfg)
    again.load_state(state)
    assert again.index.link_mean == 0.0 and again.index.link_weight.state() == idx.link_weight.state()
    assert again.index.link_weight.add(0.5, 0.0, 0.0, 0.0) is None  # decided before the checkpoint: holds
    # each controller (a replay traversal) decides anew from the training choice: no table carries it
    fresh = make_controller("whittle", rng=random.Random(0), config=cfg, q=ctl.q)
    assert fresh.index.link_mean == 0.5 and fresh.index.link_weight.n == 0.0


def test_a_corrupt_link_section_of_a_checkpoint_is_refused_or_ignored() -> None:
    """A checkpoint's ``link`` section (the learned weight, the exploration count, the sums): a non-number is
    a ValueError (the crawler turns it into "cannot be resumed; move it aside"), a weight outside LINK_GRID or
    sums of the wrong length are ignored (the training choice, no samples), never half-applied."""
    ctl = make_controller("whittle", rng=random.Random(0), config=SHIPPED)
    ctl.add_seeds(["http://w/s"])
    ctl.next_batch(1, 0.0)
    ctl.report(FetchOutcome("http://w/s", "new", 0.5, [Discovered("http://w/a", "", 0.1)]), 0.0)
    state = json.loads(json.dumps(ctl.state_dict()))
    for bad in (["x", 1.0], [0.5, "y"]):
        with pytest.raises(ValueError):
            make_controller("whittle", rng=random.Random(0), config=SHIPPED).load_state(
                {**state, "link": bad}
            )
    odd = make_controller("whittle", rng=random.Random(0), config=SHIPPED)
    odd.load_state({**state, "link": [7.0, 3.0, 1.0]})
    assert odd.index.link_mean == SHIPPED.link_mean and odd.index.link_weight.n == 0.0
    assert odd.index.disagreements == 3


# -- session 15: the directory term leaving a page's own fetches out ----------------------------------------

SELF_OUT = replace(DIRS, dir_self=False)


def _traversal(
    config: Any, q: QTable | None, pages: dict[str, tuple[float, list[tuple[str, float]]]]
) -> list[str]:
    """One static traversal of a hand-made web (URL -> (relevance, [(link target, anchor relevance)])) from
    its first page, one fetch per step; the table ``q`` is learned in place (carried to the next traversal
    as ``oasis replay`` does). Returns the fetch order."""
    ctl = make_controller("whittle", rng=random.Random(0), config=config, q=q)
    ctl.add_seeds([next(iter(pages))])
    order: list[str] = []
    for step in range(10 * len(pages)):
        batch = ctl.next_batch(1, float(step))
        if not batch:
            break
        for url in batch:
            if url in order:
                ctl.report(FetchOutcome(url, "unchanged", pages[url][0], []), float(step))
                continue
            order.append(url)
            rel, links = pages[url]
            ctl.report(FetchOutcome(url, "new", rel, [Discovered(u, "", a) for u, a in links]), float(step))
        if len(order) == len(pages):
            break
    return order


def _dir_part(ctl: Any, url: str) -> float:
    """A fringe page's d(D): its Q_i(1) less its estimate (b_i, without calibration) and its state's c(x)."""
    idx, doc = ctl.index, ctl.docs.ids[url]
    return float(idx.value(doc) - idx.base[doc] - idx.correction(idx.states[doc]))


def test_leave_self_out_directory_term_by_hand() -> None:
    """The page's own fetches leave its directory's d(D), by hand (greedy-anchor's estimate, shrink 1,
    dir_weight 1, dir_shrink 1). Traversal 1 (seed s, relevance .5, links a/b anchor .1, a/c anchor .3, e/f
    anchor .25): c goes first (.8) and realises .2: directory a/ learns the residual .2 - .8 - 0 = -.6, which
    leave-self-out also keeps as c's own part (row ds| + a/c: -.6 over 1 fetch); b (its own part e_b) and f
    follow. On traversal 2 the carried table keys c with d(a/) = (-.6 + e_b) / (2 + 1) when its own fetch
    counts (as shipped), and with d = e_b / (1 + 1), b's part alone, when it is left out; b (fetched too) with
    -.6 / 2, c's part alone; f, alone in e/, with its own residual e_f / 2 (as shipped: its memory) or 0."""
    from oasis.robot.scheduling.residual import OWN_ROW

    seed = "http://w/s"
    web = {
        seed: (0.5, [("http://w/a/b", 0.1), ("http://w/a/c", 0.3), ("http://w/e/f", 0.25)]),
        "http://w/a/b": (0.0, []),
        "http://w/a/c": (0.2, []),
        "http://w/e/f": (0.0, []),
    }
    first = {}
    for name, own in (("in", True), ("out", False)):
        config = replace(PLAIN, shrink=1.0, dir_weight=1.0, dir_shrink=1.0, calibrate=False, dir_self=own)
        q = QTable(0.0)
        first[name] = _traversal(config, q, web)
        assert first[name][:2] == [seed, "http://w/a/c"]
        rows = q.rows()
        total, n = rows[DIR_ROW + "http://w/a/"][0] * 2.0, rows[DIR_ROW + "http://w/a/"][2]
        assert n == 2.0  # b and c were fetched from a/
        if own:
            assert not any(k.startswith(OWN_ROW) for k in rows)  # as shipped: no per-URL rows
            e_b = total + 0.6
        else:
            assert rows[OWN_ROW + "http://w/a/c"] == pytest.approx((-0.6, 0.0, 1.0))
            e_b, n_b = rows[OWN_ROW + "http://w/a/b"][0], rows[OWN_ROW + "http://w/a/b"][2]
            assert n_b == 1.0 and total == pytest.approx(-0.6 + e_b)
            assert rows[OWN_ROW + "http://w/e/f"] == rows[DIR_ROW + "http://w/e/"]  # f alone in e/
        # traversal 2 from the carried table, stopped after the seed's fetch: the fringe's keys
        ctl = make_controller("whittle", rng=random.Random(0), config=config, q=q.copy())
        ctl.add_seeds([seed])
        assert ctl.next_batch(1, 0.0) == [seed]
        ctl.report(FetchOutcome(seed, "new", 0.5, [Discovered(u, "", a) for u, a in web[seed][1]]), 0.0)
        if own:
            assert _dir_part(ctl, "http://w/a/c") == pytest.approx((-0.6 + e_b) / 3.0)
            assert _dir_part(ctl, "http://w/a/b") == pytest.approx((-0.6 + e_b) / 3.0)
        else:
            assert _dir_part(ctl, "http://w/a/c") == pytest.approx(e_b / 2.0)
            assert _dir_part(ctl, "http://w/a/b") == pytest.approx(-0.6 / 2.0)
        e_f = rows[DIR_ROW + "http://w/e/"][0]
        assert e_f < 0.0  # f's own residual: its memory as shipped, none left out
        assert _dir_part(ctl, "http://w/e/f") == pytest.approx(e_f / 2.0 if own else 0.0)
    assert first["in"] == first["out"]  # the first traversal is the same


def _folders(seed: int, n: int, per_folder: int) -> dict[str, tuple[float, list[tuple[str, float]]]]:
    """A random web of ``n`` pages, ``per_folder`` pages per URL directory (1: every page its own folder, as
    MkDocs writes a site), with relevances and anchors drawn at random."""
    rng = random.Random(seed)
    urls = [f"http://w/f{i // per_folder}/p{i}.html" for i in range(n)]
    web = {}
    for url in urls:
        targets = rng.sample(urls, 4)
        web[url] = (rng.random() ** 3, [(t, rng.random() * 0.3) for t in targets if t != url])
    for i in range(1, n):  # every page reachable: page i - 1 links to page i
        if (urls[i], 0.0) not in web[urls[i - 1]][1]:
            web[urls[i - 1]][1].append((urls[i], 0.0))
    return web


@pytest.mark.parametrize("seed", [1, 2])
def test_leave_self_out_has_no_memory_on_a_web_with_one_page_per_folder(seed: int) -> None:
    """On a web whose every page has its own folder, leaving the page's own fetches out of d(D) leaves no
    directory evidence at all: every traversal's order is the robot's without the directory term, while with
    the page's own fetches in (as shipped) a later traversal differs (it remembers pages). On a web with
    several pages per folder the directory still teaches: a later order differs from the features-only one.
    On every web the first traversal is the shipped term's."""
    web = _folders(seed, 120, 1)
    runs = {}
    for name, config in (("in", DIRS), ("out", SELF_OUT), ("none", replace(DIRS, dir_weight=0.0))):
        q = QTable(0.0)
        runs[name] = [_traversal(config, q, web) for _ in range(3)]
    assert all(len(order) == len(web) for order in runs["out"])
    assert runs["out"] == runs["none"]
    assert runs["in"][0] == runs["out"][0] and runs["in"][1:] != runs["out"][1:]
    shared = _folders(seed, 120, 6)
    orders = {}
    for name, config in (("in", DIRS), ("out", SELF_OUT), ("none", replace(DIRS, dir_weight=0.0))):
        q = QTable(0.0)
        orders[name] = [_traversal(config, q, shared) for _ in range(3)]
    assert orders["in"][0] == orders["out"][0]
    assert orders["out"][1:] != orders["none"][1:]


def test_leave_self_out_survives_a_checkpoint() -> None:
    """A later traversal's controller, restored from its checkpoint mid-crawl, keys every fringe page with
    the same leave-self-out d(D) (the directories' sums as of the last re-fit are saved) and decides alike."""
    config = SELF_OUT  # with the in-link mean: its sums are checkpointed too (session 16)
    web = _folders(3, 120, 3)
    q = QTable(0.0)
    _traversal(config, q, web)
    ctl = make_controller("whittle", rng=random.Random(0), config=config, q=q)
    ctl.add_seeds([next(iter(web))])
    for step in range(30):
        for url in ctl.next_batch(1, float(step)):
            ctl.report(
                FetchOutcome(url, "new", web[url][0], [Discovered(u, "", a) for u, a in web[url][1]]),
                float(step),
            )
    state = json.loads(json.dumps(ctl.state_dict()))
    assert state["published_sums"]
    restored = make_controller("whittle", rng=random.Random(0), config=config)
    restored.load_state(state)
    queued = [d for d in ctl._fringe_order() if ctl.docs.status[d] != FLIGHT]
    own = [d for d in queued if ctl.index.own_n[d]]
    assert own and len(queued) > 20  # pages fetched on traversal 1 are queued with their own part
    for doc in queued:
        assert restored.index.key(doc) == ctl.index.key(doc)
    assert [restored.next_batch(1, 99.0) for _ in range(20)] == [ctl.next_batch(1, 99.0) for _ in range(20)]
    # a corrupt section is a ValueError (the crawler's "cannot be resumed; move it aside"), never half-applied
    name = next(iter(state["published_sums"]))
    for bad in ([1.0, 2.0], {name: [1.0]}, {name: ["x", 1.0]}):
        with pytest.raises(ValueError):
            make_controller("whittle", rng=random.Random(0), config=config).load_state(
                {**state, "published_sums": bad}
            )


# -- session 16: the in-link evidence survives a checkpoint -------------------------------------------------


def _linked_web_run(ctl: Any, start: int, steps: int, rng: random.Random) -> list[str]:
    """Fetch ``steps`` pages, one per step, of a web whose pages link to 5 of 80 others (so most fringe
    pages are reached by several links: the in-link mean differs from the best link); the relevance and the
    anchors are drawn from ``rng`` (the same draws for two controllers given equal generators)."""
    order: list[str] = []
    for step in range(start, start + steps):
        batch = ctl.next_batch(1, float(step))
        if not batch:
            break
        order.extend(batch)
        links = [
            Discovered(f"http://h{j % 3}.example.org/p{j}.html", "", rng.random())
            for j in rng.sample(range(80), 5)
        ]
        ctl.report(FetchOutcome(batch[0], "new", rng.random(), links), float(step))
    return order


@pytest.mark.parametrize("link_learn", [None, 0.05])
def test_the_in_link_evidence_survives_a_checkpoint(link_learn: float | None) -> None:
    """With the in-link mean (as shipped), a fringe page's key mixes its best link with the mean over all its
    links; the checkpoint keeps each queued page's best link and link sums, so a restored controller keys
    every page as before and, fed the same outcomes, makes the same decisions as the one never stopped
    (before session 16 the restored estimate counted as one link and later decisions moved)."""
    cfg = replace(SHIPPED, link_learn=link_learn)
    ctl = make_controller("whittle", rng=random.Random(1), config=cfg)
    ctl.add_seeds(["http://h0.example.org/p0.html"])
    _linked_web_run(ctl, 0, 25, random.Random(7))
    idx = ctl.index
    queued = [d for d in ctl._fringe_order() if ctl.docs.status[d] != FLIGHT]
    assert sum(idx.links[d] > 1 for d in queued) > 10  # several pages reached by more than one link
    restored = make_controller("whittle", rng=random.Random(1), config=cfg)
    restored.load_state(json.loads(json.dumps(ctl.state_dict())))
    for doc in queued:
        assert restored.index.links[doc] == idx.links[doc]
        assert restored.index.key(doc) == idx.key(doc)
    later = random.Random(8)
    assert _linked_web_run(restored, 25, 40, random.Random(8)) == _linked_web_run(ctl, 25, 40, later)


def test_a_corrupt_links_section_of_a_checkpoint_is_a_value_error() -> None:
    """A ``links`` section that is not a list of [doc, best p, best a, sum p, sum a, n] is a ValueError (the
    crawler's "cannot be resumed; move it aside"), never a half-restored fringe; a checkpoint without one
    (written before session 16) restores each page's estimate as one link."""
    ctl = make_controller("whittle", rng=random.Random(1), config=SHIPPED)
    ctl.add_seeds(["http://h0.example.org/p0.html"])
    _linked_web_run(ctl, 0, 10, random.Random(7))
    state = json.loads(json.dumps(ctl.state_dict()))
    assert state["links"]
    nan, zero = [1, float("nan"), 0.2, 0.3, 0.4, 2.0], [1, 0.1, 0.2, 0.3, 0.4, 0.0]
    for bad in ({"0": 1}, [[1, 0.1, 0.2]], [[1, "x", 0.2, 0.3, 0.4, 2.0]], [5], [nan], [zero]):
        with pytest.raises(ValueError):
            make_controller("whittle", rng=random.Random(1), config=SHIPPED).load_state(
                {**state, "links": bad}
            )
    old = {k: v for k, v in state.items() if k != "links"}
    before = make_controller("whittle", rng=random.Random(1), config=SHIPPED)
    before.load_state(old)
    queued = [d for d in ctl._fringe_order() if ctl.docs.status[d] != FLIGHT]
    assert all(before.index.links[d] == 1.0 for d in queued)


def test_by_size_splits_the_paired_rows_at_the_web_size_by_hand() -> None:
    """``by_size``: the rows of webs under the threshold, then the rest, each with its run count, the mean
    of the paired margins and the verdict counts; a group without runs is left out."""
    from oasis.replay.shipped import SMALL_WEB, by_size

    def row(pages: int, mean: float, verdict: str) -> dict[str, Any]:
        return {"pages": pages, "mean": mean, "verdict": verdict}

    rows = [row(40, -2.0, "behind"), row(99, 1.0, "level"), row(100, 3.0, "ahead"), row(3000, 0.5, "ahead")]
    small, large = by_size(rows)
    assert small == {"label": "under 100 pages", "runs": 2, "mean": -0.5, "ahead": 0, "level": 1, "behind": 1}
    assert large == {
        "label": "100 pages or more",
        "runs": 2,
        "mean": 1.75,
        "ahead": 2,
        "level": 0,
        "behind": 0,
    }
    assert SMALL_WEB == 100
    (only,) = by_size(rows, threshold=30)
    assert only["label"] == "30 pages or more" and only["runs"] == 4 and only["mean"] == 0.625
    (tiny,) = by_size(rows[:1])
    assert tiny["label"] == "under 100 pages" and tiny["behind"] == 1
