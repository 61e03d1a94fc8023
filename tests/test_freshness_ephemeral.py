"""papers/002: the ephemeral model, the closed-form Whittle index (Theorem 1), the bisection solver."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.freshness.ephemeral import (
    active_step,
    alpha_i,
    load_model,
    model_from_json,
    orbit,
    paper_model,
    passive_step,
    u_i,
    whittle_index_discrete,
)
from oasis.freshness.rvi import ephemeral_arm, whittle_index_bisection
from oasis.robot.scheduling.recrawl import eta, whittle_index


def test_u_and_alpha_hand_worked() -> None:
    # Eq. 1, Table 1's source 1: 250 / 0.7 * (1 - e^{-0.7}) = 179.79 (the paper's "crawl only source 1")
    assert u_i(1.0, 0.7, 250.0, 1.0) == pytest.approx(250 / 0.7 * (1 - math.exp(-0.7)))
    assert u_i(1.0, 0.7, 250.0, 1.0) == pytest.approx(179.79, abs=0.005)
    assert alpha_i(0.35, 2.0) == pytest.approx(math.exp(-0.7))
    m = paper_model()
    assert m.u()[1] == pytest.approx(250 * 0.7 / 0.35 * (1 - math.exp(-0.35)))


def test_dynamics_eqs_2_3() -> None:
    assert passive_step(10.0, 0.5, 3.0) == 8.0  # Eq. 2: alpha x + u
    assert active_step(3.0) == 3.0  # Eq. 3: reset to u
    # the orbit after a crawl: X(1) = u, X(k+1) = alpha X(k) + u
    x = 0.0
    for k in range(1, 6):
        x = passive_step(x, 0.5, 3.0)
        assert orbit(k, 0.5, 3.0) == pytest.approx(x)


def test_theorem1_hand_worked() -> None:
    # alpha = 1/2, u = 1: orbit X(1) = 1, X(2) = 1.5, X(3) = 1.75; u* = 2
    # eta(X(k)) = k: log_{1/2}((1 - 0.5 X(k)) / 1) = log_{1/2}(2^-k) = k
    assert [eta(orbit(k, 0.5, 1.0), 0.5, 1.0) for k in (1, 2, 3)] == [1, 2, 3]
    # gamma = eta ((1 - alpha) x - u) + (1 - alpha^eta) / (1 - alpha) u
    assert whittle_index(1.0, 0.5, 1.0) == pytest.approx(1 * (0.5 - 1) + 1.0)  # 0.5
    assert whittle_index(1.5, 0.5, 1.0) == pytest.approx(2 * (0.75 - 1) + 1.5)  # 1.0
    assert whittle_index(1.75, 0.5, 1.0) == pytest.approx(3 * (0.875 - 1) + 1.75)  # 1.375
    # between orbit points: x = 1.2 -> eta = ceil(log_{1/2}(0.4)) = 2 -> 2 (0.6 - 1) + 1.5 = 0.7
    assert eta(1.2, 0.5, 1.0) == 2
    assert whittle_index(1.2, 0.5, 1.0) == pytest.approx(0.7)
    # the crawl cost divides the index
    assert whittle_index(1.5, 0.5, 1.0, C=4.0) == pytest.approx(0.25)
    # the Remark's simplified form on the orbit
    assert whittle_index_discrete(3, 0.5, 1.0) == pytest.approx(1.375)


def test_index_limits_at_and_above_the_ceiling() -> None:
    # x -> u* gives u*; above u* (transient states) the index is x / C, continuous at u*
    assert whittle_index(2.0 - 1e-9, 0.5, 1.0) == pytest.approx(2.0, rel=1e-6)
    assert whittle_index(2.0, 0.5, 1.0) == pytest.approx(2.0)
    assert whittle_index(3.0, 0.5, 1.0, C=2.0) == pytest.approx(1.5)
    assert whittle_index(0.0, 0.5, 1.0) == 0.0


@pytest.mark.parametrize("source", [0, 1, 2, 3])
def test_bisection_solver_agrees_with_closed_form(source: int) -> None:
    m = paper_model()
    a, u = float(m.alpha()[source]), float(m.u()[source])
    arm, _ = ephemeral_arm(a, u)
    for k in (0, 1, 3):  # orbit states X(1), X(2), X(4)
        assert whittle_index_bisection(arm, k) == pytest.approx(whittle_index_discrete(k + 1, a, u), rel=1e-5)
    x0 = u + 0.37 * (u / (1 - a) - u)  # a state off the orbit
    arm, s = ephemeral_arm(a, u, x0=x0)
    assert whittle_index_bisection(arm, s) == pytest.approx(whittle_index(x0, a, u), rel=1e-5)


def test_bisection_with_crawl_cost() -> None:
    arm, _ = ephemeral_arm(0.6, 5.0, C=2.5)
    assert whittle_index_bisection(arm, 2) == pytest.approx(
        whittle_index_discrete(3, 0.6, 5.0, C=2.5), rel=1e-5
    )


@settings(max_examples=60, deadline=None)
@given(
    alpha=st.floats(0.05, 0.95),
    u=st.floats(0.1, 100.0),
    f1=st.floats(0.0, 1.2),
    f2=st.floats(0.0, 1.2),
)
def test_index_increasing_in_state(alpha: float, u: float, f1: float, f2: float) -> None:
    u_star = u / (1 - alpha)
    x1, x2 = sorted((f1 * u_star, f2 * u_star))
    assert whittle_index(x1, alpha, u) <= whittle_index(x2, alpha, u) + 1e-9 * u_star


def test_model_json_roundtrip_and_errors(tmp_path: Path) -> None:
    m = paper_model()
    f = tmp_path / "s.json"
    f.write_text(json.dumps(m.to_json()))
    assert load_model(f) == m
    with pytest.raises(ValueError, match="sources"):
        model_from_json({"T": 1.0})
    with pytest.raises(ValueError, match="mu"):
        model_from_json({"sources": [{"xi": 1.0, "mu": -1.0, "lam": 1.0}]})
    with pytest.raises(ValueError, match="lacks"):
        model_from_json({"sources": [{"xi": 1.0}]})
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="JSON"):
        load_model(tmp_path / "bad.json")
    assert np.all(m.u_star() > m.u())
