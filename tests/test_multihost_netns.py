"""A cluster across four "hosts": network namespaces joined by a bridge, one `oasis up --node` in each.

Root only (creating namespaces needs CAP_NET_ADMIN); skipped with the reason otherwise. Every name (the
namespaces, the bridge, the veths) and the subnet are unique per run, since other test runs on this machine
may build their own; the fixture's finalizer kills every process left in the namespaces and deletes them.

    root namespace (10.A.B.1, on the bridge): `oasis search --broker`, `oasis status --directory`
    hub  10.A.B.2: directory
    n1   10.A.B.3: broker, engine:alpha
    n2   10.A.B.4: engine:beta     (binds 0.0.0.0, advertises 10.A.B.4)
    n3   10.A.B.5: engine:gamma
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from oasis.cluster.launcher import node_command
from oasis.cluster.remote import DirectoryLister
from oasis.runtime.errors import ServiceError

pytestmark = pytest.mark.slow
logger = logging.getLogger(__name__)

OASIS = str(Path(sys.executable).parent / "oasis")  # the console script the image's ENTRYPOINT runs
NODES = ("hub", "n1", "n2", "n3")
HEARTBEAT = 0.3
LEASE = 1.2
TCP_RETRANSMIT_SLACK = 1.6  # the retransmission timer of a connection left open across a ~2 s cut
TOPICS = {
    "alpha": ("database sql table", "databases"),
    "beta": ("python module function", "python"),
    "gamma": ("http template view", "web"),
}
PAGES = 6


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def _skip_reason() -> str | None:
    if sys.platform != "linux":
        return "network namespaces are Linux-only"
    if os.geteuid() != 0:
        return "needs root to create network namespaces (ip netns add); run the suite as root"
    if shutil.which("ip") is None:
        return "needs iproute2 (`apt-get install iproute2`) for ip netns / veth / bridge"
    probe = f"oprobe{secrets.token_hex(3)}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"network namespaces unavailable here: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _free_subnet() -> str:
    """A 10.A.B.0/24 that no interface or route of this host uses (other runs pick theirs at random too)."""
    used = _ip("-4", "addr").stdout + _ip("-4", "route").stdout
    for _ in range(100):
        prefix = f"10.{random.randint(100, 250)}.{random.randint(0, 255)}."
        if prefix not in used:
            return prefix
    raise RuntimeError("no free 10.x.y.0/24 subnet")


@dataclass
class Net:
    run: str
    prefix: str
    bridge: str
    namespaces: dict[str, str] = field(default_factory=dict)  # node -> namespace
    veths: dict[str, str] = field(default_factory=dict)  # node -> root-side veth

    def address(self, node: str) -> str:
        return f"{self.prefix}{NODES.index(node) + 2}"

    def exec(self, node: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "netns", "exec", self.namespaces[node], *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def pids(self, node: str) -> list[int]:
        out = _ip("netns", "pids", self.namespaces[node], check=False).stdout
        return [int(p) for p in out.split()]

    def kill_all(self, node: str) -> None:
        for pid in self.pids(node):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def teardown(self) -> None:
        for node in self.namespaces:
            self.kill_all(node)
        deadline = time.monotonic() + 5
        while any(self.pids(n) for n in self.namespaces) and time.monotonic() < deadline:
            time.sleep(0.05)
        for ns in self.namespaces.values():
            _ip("netns", "del", ns, check=False)
        for veth in self.veths.values():
            _ip(
                "link", "del", veth, check=False
            )  # gone with its namespace's peer, unless setup stopped early
        _ip("link", "del", self.bridge, check=False)


def _build_net() -> Net:
    run = secrets.token_hex(3)
    net = Net(run=run, prefix=_free_subnet(), bridge=f"obr{run}")
    try:
        _ip("link", "add", net.bridge, "type", "bridge")
        _ip("addr", "add", f"{net.prefix}1/24", "dev", net.bridge)
        _ip("link", "set", net.bridge, "up")
        for i, node in enumerate(NODES):
            ns, veth, peer = f"oas{run}{node}", f"ov{run}{i}", f"op{run}{i}"
            _ip("netns", "add", ns)
            net.namespaces[node] = ns
            _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
            net.veths[node] = veth
            _ip("link", "set", peer, "netns", ns)
            _ip("link", "set", veth, "master", net.bridge)
            _ip("link", "set", veth, "up")
            for args in (
                ("link", "set", "lo", "up"),
                ("addr", "add", f"{net.address(node)}/24", "dev", peer),
                ("link", "set", peer, "up"),
            ):
                _ip("-n", ns, *args)
    except BaseException:
        net.teardown()
        raise
    return net


def _config(net: Net) -> str:
    topics = "".join(
        f'[[topic]]\nname = "{name}"\ndescription = "{words}"\nkeywords = {json.dumps(words.split())}\n'
        for name, (words, _) in TOPICS.items()
    )
    a = net.address
    return f"""
