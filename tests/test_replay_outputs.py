"""The replay's outputs on a disk that refuses them: an unwritable, read-only or full place is a clear error
before the replay where it can be known then, and after it the results are still printed and every file is
whole or absent (real tmpfs mounts when run as root, as CI does; a regular file in the path otherwise)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from disk_testmounts import mount_skip_reason, tmpfs

from oasis.cli import main
from oasis.replay import shipped
from oasis.replay.figures import write_figure
from oasis.runtime.files import OUTPUT_LOCK, FileWriteError, FolderLock

SYN = "synthetic:pages=200,hosts=4,topics=3,seed=1"


def test_an_unwritable_out_folder_is_an_error_before_the_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"  # a regular file where a folder should be stops root too
    blocker.write_text("x")
    args = ["replay", "--corpus", SYN, "--policies", "greedy-anchor", "--no-progress"]
    assert main([*args, "--out", str(blocker / "out")]) == 2
    captured = capsys.readouterr()
    assert f"cannot write to folder {blocker / 'out'}" in captured.err
    assert captured.out == ""  # no replay ran: nothing printed
    assert main([*args, "--save-q", str(blocker / "q.json")]) == 2  # (one learner is checked first)
    assert "exactly one learning policy" in capsys.readouterr().err
    assert (
        main(["replay", "--corpus", SYN, "--policies", "whittle", "--save-q", str(blocker / "q.json")]) == 2
    )
    assert f"cannot write to folder {blocker}" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # no probe file left anywhere


def test_write_figure_writes_a_whole_png_and_closes_the_figure(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    write_figure(fig, tmp_path / "plot.png", dpi=50)
    data = (tmp_path / "plot.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data.endswith(b"IEND\xaeB`\x82")
    assert not plt.fignum_exists(fig.number)  # closed
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    fig2, _ = plt.subplots()
    with pytest.raises(FileWriteError, match=r"cannot write .*not-a-dir/plot\.png"):
        write_figure(fig2, blocker / "plot.png", dpi=50)
    assert not plt.fignum_exists(fig2.number)  # closed even when the write fails
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-dir", "plot.png"]


@pytest.mark.skipif(mount_skip_reason() is not None, reason=str(mount_skip_reason()))
def test_a_read_only_disk_is_an_error_before_the_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "ro", "ro") as ro:
        args = ["replay", "--corpus", SYN, "--policies", "greedy-anchor,whittle", "--no-progress"]
        assert main([*args, "--out", str(ro / "out")]) == 2
        captured = capsys.readouterr()
        assert "Read-only file system" in captured.err and str(ro / "out") in captured.err
        assert captured.out == ""
        assert main([*args, "--save-q", str(ro / "q.json")]) == 2
        assert "Read-only file system" in capsys.readouterr().err
        with pytest.raises(SystemExit):
            shipped.main(["evaluate", "--split", "holdout-5", "--out", str(ro / "e")])
        assert "Read-only file system" in capsys.readouterr().err


@pytest.mark.skipif(mount_skip_reason() is not None, reason=str(mount_skip_reason()))
def test_a_disk_that_fills_keeps_the_results_printed_and_no_file_half_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # 16 KiB: room for the up-front probe and a small Q-table, not for results.json (~12 KiB) beside it nor
    # for the plots (20-30 KiB each)
    with tmpfs(tmp_path / "full", "size=16k") as full:
        out = full / "out"
        code = main(
            [
                "replay",
                "--corpus",
                SYN,
                "--policies",
                "greedy-anchor,whittle",
                "--traversals",
                "2",
                "--out",
                str(out),
                "--save-q",
                str(full / "q.json"),
                "--no-progress",
            ]
        )
        captured = capsys.readouterr()
        assert code == 1
        assert "whittle" in captured.out and "greedy-anchor" in captured.out  # the results, printed anyway
        assert "No space left on device" in captured.err
        assert f"cannot write {out / 'traversals.png'}" in captured.err  # each failure names its file
        # every file there is whole: the Q-table that fitted reads back; nothing truncated, no temp file
        from oasis.robot.scheduling import QTable

        written = sorted(p.name for p in full.rglob("*") if p.is_file() and p.name != OUTPUT_LOCK)
        assert all(not name.startswith(".") for name in written), written
        if (full / "q.json").exists():
            assert len(QTable.load(full / "q.json").rows()) > 0
        else:
            assert "the Q-table was not saved" in captured.err
        for png in out.glob("*.png"):
            assert png.read_bytes().endswith(b"IEND\xaeB`\x82")  # a complete PNG or none
        if not (out / "results.json").exists():
            assert "results.json was not saved" in captured.err


def test_two_replays_given_one_out_folder_do_not_mix_their_outputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A replay holds its ``--out`` from its start to its last file: a second run given the same folder while
    the first is stopped (SIGSTOP) mid-replay is refused at once with the first's pid, and the folder ends
    holding the first run's outputs only; once it has finished, the folder is free again."""
    out = tmp_path / "out"
    replay = ["replay", "--corpus", SYN, "--policies", "greedy-anchor,whittle", "--traversals", "2"]
    first = subprocess.Popen(
        [sys.executable, "-m", "oasis.cli", *replay, "--no-progress", "--json", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        lock = out / OUTPUT_LOCK
        deadline = time.monotonic() + 60
        while not (lock.exists() and lock.read_text().strip() == str(first.pid)):
            assert first.poll() is None and time.monotonic() < deadline, "the first replay did not start"
            time.sleep(0.01)
        os.kill(first.pid, signal.SIGSTOP)
        args = ["replay", "--corpus", SYN, "--policies", "bfs", "--no-progress", "--out", str(out)]
        assert main(args) == 2
        captured = capsys.readouterr()
        assert "another run is writing to this folder" in captured.err and str(first.pid) in captured.err
        assert captured.out == ""  # refused before its replay
        os.kill(first.pid, signal.SIGCONT)
        stdout, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            os.kill(first.pid, signal.SIGCONT)
            first.kill()
            first.communicate()
    assert first.returncode == 0, stderr.decode()
    results = json.loads((out / "results.json").read_text())
    assert sorted(results["policies"]) == ["greedy-anchor", "whittle"]  # the first run's, whole
    assert json.loads(stdout)["policies"].keys() == results["policies"].keys()
    assert main(args) == 0  # free again: the lock file left behind is not a held lock
    assert sorted(json.loads((out / "results.json").read_text())["policies"]) == ["bfs"]


def test_a_training_split_tool_refuses_an_out_folder_another_run_holds(tmp_path: Path) -> None:
    with FolderLock(tmp_path / OUTPUT_LOCK), pytest.raises(SystemExit) as info:
        shipped.main(["orders", "--out", str(tmp_path), "--runs", "0", "--orders", "2"])
    assert info.value.code == 2
    assert not (tmp_path / "orders.json").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "[1]", "--runs", "0"],
        ["train", "--out", "OUT/q.json", "--runs", "0", "{bad"],
        ["orders", "--out", "OUT", "--runs", "0", "--config", '{"nope": 1}'],
        ["orders", "--out", "OUT", "--runs", "0", "--versus", '{"shrink": -1}'],
    ],
)
def test_a_training_split_tool_given_a_bad_configuration_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    with pytest.raises(SystemExit) as info:
        shipped.main(argv)
    assert info.value.code == 2
    assert "must be a JSON object of ControllerConfig fields" in capsys.readouterr().err
    assert not (tmp_path / "out" / "q.json").exists() and not (tmp_path / "out" / "orders.json").exists()


def test_train_checks_its_table_folder_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        shipped.main(["train", "--out", str(blocker / "q.json"), "--runs", "0", "--traversals", "1"])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert "cannot write to folder" in captured.err
    assert captured.out == "" and "P/P_upper" not in captured.err  # refused before the replay, not after it
