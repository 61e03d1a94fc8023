"""The cluster TOML's [[node]]s: validation with clear errors, and `oasis up --node` on loopback addresses
(127.0.0.1 and 127.0.0.2 as two "hosts"; the namespace test runs the same across real links)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oasis.cluster.config import ConfigError, parse_config
from oasis.cluster.launcher import LaunchError, bring_up

TOPIC = {"name": "alpha", "keywords": ["sql"]}


def _data(nodes: list[dict[str, Any]], **cluster: Any) -> dict[str, Any]:
    return {
        "cluster": {"directory": "10.0.0.1:7401", "broker": "10.0.0.1:7402", **cluster},
        "topic": [TOPIC, {"name": "beta", "keywords": ["python"]}],
        "web": {"corpus": "synthetic:pages=20"},
        "node": nodes,
    }


HUB = {"name": "hub", "address": "10.0.0.1", "services": ["directory", "broker"]}
N1 = {"name": "n1", "address": "10.0.0.2", "services": ["engine:alpha", "engine:beta"]}


def test_nodes_parse() -> None:
    n2 = {"name": "n2", "address": "10.0.0.3", "bind": "0.0.0.0", "services": ["robot:alpha", "web"]}
    n1 = {**N1, "ports": {"engine:alpha": 7410}}
    config = parse_config(_data([HUB, n1, n2]))
    assert config.directory == "10.0.0.1:7401" and config.broker == "10.0.0.1:7402"
    assert [n.name for n in config.nodes] == ["hub", "n1", "n2"]
    node = config.node("n2")
    assert (node.address, node.bind, node.topics("robot")) == ("10.0.0.3", "0.0.0.0", ["alpha"])
    assert config.node("hub").bind == "10.0.0.1"  # address is bound and advertised by default
    assert config.engine_address("alpha", node) == "10.0.0.2:7410"
    assert config.engine_address("alpha", config.node("n1")) == ""  # the same node: the launcher knows it


@pytest.mark.parametrize(
    ("nodes", "cluster", "message"),
    [
        ([HUB, N1], {"directory": None}, "directory and broker"),
        ([HUB, N1], {"broker": "0.0.0.0:7402"}, "wildcard"),
        ([HUB, N1], {"directory": "10.0.0.1"}, "HOST:PORT"),
        ([HUB, {**N1, "address": "0.0.0.0"}], {}, "wildcard"),
        ([HUB, {**N1, "address": "10.0.0.2:80"}], {}, "no port"),
        ([HUB, {**N1, "name": "hub"}], {}, "unique"),
        ([HUB, {**N1, "services": ["engine:alpha", "engine:beta", "crawler"]}], {}, "unknown service"),
        ([HUB, {**N1, "services": ["engine:alpha", "engine:beta", "engine:zeta"]}], {}, "unknown topic"),
        ([HUB, {**N1, "services": ["engine:alpha"]}], {}, "exactly one engine:beta"),
        ([HUB, N1, {"name": "n2", "address": "10.0.0.3", "services": ["engine:beta"]}], {}, "exactly one"),
        ([HUB, {**N1, "services": ["directory", "engine:alpha", "engine:beta"]}], {}, "exactly one"),
        ([HUB, N1, {"name": "n2", "address": "10.0.0.3", "services": ["robot:alpha", "web"]}], {}, "fixed"),
        ([HUB, {**N1, "services": ["engine:alpha", "engine:beta", "robot:alpha"]}], {}, '"web"'),
        ([HUB, {**N1, "ports": {"broker": 1}}], {}, "does not run"),
        ([HUB, {**N1, "colour": "red"}], {}, "unknown key"),
        ([HUB, {"name": "n1", "services": []}], {}, "missing 'address'"),
    ],
)
def test_bad_nodes_get_clear_errors(
    nodes: list[dict[str, Any]], cluster: dict[str, Any], message: str
) -> None:
    data = _data(nodes, **cluster)
    data["cluster"] = {k: v for k, v in data["cluster"].items() if v is not None}
    with pytest.raises(ConfigError, match=message):
        parse_config(data)


def test_a_node_file_is_not_started_as_one_local_cluster(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="--node"):
        bring_up(parse_config(_data([HUB, N1])), tmp_path)
    with pytest.raises(ConfigError, match="no \\[\\[node\\]\\] named 'n9'"):
        parse_config(_data([HUB, N1])).node("n9")


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def oasis(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "oasis.cli", *args], capture_output=True, text=True, timeout=120
    )
    if check:
        assert proc.returncode == 0, f"oasis {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    directory, broker = f"127.0.0.1:{_free_port('127.0.0.1')}", f"127.0.0.1:{_free_port('127.0.0.1')}"
    config = tmp_path / "cluster.toml"
    config.write_text(
        f'[cluster]\ndirectory = "{directory}"\nbroker = "{broker}"\n'
        "heartbeat_seconds = 0.3\nlease_seconds = 1.5\n"
        '[[topic]]\nname = "alpha"\nkeywords = ["sql", "database"]\n'
        '[[node]]\nname = "hub"\naddress = "127.0.0.1"\nservices = ["directory", "broker"]\n'
        '[[node]]\nname = "n1"\naddress = "127.0.0.2"\nbind = "0.0.0.0"\nservices = ["engine:alpha"]\n'
    )
    started = []
    try:
        for node in ("hub", "n1"):
            oasis(
                "up", "--config", str(config), "--node", node, "--state-dir", str(tmp_path / node), "--detach"
            )
            started.append(node)
        yield tmp_path, directory, broker
    finally:
        for node in started:
            oasis("down", "--state-dir", str(tmp_path / node), check=False)


def test_up_node_index_on_the_engine_node_and_search_from_anywhere(two_nodes: tuple[Path, str, str]) -> None:
    root, directory, broker = two_nodes
    pages = root / "pages"
    pages.mkdir()
    for i in range(3):
        (pages / f"p{i}.html").write_text(f"<title>sql {i}</title><p>database sql page {i}</p>")
    out = oasis("index", "--engine", "alpha", "--state-dir", str(root / "n1"), str(pages))
    assert "3 acknowledged" in out.stdout
    status = json.loads(oasis("status", "--directory", directory, "--json").stdout)["services"]
    engine = next(r for r in status if r["name"] == "alpha")
    assert engine["address"].startswith("127.0.0.2:") and engine["health"] == "SERVING"
    assert engine["documents"] == 3
    # from the engine's node, whose state file has no broker: the cluster's broker
    hits = json.loads(oasis("search", "--state-dir", str(root / "n1"), "--json", "database").stdout)["hits"]
    assert len(hits) == 3 and {h["engine"] for h in hits} == {"alpha"}
    # from anywhere: no state file at all
    alone = json.loads(
        oasis("search", "--broker", broker, "--state-dir", str(root / "none"), "--json", "sql").stdout
    )
    assert len(alone["hits"]) == 3
    assert not (root / "none").exists()
    bad = oasis("status", "--directory", "127.0.0.1:1", check=False)
    assert bad.returncode == 1 and "directory 127.0.0.1:1" in bad.stderr
