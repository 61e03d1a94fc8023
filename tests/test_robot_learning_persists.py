"""What the robot learns persists and offline training reaches the live robot: a Q-table trained by
``oasis replay --save-q`` starts a live ``python -m oasis.robot`` process, the robot saves its table at every
checkpoint and on stop (by default in its state directory) and a restarted robot continues from it;
``--controller-config`` reaches the request controller; bad configs and corrupt tables get clear errors."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from robot_testweb import LocalEngine, LocalWeb, html, page

from oasis.robot.__main__ import build_parser
from oasis.robot.app import build_crawler, config_from_args, load_controller_config, resume_crawler
from oasis.robot.scheduling import SHIPPED
from oasis.runtime.spawn import spawn_service
from oasis.v1 import robot_pb2, robot_pb2_grpc

N_PAGES = 120
INTERVAL = 10


@pytest.fixture
def web() -> Iterator[LocalWeb]:
    w = LocalWeb().start()
    for i in range(N_PAGES):
        words = "sql database table query" if i % 3 else "gardening roses compost"
        links = [f"/p{j}.html|chapter {j} sql" for j in (i + 1, i + 2, 2 * i + 1) if j < N_PAGES]
        w.routes[f"/p{i}.html"] = page(html(f"Chapter {i}", f"chapter {i} {words}", links))
    w.routes["/robots.txt"] = page("User-agent: *\n", ctype="text/plain")
    yield w
    w.stop()


def start_robot(
    tmp_path: Path, engine: LocalEngine, state: Path, *extra: str
) -> tuple[subprocess.Popen[bytes], str]:
    address_file = tmp_path / f"robot-{time.monotonic_ns()}.json"
    cmd = [
        sys.executable, "-m", "oasis.robot", "--name", "r1", "--engine", engine.address,
        "--state-dir", str(state),
        "--min-delay", "0.005", "--max-in-flight", "4", "--checkpoint-interval", str(INTERVAL),
        "--log-level", "WARNING", *extra,
    ]  # fmt: skip
    robot = spawn_service(cmd, address_file, timeout=30, name="robot", cwd=tmp_path)
    return robot.process, robot.address


def robot_state(address: str) -> str:
    with grpc.insecure_channel(address) as ch:
        return str(robot_pb2_grpc.RobotStub(ch).Status(robot_pb2.StatusRequest(), timeout=5).state)


def wait_for(pred: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not pred():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def crawl_until_done(tmp_path: Path, engine: LocalEngine, state: Path, *extra: str) -> None:
    proc, address = start_robot(tmp_path, engine, state, "--autostart", *extra)
    try:
        wait_for(lambda: robot_state(address) == "done", 60)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


def rows(path: Path) -> dict[str, list[float]]:
    data = json.loads(path.read_text())
    assert data["format"] == "oasis-qtable/1"
    return {k: [float(x) for x in v] for k, v in data["q"].items()}


def assert_continues(before: dict[str, list[float]], after: dict[str, list[float]]) -> None:
    """``after`` holds every row of ``before`` with at least its visit count, and more visits in all."""
    assert set(before) <= set(after), sorted(set(before) - set(after))[:5]
    assert all(after[k][2] >= before[k][2] for k in before), [
        (k, before[k][2], after[k][2]) for k in before if after[k][2] < before[k][2]
    ]
    assert sum(r[2] for r in after.values()) > sum(r[2] for r in before.values())


def train_offline(tmp_path: Path) -> Path:
    """A Q-table learned by the offline replay on a small synthetic web (the CLI's own code path)."""
    out = tmp_path / "offline-q.json"
    cmd = [
        sys.executable, "-m", "oasis.cli", "replay", "--corpus", "synthetic:pages=200,hosts=2,seed=1",
        "--policies", "whittle", "--traversals", "2", "--save-q", str(out), "--no-progress", "--json",
    ]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, cwd=tmp_path)
    return out


def test_offline_table_starts_the_live_robot_which_saves_its_updates(
    tmp_path: Path, engine: LocalEngine, web: LocalWeb
) -> None:
    initial = train_offline(tmp_path)
    offline = rows(initial)
    assert len(offline) >= 10 and sum(r[2] for r in offline.values()) > 0
    state = tmp_path / "state"
    crawl_until_done(
        tmp_path, engine, state, "--initial-q-table", str(initial), "--max-pages", "40",
        "--seeds", web.url("/p0.html"),
    )  # fmt: skip
    saved = rows(state / "q_table.json")  # the robot service's default --q-table
    assert_continues(offline, saved)
    # the live crawl updated rows the offline replay had learned (a generalising state's and the pooled
    # calibration's at least), and left the rows it never visited exactly as trained
    grown = [k for k in offline if saved[k][2] > offline[k][2]]
    assert "fit:1" in grown and any(k.startswith("g:") for k in grown)
    untouched = [k for k in offline if saved[k][2] == offline[k][2]]
    assert untouched and all(saved[k] == offline[k] for k in untouched)
    assert rows(initial) == offline  # the initial table is read, never written


