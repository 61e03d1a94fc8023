"""``oasis replay`` end to end: the JSON interface, Q-table persistence, graph files, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest

from oasis.cli import main

SYN = "synthetic:pages=400,hosts=2,topics=3,seed=5"


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    assert main(["replay", *args, "--json", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # exactly one JSON object on stdout
    return json.loads(out)  # type: ignore[no-any-return]


def test_json_interface_and_outputs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    res = run_json(
        capsys,
        "--corpus",
        SYN,
        "--topic",
        "databases",
        "--policies",
        "upper,random,bfs,greedy-oracle,greedy-parent,greedy-anchor,whittle:hybrid,whittle:generalising",
        "--traversals",
        "3",
        "--random-runs",
        "3",
        "--out",
        str(tmp_path),
    )
    assert res["pages"] == 400 and res["reachable"] <= 400 and res["upper_P"] > 0
    pols = res["policies"]
    assert set(pols) == {
        "upper",
        "random",
        "bfs",
        "greedy-oracle",
        "greedy-parent",
        "greedy-anchor",
        "whittle:hybrid",
        "whittle:generalising",
    }
    assert pols["upper"]["P_ratio"] == [pytest.approx(1.0)]
    assert len(pols["whittle:hybrid"]["P_ratio"]) == 3
    for name, entry in pols.items():
        assert all(0.0 < r <= 1.0 + 1e-9 for r in entry["P_ratio"]), name
        # raw P per traversal beside the ratio
        assert entry["P"] == pytest.approx([r * res["upper_P"] for r in entry["P_ratio"]]), name
    # every learning result against the strongest practical baseline; memorisation reported apart
    best = res["strongest_baseline"]
    practical = ("random", "bfs", "greedy-parent", "greedy-anchor")
    assert best["policy"] == max(practical, key=lambda p: pols[p]["P"][0])
    for name in ("whittle:hybrid", "whittle:generalising"):
        assert pols[name]["P_vs_strongest"] == pytest.approx([p / best["P"] for p in pols[name]["P"]])
    assert pols["whittle:hybrid"]["memorising"] and not pols["whittle:generalising"]["memorising"]
    # the random baseline is the worst informed schedule; oracle greedy beats it
    assert pols["greedy-oracle"]["P_ratio"][0] > pols["random"]["P_ratio"][0]
    full = json.loads((tmp_path / "results.json").read_text())
    assert len(full["policies"]["upper"]["order"]) == 400
    for png in ("traversals.png", "order-whittle-hybrid.png", "order-greedy-oracle.png", "rfm.png"):
        assert (tmp_path / png).stat().st_size > 1000


def test_q_tables_persist_and_transfer(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    q = tmp_path / "q.json"
    first = run_json(
        capsys,
        "--corpus",
        SYN,
        "--topic",
        "databases",
        "--policies",
        "whittle:generalising",
        "--traversals",
        "2",
        "--save-q",
        str(q),
    )
    table = json.loads(q.read_text())
    assert table["format"] == "oasis-qtable/1" and len(table["q"]) > 3
    # evaluate the learned table on another web without further learning: the table is not changed
    other = "synthetic:pages=400,hosts=2,topics=3,seed=9"
    again = run_json(
        capsys,
        "--corpus",
        other,
        "--topic",
        "databases",
        "--policies",
        "whittle:generalising",
        "--traversals",
        "2",
        "--load-q",
        str(q),
        "--no-learn",
        "--save-q",
        str(tmp_path / "q2.json"),
    )
    assert json.loads((tmp_path / "q2.json").read_text()) == table
    r1, r2 = again["policies"]["whittle:generalising"]["P_ratio"]
    assert r1 == pytest.approx(r2)  # no learning: both traversals schedule identically
    assert first["policies"]["whittle:generalising"]["P_ratio"][0] > 0


def test_graphml_corpus_with_relevance(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    g = nx.DiGraph()
    g.add_node("s", relevance=0.0, seed=True)
    for i in range(6):
        g.add_node(f"p{i}", relevance=float(i) / 5)
        g.add_edge("s" if i < 2 else f"p{i - 2}", f"p{i}")
    path = tmp_path / "web.graphml"
    nx.write_graphml(g, path)
    res = run_json(capsys, "--corpus", str(path), "--policies", "upper,bfs,greedy-oracle", "--m", "1")
    assert res["pages"] == 7 and res["reachable"] == 7
    assert res["policies"]["greedy-oracle"]["P_ratio"][0] <= 1.0 + 1e-9


def test_bad_input_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["replay", "--corpus", SYN, "--policies", "nope", "--json"]) == 2
    assert "unknown policy" in capsys.readouterr().err
    assert main(["replay", "--corpus", str(tmp_path / "missing"), "--json"]) == 2
    assert "cannot load corpus" in capsys.readouterr().err
    assert (
        main(["replay", "--corpus", SYN, "--policies", "bfs", "--save-q", str(tmp_path / "q"), "--json"]) == 2
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["replay", "--corpus", SYN, "--policies", "whittle", "--load-q", str(bad), "--json"]) == 2
    assert "Q-table" in capsys.readouterr().err


def test_identifier_anchors_are_scored_by_their_words(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A site whose front page links a notes page first and the relevant page second, each by an identifier:
    a link scored by its words (the default: anchor and URL, identifiers cut) ``pkg.pipeline.engine`` names
    the topic and greedy-anchor fetches that page first; scored by the anchor as written (``--raw-anchors``,
    before session 23) both links score 0 and the tie goes to the first link."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        '<html><body><p>api reference</p><a href="a.html">misc.notes</a> <a href="b.html">pkg.pipeline.engine'
        "</a></body></html>"
    )
    (site / "a.html").write_text("<html><body><p>release notes and changes of this package</p></body></html>")
    (site / "b.html").write_text(
        "<html><body><p>the pipeline engine runs the workflow nodes of a pipeline</p></body></html>"
    )
    args = ["--corpus", str(site), "--topic", "pipeline engine", "--policies", "upper,greedy-anchor"]
    cut = run_json(capsys, *args, "--out", str(tmp_path / "cut"))
    raw = run_json(capsys, *args, "--raw-anchors", "--out", str(tmp_path / "raw"))
    pols = {
        name: json.loads((tmp_path / name / "results.json").read_text())["policies"]["greedy-anchor"]
        for name in ("cut", "raw")
    }
    r_b = max(pols["cut"]["order"])  # the order is each fetch's relevance: the front page, then b (or a)
    assert r_b > 0.5 and pols["cut"]["order"] == [0.0, r_b, 0.0] and pols["raw"]["order"] == [0.0, 0.0, r_b]
    assert cut["policies"]["greedy-anchor"]["P"] == [2.0] and raw["policies"]["greedy-anchor"]["P"] == [1.0]
