"""The experiment runner on a graph built to defeat fringe-greedy: relevant pages behind irrelevant hubs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from oasis.replay.experiment import Experiment, ExperimentConfig, Prepared, prepare
from oasis.replay.simulator import Replay
from oasis.robot.scheduling import ControllerConfig
from oasis.web.model import Corpus, WebGraph


def hub_web() -> Replay:
    """seed -> 10 decoys (r 0.3, lead nowhere) and 5 hubs (r 0.01, each -> 8 pages of r 0.9)."""
    edges: dict[int, list[int]] = {0: list(range(1, 16))}
    n = 16
    rel = [0.0] + [0.3] * 10 + [0.01] * 5
    for h in range(11, 16):
        edges[h] = list(range(n, n + 8))
        n += 8
        rel += [0.9] * 8
    indptr, indices = [0], []
    for i in range(n):
        indices += edges.get(i, [])
        indptr.append(len(indices))
    g = WebGraph(
        [f"http://x/{i}" for i in range(n)],
        np.array(indptr),
        np.array(indices, dtype=np.int32),
        np.array(rel),
        np.array([0]),
    )
    return Replay(g, g.relevance, [0])


def run(policies: tuple[str, ...], traversals: int = 6) -> dict:  # type: ignore[type-arg]
    rep = hub_web()
    prepared = Prepared(replay=rep, corpus=Corpus(pages={}, seeds=[]), topic=None, meta={"corpus": "hub"})
    cfg = ExperimentConfig(
        policies=policies,
        traversals=traversals,
        random_runs=5,
        controller=ControllerConfig(alpha=0.5, gamma=0.5),
    )
    return Experiment(prepared, cfg).run()


def test_learning_beats_oracle_greedy_on_hub_web() -> None:
    res = run(
        (
            "upper",
            "random",
            "greedy-oracle",
            "greedy-parent",
            "greedy-lookahead",
            "whittle:hybrid",
            "whittle:parent",
        )
    )
    pols = res["policies"]
    oracle = pols["greedy-oracle"]["P_ratio"][0]
    assert pols["upper"]["P_ratio"] == [pytest.approx(1.0)]
    # the oracle fetches the ten decoys (0.3) before the hubs (0.01): far from the bound
    assert oracle < 0.9
    assert pols["greedy-lookahead"]["P_ratio"][0] > oracle
    hybrid = pols["whittle:hybrid"]["P_ratio"]
    assert len(hybrid) == 6 and max(hybrid[1:]) > oracle  # learns the hubs' value across traversals
    # the hubs must be fetched before their pages, so the bound is out of reach; the learner reaches the
    # practical ceiling of the oracle that sees each fringe page's out-links
    assert hybrid[-1] >= pols["greedy-lookahead"]["P_ratio"][0] - 1e-9
    # the paper's state cannot tell the hubs from the decoys (all are children of the seed): one entry
    assert len(pols["whittle:parent"]["P_ratio"]) == 6
    for entry in pols.values():
        assert all(r <= 1.0 + 1e-9 for r in entry["P_ratio"])  # nobody beats the upper bound


def test_the_shipped_memorising_state_reaches_oracle_greedy() -> None:
    """Issue 10's memorising target on a training web: ``whittle:hybrid`` run on the shipped parameters
    (children weighted .02 in Eq. 10) reaches greedy-oracle's P within 5 traversals; with Eq. 10's full
    bonus the children's summed values outrank a page's own relevance and it stays below."""
    from oasis.robot.scheduling import SHIPPED
    from oasis.web.corpus import load_corpus

    prepared = prepare(load_corpus("synthetic:pages=1000,hosts=3,seed=5"), "databases", seed_urls=None)
    best = {}
    for weight in (SHIPPED.state_child_weight, 1.0):
        cfg = ExperimentConfig(
            policies=("greedy-oracle", "whittle:hybrid"),
            traversals=5,
            controller=replace(SHIPPED, state_child_weight=weight),
        )
        pols = Experiment(prepared, cfg).run()["policies"]
        oracle = pols["greedy-oracle"]["P"][0]
        best[weight] = max(pols["whittle:hybrid"]["P"]) / oracle
    assert SHIPPED.state_child_weight == 0.02
    assert best[0.02] >= 1.0 > best[1.0]


def test_budget_and_m_shape_the_run() -> None:
    rep = hub_web()
    prepared = Prepared(replay=rep, corpus=Corpus(pages={}, seeds=[]), topic=None, meta={})
    res = Experiment(prepared, ExperimentConfig(policies=("upper", "bfs"), m=4, budget=20)).run()
    assert res["steps"] == 5 and res["budget"] == 20
    assert res["policies"]["bfs"]["fetches"] <= 20