def test_restarted_robot_continues_from_its_q_table(
    tmp_path: Path, engine: LocalEngine, web: LocalWeb
) -> None:
    state = tmp_path / "state"
    q_file = state / "q_table.json"
    checkpoint = state / "checkpoint.json"
    # 1. saved at checkpoints, not only on stop: a robot killed with -9 leaves its table behind
    proc, _ = start_robot(tmp_path, engine, state, "--autostart", "--seeds", web.url("/p0.html"))
    try:
        wait_for(lambda: checkpoint.exists() and q_file.exists(), 60)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    first = rows(q_file)
    assert sum(r[2] for r in first.values()) > 0
    # 2. restarted on the same state dir: resumes the crawl, loads its table, finishes
    crawl_until_done(tmp_path, engine, state)
    second = rows(q_file)
    assert_continues(first, second)
    # 3. a new robot (fresh state dir) given the same --q-table continues from that table alone
    crawl_until_done(
        tmp_path, engine, tmp_path / "fresh", "--q-table", str(q_file), "--max-pages", "20",
        "--seeds", web.url("/p0.html"),
    )  # fmt: skip
    assert_continues(second, rows(q_file))


def robot_args(tmp_path: Path, *extra: str) -> argparse.Namespace:
    return build_parser().parse_args(
        ["--name", "r", "--engine", "127.0.0.1:1", "--state-dir", str(tmp_path / "state"), *extra]
    )


def test_controller_config_reaches_the_controller(tmp_path: Path) -> None:
    for name, text in (
        ("ctl.json", '{"alpha": 0.125, "gamma": 0, "state": "hybrid", "prior": "zero", "learn": false}'),
        ("ctl.toml", 'alpha = 0.125\ngamma = 0\nstate = "hybrid"\nprior = "zero"\nlearn = false\n'),
    ):
        path = tmp_path / name
        path.write_text(text)
        args = robot_args(tmp_path, "--controller-config", str(path))
        config = config_from_args(args, name="r", state_dir=tmp_path / "state")
        crawler, engine = build_crawler(config, args.engine)
        try:
            cfg = crawler.controller.config  # type: ignore[attr-defined]
            got = (cfg.alpha, cfg.gamma, cfg.state, cfg.prior, cfg.learn)
            assert got == (0.125, 0.0, "hybrid", "zero", False)
        finally:
            crawler.close()
            engine.close()
    # a policy that learns nothing may still set the keys every policy reads
    (tmp_path / "rekey.json").write_text('{"recrawl_rekey": 7}')
    args = robot_args(tmp_path, "--policy", "bfs", "--controller-config", str(tmp_path / "rekey.json"))
    config = config_from_args(args, name="r", state_dir=None)
    assert config.controller.recrawl_rekey == 7 and config.q_table is None
    # no file: the robot as shipped; a file overrides only the fields it names
    assert config_from_args(robot_args(tmp_path), name="r", state_dir=None).controller == SHIPPED
    (tmp_path / "gamma.json").write_text('{"gamma": 0.25}')
    args = robot_args(tmp_path, "--controller-config", str(tmp_path / "gamma.json"))
    assert config_from_args(args, name="r", state_dir=None).controller == replace(SHIPPED, gamma=0.25)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"alpha": 0.5, "alpah": 0.1}', "unknown key 'alpah'"),
        ('{"gamma": 1.5}', "key 'gamma': gamma must be in"),
        ('{"gamma": "high"}', "key 'gamma' must be float"),
        ('{"learn": 1}', "key 'learn' must be bool"),
        ('{"relevance_bins": 2.5}', "key 'relevance_bins' must be int"),
        ('{"state": "nope"}', "key 'state': unknown state"),
        ('{"alpha": 0.5,', "not valid JSON"),
        ("[1, 2]", "expected an object"),
        (b'{"gamma": 0.5\xbb}', "not UTF-8 text \\(byte 13\\)"),  # was the codec's message, no file named
    ],
)
def test_bad_controller_config_names_file_and_key(tmp_path: Path, text: str | bytes, message: str) -> None:
    path = tmp_path / "ctl.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ValueError, match=message) as err:
        load_controller_config(path)
    assert str(path) in str(err.value)


