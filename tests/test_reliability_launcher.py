"""Issue 15 item 5 (the launcher loses track) and item 8 (smaller items of `oasis index`), on real clusters
brought up by `oasis up` on ephemeral loopback ports.

Each test first reproduced the fault on the code before the fix: two concurrent `oasis up` on one state
folder both exited 0; a truncated cluster.json made `oasis down` impossible (orphans); a stale pid made
`oasis down` signal an unrelated process; `oasis index` of a rejected file exited 0; two HTML trees indexed
with the default base URL replaced each other.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CONFIG = """
[cluster]
lease_seconds = 3.0
heartbeat_seconds = 0.5
route_cache_seconds = 1.0
default_deadline_ms = 1000

[[topic]]
name = "databases"
description = "PostgreSQL relational database SQL commands"
keywords = ["sql", "table", "index", "database", "query"]
"""


def processes_of(state: Path) -> list[int]:
    """Live processes whose command line names a file of ``state`` (an oracle independent of the launcher)."""
    root = str(state.resolve()) + os.sep
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            zombie = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except (OSError, IndexError):
            continue
        if not zombie and "--address-file" in argv and any(a.startswith(root) for a in argv):
            found.append(int(entry.name))
    return found


def oasis(state: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oasis.cli", *args, "--state-dir", str(state)],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def up(state: Path) -> subprocess.CompletedProcess[str]:
    config = state.parent / f"{state.name}.toml"
    config.write_text(CONFIG)
    return oasis(state, "up", "--config", str(config), "--no-robots", "--detach")


def _reap_orphans(state: Path) -> None:
    for pid in processes_of(state):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    s = tmp_path / "state"
    yield s
    oasis(s, "down")
    _reap_orphans(s)


def test_two_concurrent_up_on_one_state_folder_one_wins_the_other_exits_non_zero(state: Path) -> None:
    config = state.parent / "c.toml"
    config.write_text(CONFIG)
    cmd = [sys.executable, "-m", "oasis.cli", "up", "--config", str(config), "--no-robots", "--detach"]
    procs = [
        subprocess.Popen(
            [*cmd, "--state-dir", str(state)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    print("exit codes", codes, [err.strip()[-200:] for _, err in outs])
    assert codes[0] == 0 and codes[1] != 0, outs
    loser = next(err for p, (_, err) in zip(procs, outs, strict=True) if p.returncode != 0)
    assert str(state.resolve()) in loser and ("already" in loser or "in use" in loser), loser
    # one cluster: one directory, one engine, one broker, one gateway
    assert len(processes_of(state)) == 4  # directory, engine, broker, gateway
    down = oasis(state, "down")
    assert down.returncode == 0, down.stderr
    assert processes_of(state) == [], "orphans after down"


def test_second_up_on_a_running_cluster_is_refused(state: Path) -> None:
    assert up(state).returncode == 0
    before = sorted(processes_of(state))
    again = up(state)
    assert again.returncode != 0 and "already" in again.stderr, again.stderr
    assert sorted(processes_of(state)) == before


def test_truncated_cluster_json_down_still_stops_everything_and_up_refuses(state: Path) -> None:
    assert up(state).returncode == 0
    pids = processes_of(state)
    assert len(pids) == 4
    path = state / "cluster.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    # a second up must neither start a second cluster nor delete the state it cannot read
    again = up(state)
    assert again.returncode != 0, again.stdout
    assert "already" in again.stderr, again.stderr
    assert path.read_text() == text[: len(text) // 2]
    assert sorted(processes_of(state)) == sorted(pids)
    down = oasis(state, "down")
    print(down.stdout, down.stderr)
    assert down.returncode == 0, down.stderr
    assert "stopped 4" in down.stdout
    deadline = time.monotonic() + 10
    while processes_of(state) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_of(state) == [], "orphans after down from a truncated cluster.json"
    # and now the folder is free again
    assert up(state).returncode == 0


def test_stale_pid_is_never_signalled(state: Path) -> None:
    assert up(state).returncode == 0
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        path = state / "cluster.json"
        data = json.loads(path.read_text())
        broker = next(s for s in data["services"] if s["kind"] == "broker")
        real = broker["pid"]
        broker["pid"] = bystander.pid  # a recycled pid: the broker died, an unrelated process got its pid
        path.write_text(json.dumps(data))
        down = oasis(state, "down")
        print(down.stdout, down.stderr)
        assert bystander.poll() is None, "oasis down killed an unrelated process"
        # the real broker (found by its command line naming this state folder) is stopped all the same
        deadline = time.monotonic() + 10
        while processes_of(state) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert real not in processes_of(state)
        assert processes_of(state) == []
    finally:
        bystander.kill()
        bystander.wait()


def test_down_without_a_cluster_exits_non_zero(state: Path) -> None:
    down = oasis(state, "down")
    assert down.returncode != 0 and "no cluster" in down.stderr


# ---------------------------------------------------------------------------------------------- item 8
def test_index_of_a_rejected_file_exits_non_zero_and_two_trees_keep_distinct_urls(state: Path) -> None:
    assert up(state).returncode == 0
    big = state.parent / "big"
    big.mkdir()
    (big / "huge.html").write_text("<title>huge</title><p>" + "word " * 500_000 + "</p>")  # 2.5 MB of text
    out = oasis(state, "index", "--engine", "databases", str(big))
    print(out.stdout, out.stderr)
    assert out.returncode != 0, "a rejected file must not exit 0"
    assert "rejected" in out.stdout + out.stderr
    # two trees with the same relative file names, both with the default --base-url
    for tree in ("tree-a", "tree-b"):
        (state.parent / tree).mkdir()
        (state.parent / tree / "index.html").write_text(f"<title>{tree}</title><p>sql table {tree}</p>")
    for tree in ("tree-a", "tree-b"):
        res = oasis(state, "index", "--engine", "databases", str(state.parent / tree))
        assert res.returncode == 0, res.stderr
        assert "1 added" in res.stdout, res.stdout  # added, not "replaced" the other tree's page
    status = json.loads(oasis(state, "status", "--json").stdout)
    docs = {s["name"]: s["documents"] for s in status["services"]}
    assert docs["databases"] == 2
