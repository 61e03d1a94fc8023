"""The project installs with pip into a fresh venv beside Robot Framework (import name ``robot``) and
proto-plus (import name ``proto``), and both sides import: the card's folders live under ``oasis``. From the
repository root, the plain editable install the README's commands make resolves every ``oasis.*`` package to
its source folder (nothing at the root shadows it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
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
site = pathlib.Path(oasis.robot.__file__).parents[2]
assert getattr(oasis, "__file__", None) is None, "oasis is a namespace package"
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


ROOTS = {
    "oasis.v1": "proto", "oasis.runtime": "runtime", "oasis.web": "web", "oasis.engine": "engine",
    "oasis.directory": "directory", "oasis.broker": "broker", "oasis.robot": "robot",
    "oasis.gateway": "gateway",
    "oasis.freshness": "freshness", "oasis.replay": "replay", "oasis.bench": "bench",
    "oasis.cluster": "cluster", "oasis.cli": "cli",
}  # fmt: skip

FROM_ROOT = """
import importlib, json, sys
out = {}
for name in sys.argv[1:]:
    out[name] = importlib.import_module(name).__file__
print(json.dumps(out))
"""


def test_every_package_resolves_to_its_source_folder_from_the_root() -> None:
    # no -P, no cwd= elsewhere: Python started in the repository root
    run = subprocess.run(
        [sys.executable, "-W", "error", "-c", FROM_ROOT, *ROOTS],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    files = json.loads(run.stdout)
    for name, folder in ROOTS.items():
        expected = ROOT / folder / Path(*name.split(".")) / "__init__.py"
        assert Path(files[name]) == expected, (name, files[name])
    assert not (ROOT / "oasis").exists(), "a root oasis/ folder would shadow the namespace"