def test_learning_flags_need_a_learning_policy(tmp_path: Path) -> None:
    (tmp_path / "ctl.json").write_text('{"alpha": 0.25}')
    for flags in (("--q-table", "q.json"), ("--initial-q-table", "q.json")):
        with pytest.raises(ValueError, match="policy 'bfs' learns no Q-table"):
            config_from_args(robot_args(tmp_path, "--policy", "bfs", *flags), name="r", state_dir=None)
    args = robot_args(tmp_path, "--policy", "random", "--controller-config", str(tmp_path / "ctl.json"))
    with pytest.raises(ValueError, match=r"ctl\.json: policy 'random' learns nothing and ignores alpha"):
        config_from_args(args, name="r", state_dir=None)
    # no default table for a policy without one
    args = robot_args(tmp_path, "--policy", "greedy-parent")
    config = config_from_args(args, name="r", state_dir=None, default_q_table=tmp_path / "q.json")
    assert config.q_table is None
    with pytest.raises(ValueError, match=r"initial Q-table .*missing\.json does not exist"):
        config_from_args(robot_args(tmp_path, "--initial-q-table", "missing.json"), name="r", state_dir=None)


@pytest.mark.parametrize("flag", ["--q-table", "--initial-q-table"])
def test_corrupt_table_is_reported_and_never_overwritten(tmp_path: Path, flag: str) -> None:
    bad = tmp_path / "q.json"
    for content in (b'{"format": "oasis-qtable/1", "q": {"x": [1, 2', b'{"format": "something-else"}'):
        bad.write_bytes(content)
        cmd = [
            sys.executable, "-m", "oasis.robot", "--name", "r", "--engine", "127.0.0.1:1",
            "--state-dir", str(tmp_path / "state"), flag, str(bad), "--autostart",
            "--seeds", "http://127.0.0.1:1/",
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert f"cannot load Q-table {bad}" in proc.stderr
        assert bad.read_bytes() == content
        assert not (tmp_path / "state" / "q_table.json").exists()
    # `oasis crawl` shares the flags and the check (it fails before any engine is contacted)
    cmd = [
        sys.executable, "-m", "oasis.cli", "crawl", "--engine", "127.0.0.1:1", "--no-progress",
        "--seeds", "http://127.0.0.1:1/", flag, str(bad),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 2 and f"cannot load Q-table {bad}" in proc.stderr, proc.stderr
    assert bad.read_bytes() == content


def test_own_table_wins_over_the_checkpoint_copy_on_resume(tmp_path: Path) -> None:
    """A checkpoint holds the table as it was then; the q_table file (written then or later) is what a
    resumed robot continues from, and an initial table never replaces what a robot learned."""
    initial = tmp_path / "initial.json"
    initial.write_text(json.dumps({"format": "oasis-qtable/1", "q_init": 0.0, "q": {"i": [0.0, 0.5, 3.0]}}))
    args = robot_args(tmp_path, "--initial-q-table", str(initial))
    state = tmp_path / "state"
    config = config_from_args(args, name="r", state_dir=state, default_q_table=state / "q_table.json")
    crawler, engine = build_crawler(config, args.engine)
    try:
        crawler.add_seeds(["http://127.0.0.1:1/a"])
        assert crawler.checkpoint()  # writes the checkpoint and the robot's table
    finally:
        crawler.close()
        engine.close()
    assert rows(state / "q_table.json")["i"] == [0.0, 0.5, 3.0]
    assert "i" in json.loads((state / "checkpoint.json").read_text())["controller"]["q"]["q"]
    # the robot's table moves on after the checkpoint (as it does between checkpoint and stop)
    newer = {"format": "oasis-qtable/1", "q_init": 0.0, "q": {"i": [0.0, 0.5, 9.0], "later": [0.1, 0.2, 4.0]}}
    (state / "q_table.json").write_text(json.dumps(newer))
    crawler, engine = build_crawler(config, args.engine)
    try:
        assert resume_crawler(crawler)
        crawler.controller.save_q(tmp_path / "now.json")
    finally:
        crawler.close()
        engine.close()
    assert rows(tmp_path / "now.json") == rows(state / "q_table.json")
    # without a file of its own, a resumed robot keeps the checkpoint's table, not the initial one
    (state / "q_table.json").unlink()
    checkpoint = json.loads((state / "checkpoint.json").read_text())
    checkpoint["controller"]["q"]["q"]["i"] = [0.0, 0.7, 5.0]  # learned since the initial table
    (state / "checkpoint.json").write_text(json.dumps(checkpoint))
    crawler, engine = build_crawler(config, args.engine)
    try:
        assert resume_crawler(crawler)
        crawler.controller.save_q(tmp_path / "now.json")
    finally:
        crawler.close()
        engine.close()
    assert rows(tmp_path / "now.json")["i"] == [0.0, 0.7, 5.0]


def test_help_says_where_the_robot_keeps_its_table() -> None:
    text = " ".join(build_parser().format_help().split())
    assert "--q-table PATH" in text and "(default: STATE_DIR/q_table.json)" in text
    assert "--initial-q-table PATH" in text and "--controller-config FILE" in text
