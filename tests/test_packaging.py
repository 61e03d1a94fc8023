"""The project installs with pip into a fresh venv beside Robot Framework (import name ``robot``) and
proto-plus (import name ``proto``), and both sides import: the card's folders live under ``oasis``."""

from __future__ import annotations

import shutil
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".venv", "build", ".git", "*.egg-info", "__pycache__", ".oasis", ".*_cache", "out"
)

CHECK = """
import robot, proto
import oasis, oasis.robot, oasis.engine, oasis.broker, oasis.directory, oasis.web
from oasis.v1 import engine_pb2, engine_pb2_grpc, robot_pb2
from robot import run_cli          # Robot Framework's API
from proto import Message, Field   # proto-plus's API
import pathlib
site = pathlib.Path(oasis.__file__).parents[1]
assert pathlib.Path(robot.__file__).parent == site / "robot", robot.__file__
assert pathlib.Path(proto.__file__).parent == site / "proto", proto.__file__
assert pathlib.Path(oasis.robot.__file__).parent == site / "oasis" / "robot", oasis.robot.__file__
assert robot_pb2.DESCRIPTOR.services_by_name["Robot"].full_name == "oasis.v1.Robot"
print("both sides import")
"""


@pytest.mark.slow
def test_installs_beside_robotframework_and_proto_plus(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=IGNORE)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(src),
         "robotframework", "proto-plus"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if install.returncode != 0 and "Could not find a version" in install.stderr:
        pytest.skip(f"package index unreachable: {install.stderr[-300:]}")
    assert install.returncode == 0, install.stderr[-2000:]
    # run from an empty folder so nothing of the source tree is on sys.path
    run = subprocess.run(
        [str(python), "-W", "error", "-c", CHECK], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "both sides import" in run.stdout
