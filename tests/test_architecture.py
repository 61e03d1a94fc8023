"""Layers point one way (docs/architecture.md): the import-linter contracts of pyproject.toml hold.

The contracts run over every module of every source root (imports inside functions included), so a lower
folder importing a higher one, two services importing each other, a cycle between folders, the robot's
scheduling importing the rest of the robot, or a service importing a research-only package fails here. The
negative tests plant each kind of violation in a copy of the tree and check that the same run catches it.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())

_LINT = (
    "import sys; from importlinter.cli import lint_imports; "
    "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))"
)
RESEARCH_ONLY = ("matplotlib", "networkx", "warcio", "grpc_tools")
SERVICE_PACKAGES = (
    "v1", "runtime", "web", "engine", "directory", "broker", "robot", "gateway", "cluster", "cli"
)  # fmt: skip


def source_roots(root: Path) -> list[Path]:
    """The top-level folders that hold the ``oasis`` namespace (from [tool.setuptools.package-dir])."""
    dirs = PYPROJECT["tool"]["setuptools"]["package-dir"].values()
    return [root / d for d in dict.fromkeys(Path(d).parts[0] for d in dirs)]


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """Run the pyproject contracts over the source roots under ``root`` (and nothing else)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in source_roots(root)))
    return subprocess.run(
        [sys.executable, "-c", _LINT, str(root / "pyproject.toml")],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
    )


def contracts() -> list[dict[str, Any]]:
    return list(PYPROJECT["tool"]["importlinter"]["contracts"])


def layer_of() -> dict[str, int]:
    """``oasis.X`` -> its layer's height (0 = bottom), from the layers contract."""
    (layers,) = [c["layers"] for c in contracts() if c["type"] == "layers"]
    return {
        name.strip(): height
        for height, layer in enumerate(reversed(layers))
        for name in layer.replace(":", "|").split("|")
    }


def test_the_contracts_hold() -> None:
    run = lint(ROOT)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "BROKEN" not in run.stdout
    assert run.stdout.count("KEPT") == len(contracts())


def test_every_folder_has_a_layer() -> None:
    """A new folder (package of the namespace) must be placed in the layers contract to be checked."""
    top = {".".join(p.split(".")[:2]) for p in PYPROJECT["tool"]["setuptools"]["packages"]}
    assert top == set(layer_of())
    # the services share one layer, so the contract keeps them independent of each other
    middle = {n for n, h in layer_of().items() if h == layer_of()["oasis.robot"]}
    assert middle == {
        "oasis.web",
        "oasis.engine",
        "oasis.directory",
        "oasis.broker",
        "oasis.robot",
        "oasis.gateway",
    }


def _dynamic_imports(path: Path) -> list[tuple[int, str]]:
    """Modules named in ``importlib.import_module("...")`` and command tables' ``Command("...", ...)``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0]
        if (
            name in {"import_module", "Command"}
            and isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and first.value.startswith("oasis.")
        ):
            found.append((node.lineno, first.value))
    # module-level names bound to "oasis.x.y" strings (e.g. _CLUSTER = "oasis.cluster.commands")
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            value = node.value.value
            if isinstance(value, str) and value.startswith("oasis.") and " " not in value:
                found.append((node.lineno, value))
    return found


def test_modules_named_by_string_respect_the_layers() -> None:
    """The lazy command tables import by name; those names obey the same layers as import statements."""
    height = layer_of()
    bad = []
    checked = 0
    for root in source_roots(ROOT):
        for path in root.rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[0] != "oasis" or len(parts) < 2 or parts[1] not in {n[6:] for n in height}:
                continue
            importer = f"oasis.{parts[1]}"
            for line, target in _dynamic_imports(path):
                checked += 1
                folder = ".".join(target.split(".")[:2])
                if folder != importer and height.get(folder, -1) >= height[importer]:
                    bad.append(f"{path.relative_to(ROOT)}:{line} names {target}")
    assert checked > 10  # the oasis and oasis bench command tables
    assert bad == []


# ----------------------------------------------------------------------------------------- negative tests
VIOLATIONS = {
    "lazy upward import inside a function": (
        "runtime/oasis/runtime/zz_violation.py",
        "def f() -> None:\n    from oasis.cli import main  # noqa\n",
        "oasis.runtime is not allowed to import oasis.cli",
    ),
    "a service imports another service": (
        "engine/oasis/engine/zz_violation.py",
        "from oasis.broker import merge  # noqa\n",
        "oasis.engine is not allowed to import oasis.broker",
    ),
    "a cycle between research folders": (
        "replay/oasis/replay/zz_violation.py",
        "import oasis.freshness.recrawl  # noqa\n",
        "oasis.replay is not allowed to import oasis.freshness",
    ),
    "scheduling imports the rest of the robot": (
        "robot/oasis/robot/scheduling/zz_violation.py",
        "from oasis.robot import crawler  # noqa\n",
        "oasis.robot.scheduling is not allowed to import oasis.robot.crawler",
    ),
    "a service imports a research-only package": (
        "broker/oasis/broker/zz_violation.py",
        "def plot() -> None:\n    import matplotlib.pyplot  # noqa\n",
        "is not allowed to import matplotlib",
    ),
}


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source roots and pyproject.toml, copied (Python files only)."""
    dest = tmp_path_factory.mktemp("tree")
    for root in source_roots(ROOT):
        shutil.copytree(
            root,
            dest / root.name,
            ignore=lambda d, names: [
                n for n in names if not (n.endswith(".py") or (Path(d) / n).is_dir()) or n == "__pycache__"
            ],
        )
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_the_check_fails_on_a_violation(tree_copy: Path, case: str) -> None:
    relpath, source, message = VIOLATIONS[case]
    planted = tree_copy / relpath
    planted.write_text(source)
    try:
        run = lint(tree_copy)
    finally:
        planted.unlink()
    assert run.returncode != 0, run.stdout[-3000:]
    assert message in run.stdout, run.stdout[-3000:]
    assert "zz_violation" in run.stdout  # the report names the offending module


def test_the_copy_itself_is_clean(tree_copy: Path) -> None:
    """The negative tests fail because of what they plant, not because the copy differs."""
    run = lint(tree_copy)
    assert run.returncode == 0, run.stdout[-3000:]


# ------------------------------------------------------------------------- services without the extras
_IMPORT_ALL = textwrap.dedent(
    """
    import importlib, importlib.abc, pathlib, sys
    blocked = tuple(sys.argv[1].split(","))

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                raise ImportError(f"{name} is a research extra")
            return None

    sys.meta_path.insert(0, Block())
    count = 0
    for arg in sys.argv[2:]:
        root, package = arg.split("=")
        base = pathlib.Path(root)
        for path in sorted((base / "oasis" / package).rglob("*.py")):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__main__":
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            importlib.import_module(name)
            count += 1
    print(count)
    """
)


def test_service_modules_import_without_the_research_extras() -> None:
    dirs = PYPROJECT["tool"]["setuptools"]["package-dir"]
    args = [f"{ROOT / Path(dirs[f'oasis.{p}']).parts[0]}={p}" for p in SERVICE_PACKAGES]
    run = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, ",".join(RESEARCH_ONLY), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert int(run.stdout.strip()) > 40
