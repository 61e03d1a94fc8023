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
from disk_testmounts import mount_skip_reason, tmpfs

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


@pytest.mark.parametrize("damage", ["truncated", "not UTF-8"])
def test_truncated_cluster_json_down_still_stops_everything_and_up_refuses(state: Path, damage: str) -> None:
    """A damaged ``cluster.json``: cut in half (a crash), or bytes that are not UTF-8 (a damaged disk: every
    command, ``oasis status``, ``up`` and ``down`` alike, was a ``UnicodeDecodeError`` traceback)."""
    assert up(state).returncode == 0
    pids = processes_of(state)
    assert len(pids) == 4
    path = state / "cluster.json"
    text = path.read_bytes()
    damaged = text[: len(text) // 2] if damage == "truncated" else b"\xbb\x00" + text[2:]
    path.write_bytes(damaged)
    status = oasis(state, "status")
    assert status.returncode != 0 and "Traceback" not in status.stderr, status.stderr
    assert f"unreadable cluster state {path}" in status.stderr
    # a second up must neither start a second cluster nor delete the state it cannot read
    again = up(state)
    assert again.returncode != 0, again.stdout
    assert "already" in again.stderr, again.stderr
    assert path.read_bytes() == damaged
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
    (state.parent / "tree-b" / "logo.html").write_bytes(
        b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    )  # not a page
    (state.parent / "tree-a" / "moved.html").write_text(
        '<meta http-equiv="refresh" content="0; url=index.html">'
    )
    for tree in ("tree-a", "tree-b"):
        res = oasis(state, "index", "--engine", "databases", str(state.parent / tree))
        assert res.returncode == 0, res.stderr
        assert "1 added" in res.stdout, res.stdout  # added, not "replaced" the other tree's page
        if tree == "tree-a":  # a redirect stub is no document (the robot follows it instead)
            assert "skipped 1 redirect stub(s)" in res.stdout, res.stdout
        # the progress bar counts the skipped file too: it ends at the folder's file count, not 1/2 (its last
        # state; the text-mode pipe turns tqdm's carriage returns into newlines, and a slow first document
        # shows 1/2 on the way)
        states = [line for line in res.stderr.splitlines() if "/2 [" in line]
        assert states and "2/2 [" in states[-1], res.stderr
    assert "skipped 1 file(s) that could not be read or are not HTML (binary data)" in res.stdout
    assert f"skipping {state.parent / 'tree-b' / 'logo.html'}: binary data, not HTML" in res.stderr
    status = json.loads(oasis(state, "status", "--json").stdout)
    docs = {s["name"]: s["documents"] for s in status["services"]}
    assert docs["databases"] == 2


@pytest.mark.skipif(mount_skip_reason() is not None, reason=str(mount_skip_reason()))
def test_up_on_a_read_only_or_full_disk_is_one_line_and_leaves_nothing_running(tmp_path: Path) -> None:
    """Before: on a read-only state folder `oasis up` died with a traceback (OSError from mkdir); on a full
    one an engine's traceback was the only explanation. Now: one line naming the folder or the index and the
    reason, exit 1, and no service left running (real tmpfs mounts: read-only, and 64 KiB filled up to 8
    KiB)."""
    config = tmp_path / "cluster.toml"
    config.write_text(CONFIG)
    with tmpfs(tmp_path / "ro", "ro") as ro:
        state = ro / "state"
        done = oasis(state, "up", "--config", str(config), "--no-robots", "--detach")
        assert done.returncode == 1
        says = "oasis up: the state folder cannot be used: cannot write to folder"
        says = f"{says} {state}: Read-only file system"
        assert done.stderr.strip().splitlines() == [says]
        assert processes_of(state) == []
    with tmpfs(tmp_path / "full", "size=64k") as full:
        state = full / "state"
        left = 8192  # room for the state folder's probe and lock, not for an engine's index
        stat = os.statvfs(full)
        (full / "filler").write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize - left))
        try:
            done = oasis(state, "up", "--config", str(config), "--no-robots", "--detach")
            assert done.returncode == 1, done.stdout
            assert "Traceback" not in done.stderr, done.stderr
            # the service that met the full disk first (which one depends on the free pages) says in one line
            # which of its files under the state folder it could not write
            last = done.stderr.strip().splitlines()[-1]
            assert last.startswith("error: ") and last.endswith("No space left on device"), done.stderr
            assert str(state) in last
            assert processes_of(state) == []  # every service started before it was stopped again
        finally:
            _reap_orphans(state)


@pytest.mark.skipif(mount_skip_reason() is not None, reason=str(mount_skip_reason()))
@pytest.mark.parametrize(
    ("service", "argv", "says"),
    [
        ("oasis.directory", ["--port", "0"], "error: "),  # every gRPC service: runtime.service.build_server
        ("oasis.web", ["--corpus", "synthetic:pages=20"], "error: "),
        ("oasis.gateway", ["--broker", "127.0.0.1:1", "--port", "0"], "python -m oasis.gateway: "),
    ],
)
def test_a_service_whose_address_file_cannot_be_written_stops_with_one_line(
    tmp_path: Path, service: str, argv: list[str], says: str
) -> None:
    """Before: a traceback (the launcher showed its last lines). Now: the service stops, exit 1, its last line
    names the file and the reason."""
    with tmpfs(tmp_path / "ro", "ro") as ro:
        done = subprocess.run(
            [sys.executable, "-m", service, *argv, "--address-file", str(ro / "address.json")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"{says}cannot write {ro / 'address.json'}: Read-only file system"