[cluster]
directory = "{a("hub")}:7401"
broker = "{a("n1")}:7402"
lease_seconds = {LEASE}
heartbeat_seconds = {HEARTBEAT}
route_cache_seconds = 0.3
default_deadline_ms = 1500

{topics}
[[node]]
name = "hub"
address = "{a("hub")}"
services = ["directory"]

[[node]]
name = "n1"
address = "{a("n1")}"
services = ["broker", "engine:alpha"]

[[node]]
name = "n2"
address = "{a("n2")}"
bind = "0.0.0.0"
services = ["engine:beta"]

[[node]]
name = "n3"
address = "{a("n3")}"
services = ["engine:gamma"]
"""


def _pages(root: Path) -> dict[str, Path]:
    """Per topic, a folder of pages with the topic's words and one word all topics share ("oasis")."""
    folders = {}
    for topic, (words, _) in TOPICS.items():
        folder = root / "pages" / topic
        folder.mkdir(parents=True)
        for i in range(PAGES):
            body = f"{words} oasis page {i} " + " ".join(words.split()[i % 3 :] * 3)
            (folder / f"p{i}.html").write_text(
                f"<html><head><title>{topic} {i}</title></head><body><p>{body}</p></body></html>"
            )
        folders[topic] = folder
    return folders


def _search(broker: str, query: str, deadline_ms: int = 1500) -> tuple[dict[str, Any], float]:
    start = time.monotonic()
    proc = subprocess.run(
        [OASIS, "search", "--broker", broker, "--json", "--deadline-ms", str(deadline_ms), query],
        capture_output=True, text=True, timeout=60, cwd="/",
    )  # fmt: skip
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, f"oasis search failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout), elapsed


def _listed(directory: str) -> dict[str, str]:
    lister = DirectoryLister(directory, timeout=0.5)
    try:
        return dict(lister.engines())
    except ServiceError:
        return {}
    finally:
        lister.close()


def _wait(predicate: Any, timeout: float, what: str, poll: float = 0.05) -> float:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what} not within {timeout:.1f} s")
        time.sleep(poll)
    return time.monotonic() - start


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Net, Path]]:
    reason = _skip_reason()
    if reason is not None:
        pytest.skip(reason)
    net = _build_net()
    try:
        root = tmp_path_factory.mktemp("netns")
        config = root / "cluster.toml"
        config.write_text(_config(net))
        # every node at once, each in its own namespace, with the command the container image runs
        # (node_command: deploy/Dockerfile's ENTRYPOINT + CMD, checked by tests/test_deploy.py)
        procs = {
            node: subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    net.namespaces[node],
                    OASIS,
                    *node_command(config, node, root / node)[1:],
                    "--detach",
                    "--timeout",
                    "60",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for node in NODES
        }
        for node, proc in procs.items():
            out, err = proc.communicate(timeout=90)
            assert proc.returncode == 0, f"oasis up --node {node} failed:\n{out}\n{err}"
        yield net, root
    finally:
        net.teardown()


