"""Hand-worked cases for papers/004 Eqs. 9-11 and the state extractors / Q-table."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.robot.scheduling.equations import q_update, reward, whittle_index
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.state import (
    SEED_STATE,
    DiscoveryContext,
    GeneralisingState,
    make_state_extractor,
    relevance_bin,
)


def test_whittle_index_eq9() -> None:
    assert whittle_index(0.75, 0.25) == 0.5
    assert whittle_index(0.1, 0.3) == pytest.approx(-0.2)


def test_q_update_eq10_no_children() -> None:
    # (1 - 0.5) * 2 + 0.5 * (1 + 0.9 * (0.5 + 0)) = 1 + 0.5 * 1.45 = 1.725
    assert q_update(2.0, 1.0, 0.5, [], alpha=0.5, gamma=0.9) == pytest.approx(1.725)


def test_q_update_eq10_child_discovery_bonus() -> None:
    # children Q 0.2 and 0.3: target 0.4 + 0.5 * (0.1 + 0.5) = 0.7; alpha 0.25: 0.75 * 1 + 0.25 * 0.7 = 0.925
    assert q_update(1.0, 0.4, 0.1, [0.2, 0.3], alpha=0.25, gamma=0.5) == pytest.approx(0.925)


def test_q_update_alpha_one_is_the_target() -> None:
    assert q_update(123.0, 0.3, 1.0, [1.0, 1.0], alpha=1.0, gamma=0.1) == pytest.approx(0.6)


@pytest.mark.parametrize(("alpha", "gamma"), [(0.0, 0.5), (1.5, 0.5), (0.5, 1.0), (0.5, -0.1)])
def test_q_update_rejects_bad_parameters(alpha: float, gamma: float) -> None:
    with pytest.raises(ValueError):
        q_update(0.0, 0.0, 0.0, [], alpha=alpha, gamma=gamma)


def test_reward_eq11_each_case() -> None:
    assert reward("new", 0.0, 0.7) == 0.7  # first retrieval: r_k+1
    assert reward("modified", 0.4, 0.7) == 0.7  # modified: max(r_k, r_k+1)
    assert reward("modified", 0.9, 0.7) == 0.9
    assert reward("deleted", 0.4, 0.0) == 0.4  # deleted: r_k
    assert reward("unchanged", 0.4, 0.4) == 0.0
    assert reward("error", 0.4, 0.4) == 0.0
    assert reward("new", 0.0, 0.7, active=False) == 0.0  # passive arm: 0
    with pytest.raises(ValueError):
        reward("moved", 0.1, 0.1)
    with pytest.raises(ValueError):
        reward("new", -0.1, 0.1)


@settings(max_examples=60)
@given(
    q=st.floats(-5, 5),
    g=st.floats(0, 1),
    qn=st.floats(-5, 5),
    kids=st.lists(st.floats(-5, 5), max_size=5),
    c=st.floats(-3, 3),
    alpha=st.floats(0.01, 1.0),
    gamma=st.floats(0.0, 0.99),
)
def test_q_update_is_a_convex_combination(
    q: float, g: float, qn: float, kids: list[float], c: float, alpha: float, gamma: float
) -> None:
    new = q_update(q, g, qn, kids, alpha=alpha, gamma=gamma)
    target = g + gamma * (qn + sum(kids))
    assert min(q, target) - 1e-9 <= new <= max(q, target) + 1e-9
    # Eq. 9: the index is unchanged when a constant is added to both controls' Q-values
    assert whittle_index(q + c, qn + c) == pytest.approx(whittle_index(q, qn))


def test_relevance_bins_and_states() -> None:
    assert relevance_bin(0.0, 8) == 0
    assert relevance_bin(1.0, 8) == 7
    assert relevance_bin(0.25, 8) == 4  # sqrt(0.25) * 8 = 4
    assert relevance_bin(2.0, 8) == 7
    ctx = DiscoveryContext(
        url="http://h/x",
        parent_url="http://h/p",
        parent_relevance=0.25,
        anchor_relevance=0.0,
        depth=9,
        host="h",
    )
    assert make_state_extractor("parent")(ctx) == "p:http://h/p"
    assert make_state_extractor("url")(ctx) == "u:http://h/x"
    assert make_state_extractor("generalising")(ctx) == "g:pr4|ar0|d6"
    assert GeneralisingState(use_host=True)(ctx) == "g:pr4|ar0|d6|hh"
    seed = DiscoveryContext(url="http://h/", parent_url=None)
    assert make_state_extractor("parent")(seed) == SEED_STATE
    with pytest.raises(ValueError):
        make_state_extractor("nope")


def test_qtable_roundtrip_and_index(tmp_path: Path) -> None:
    q = QTable(q_init=0.1)
    assert q.get("x", 1) == 0.1 and q.index("x") == 0.0
    q.set("x", 1, 2.0)
    q.set("x", 0, 0.5)
    assert q.index("x") == 1.5 and q.value("x") == 2.0 and q.visits("x") == 1
    path = tmp_path / "q.json"
    q.save(path)
    back = QTable.load(path)
    assert back.get("x", 1) == 2.0 and back.get("x", 0) == 0.5 and back.q_init == 0.1 and len(back) == 1
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        QTable.load(path)
    path.write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a Q-table"):
        QTable.load(path)
    # every damaged table is a ValueError naming its file (before: a bare codec error, a bare float error)
    for damaged, why in (
        (b"\xff\xfe\x00", "not UTF-8 text"),
        (b'{"format": "oasis-qtable/1", "q": {"s": ["x", 1, 2]}}', "could not convert"),
        (b'{"format": "oasis-qtable/1", "q": {"s": [null, 1, 2]}}', "float"),
    ):
        path.write_bytes(damaged)
        with pytest.raises(ValueError, match=f"cannot load Q-table {re.escape(str(path))}: .*{why}"):
            QTable.load(path)
    assert math.isfinite(back.index("unknown"))


def test_qtable_file_format_and_copies_with_tuple_rows(tmp_path: Path) -> None:
    """Rows are tuples in memory; the file keeps the format tables were saved in before (rows as JSON lists),
    and a copy or a loaded table never shares a change with its source."""
    path = tmp_path / "old.json"
    path.write_text('{"format": "oasis-qtable/1", "q_init": 0.0, "q": {"p:http://h/": [0.25, 0.5, 3.0]}}')
    q = QTable.load(path)
    assert q.get("p:http://h/", 0) == 0.25 and q.get("p:http://h/", 1) == 0.5 and q.visits("p:http://h/") == 3
    twin = q.copy()
    out = q.learn(["p:http://h/", "new"], 1.0, 0.0, 0.0, 0.5, 0.5, 1.0)
    assert [s for s, _ in out] == ["p:http://h/", "new"] and q.visits("p:http://h/") == 4
    assert twin.get("p:http://h/", 1) == 0.5 and twin.visits("p:http://h/") == 3 and "new" not in twin
    assert q.get("p:http://h/", 1) == 0.5 + 0.5 * (1.0 - 0.5)  # Eq. 10, alpha 0.5, q_next 0, no bonus
    q.save(path)
    saved = json.loads(path.read_text())
    assert (
        saved["q"]["p:http://h/"] == [q.get("p:http://h/", 0), 0.75, 4.0]
        and saved["format"] == "oasis-qtable/1"
    )