def test_nodes_index_and_search_across_namespaces(cluster: tuple[Net, Path]) -> None:
    net, root = cluster
    directory, broker = f"{net.address('hub')}:7401", f"{net.address('n1')}:7402"
    # every engine registered under its node's advertised address (n2 binds 0.0.0.0: never published)
    _wait(lambda: len(_listed(directory)) == 3, 15, "three engines in the directory")
    listed = _listed(directory)
    assert listed == {
        "alpha": f"{net.address('n1')}:{listed['alpha'].rsplit(':', 1)[1]}",
        "beta": f"{net.address('n2')}:{listed['beta'].rsplit(':', 1)[1]}",
        "gamma": f"{net.address('n3')}:{listed['gamma'].rsplit(':', 1)[1]}",
    }
    # `oasis index --engine TOPIC` on the node that runs the engine (its own state file, no address given)
    folders = _pages(root)
    for node, topic in (("n1", "alpha"), ("n2", "beta"), ("n3", "gamma")):
        done = net.exec(
            node, OASIS, "index", "--engine", topic, "--state-dir", str(root / node),
            "--base-url", f"http://{topic}.test/", str(folders[topic]),
        )  # fmt: skip
        assert done.returncode == 0 and f"{PAGES} acknowledged" in done.stdout, done.stdout + done.stderr
    # `oasis status --directory` from outside every node, without a state file
    status = subprocess.run(
        [OASIS, "status", "--directory", directory, "--broker", broker, "--json"],
        capture_output=True, text=True, timeout=60, cwd="/",
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    rows = {r["name"]: r for r in json.loads(status.stdout)["services"]}
    assert {n: r["health"] for n, r in rows.items()} == dict.fromkeys(
        ("directory", "broker", "alpha", "beta", "gamma"), "SERVING"
    )
    assert {n: rows[n]["documents"] for n in TOPICS} == dict.fromkeys(TOPICS, PAGES)

    # search from the root namespace: every engine answers; each topic's query is answered by its engine
    out, _ = _search(broker, "oasis")
    assert out["engines"] == dict.fromkeys(TOPICS, "ok") and not out["partial"], out
    assert {h["engine"] for h in out["hits"]} == set(TOPICS)
    for topic, (words, _) in TOPICS.items():
        out, _ = _search(broker, words.split()[0])
        assert out["hits"] and all(h["engine"] == topic for h in out["hits"]), out


def test_cut_link_partial_then_restore_then_directory_node_dies(cluster: tuple[Net, Path]) -> None:
    net, _ = cluster
    directory, broker = f"{net.address('hub')}:7401", f"{net.address('n1')}:7402"
    _wait(lambda: len(_listed(directory)) == 3, 15, "three engines in the directory")
    _search(broker, "oasis")  # the broker has routed this query (its last good route)

    # cut n3's link: partial results within the deadline, gamma reported as not answering
    _ip("link", "set", net.veths["n3"], "down")
    out, elapsed = _search(broker, "oasis", deadline_ms=1000)
    assert out["partial"], out
    assert out["engines"]["gamma"] in ("timeout", "error"), out
    assert out["engines"]["alpha"] == out["engines"]["beta"] == "ok", out
    assert {h["engine"] for h in out["hits"]} == {"alpha", "beta"}
    assert out["took_ms"] <= 1000 + 150, out["took_ms"]
    logger.info("link cut: partial answer in %.0f ms (command %.2f s)", out["took_ms"], elapsed)
    assert elapsed < 1.0 + 2.5  # the command's own start-up is the rest
    # the directory drops gamma when its lease runs out
    _wait(lambda: "gamma" not in _listed(directory), LEASE + 3, "gamma's lease to expire")

    # restore: gamma registers again at its next heartbeat once its connection to the directory flows again;
    # TCP retransmits what was sent during the cut on a doubling timer (200 ms, 400 ms, 800 ms, ...), which
    # adds up to about a second after a cut of this length (measured 0.34-1.03 s with a 0.3 s heartbeat)
    _ip("link", "set", net.veths["n3"], "up")
    back = _wait(lambda: "gamma" in _listed(directory), 10, "gamma back in the directory", poll=0.02)
    logger.info("link restored: gamma back in the directory after %.2f s", back)
    assert back <= HEARTBEAT + TCP_RETRANSMIT_SLACK, f"gamma re-registered after {back:.2f} s"

    # kill the directory's node (every process, and its link): the broker answers from its cached routes
    net.kill_all("hub")
    _ip("link", "set", net.veths["hub"], "down")
    _wait(lambda: not net.pids("hub"), 5, "the hub's processes to die")
    out, _ = _search(broker, "oasis", deadline_ms=2000)
    logger.info("directory node dead: %s in %.0f ms", out["engines"], out["took_ms"])
    assert out["engines"]["alpha"] == out["engines"]["beta"] == "ok", out
    assert {"alpha", "beta"} <= {h["engine"] for h in out["hits"]}
    assert all("directory unreachable" in out["messages"].get(n, "") for n in ("alpha", "beta")), out


def test_down_on_a_node_stops_that_nodes_services(cluster: tuple[Net, Path]) -> None:
    net, root = cluster
    assert net.pids("n2"), "n2 runs its engine"
    done = net.exec("n2", OASIS, "down", "--state-dir", str(root / "n2"))
    assert done.returncode == 0 and "beta" in done.stdout, done.stdout + done.stderr
    _wait(lambda: not net.pids("n2"), 10, "n2's processes to stop")
    assert net.pids("n1") and net.pids("n3"), "the other nodes keep running"
