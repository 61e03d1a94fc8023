"""The ``oasis`` command imports a command's code only when that command runs (issue 9).

Each case runs the real CLI in a fresh interpreter and reads ``sys.modules`` afterwards; the command tables
(:data:`oasis.cli.COMMANDS`, :data:`oasis.bench.cli.BENCHMARKS`) must match what the modules register.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oasis.bench.cli import BENCHMARKS
from oasis.cli import COMMANDS, build_parser
from oasis.runtime.commands import Command, add_command_table

ROOT = Path(__file__).resolve().parents[1]

_RUN = textwrap.dedent(
    """
    import json, sys
    from oasis.cli import main
    argv, out = json.loads(sys.argv[1]), sys.argv[2]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    with open(out, "w") as f:
        json.dump({"code": code, "modules": sorted(sys.modules)}, f)
    """
)


def run_cli(argv: list[str], tmp_path: Path) -> tuple[int, set[str], str]:
    """Run ``oasis ARGV`` in a fresh interpreter: (exit code, modules imported, stdout)."""
    out = tmp_path / "modules.json"
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(argv), str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.exists(), proc.stderr
    data = json.loads(out.read_text())
    return int(data["code"] or 0), set(data["modules"]), proc.stdout


def loaded(modules: set[str], *names: str) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_help_lists_every_command_without_importing_them(tmp_path: Path) -> None:
    code, modules, out = run_cli(["--help"], tmp_path)
    assert code == 0
    for name in COMMANDS:
        assert name in out
    assert loaded(modules, "grpc", "whoosh", "numpy", "oasis.cluster", "oasis.bench", "oasis.robot") == []


def test_status_imports_only_the_cluster_commands(tmp_path: Path) -> None:
    code, modules, _ = run_cli(["status", "--state-dir", str(tmp_path / "state")], tmp_path)
    assert code == 1  # no cluster there
    assert "oasis.cluster.commands" in modules
    heavy = ("whoosh", "matplotlib", "networkx", "oasis.bench", "oasis.replay", "oasis.freshness")
    assert loaded(modules, *heavy) == []


def test_bench_help_imports_no_benchmark(tmp_path: Path) -> None:
    code, modules, out = run_cli(["bench", "--help"], tmp_path)
    assert code == 0
    for name in BENCHMARKS:
        assert name in out
    assert [m for m in loaded(modules, "oasis.bench") if m not in {"oasis.bench", "oasis.bench.cli"}] == []
    assert loaded(modules, "grpc", "whoosh") == []


def test_a_command_loads_its_own_parser(tmp_path: Path) -> None:
    code, modules, out = run_cli(["status", "--help"], tmp_path)
    assert code == 0
    assert "--state-dir" in out and "--json" in out
    assert loaded(modules, "oasis.freshness", "oasis.bench", "oasis.replay", "oasis.robot") == []
    code, modules, out = run_cli(["bench", "scheduler", "--help"], tmp_path)
    assert code == 0 and "--sizes" in out
    assert "oasis.bench.scheduler" in modules
    assert loaded(modules, "oasis.bench.engine_index", "oasis.bench.load", "whoosh") == []


def _registered(module: str) -> dict[str, str | None]:
    """What ``module.register`` adds to a plain subparsers action: {command: help}."""
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(module).register(sub)
    return {a.dest: a.help for a in sub._choices_actions}


@pytest.mark.parametrize("table", [COMMANDS, BENCHMARKS], ids=["oasis", "oasis bench"])
def test_command_table_matches_what_the_modules_register(table: dict[str, Command]) -> None:
    for module in sorted({c.module for c in table.values()}):
        expected = {name: c.help for name, c in table.items() if c.module == module}
        assert _registered(module) == expected, module


def test_every_benchmark_module_is_in_the_table() -> None:
    folder = ROOT / "bench" / "oasis" / "bench"
    with_register = set()
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text())
        if path.stem != "cli" and any(
            isinstance(n, ast.FunctionDef) and n.name == "register" for n in tree.body
        ):
            with_register.add(f"oasis.bench.{path.stem}")
    assert with_register == {c.module for c in BENCHMARKS.values()}


def test_parse_dispatches_to_the_real_parser() -> None:
    args = build_parser().parse_args(["--log-level", "INFO", "search", "sql", "table", "-k", "3"])
    assert (args.command, args.query, args.k, args.log_level) == ("search", ["sql", "table"], 3, "INFO")
    from oasis.cluster.commands import cmd_search

    assert args.func is cmd_search


def test_search_takes_excluded_words_unquoted_and_other_commands_refuse_unknown_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``oasis search socket -tcp`` is the query "socket -tcp" (before session 30 argparse refused -tcp as an
    unknown option, and the query had to be quoted); an unknown option of any other command still is an
    error, and so is a search option's misuse."""
    from oasis.cli import parse

    args = parse(build_parser(), ["search", "socket", "-tcp", "-k", "3", "-udp"])
    assert (args.query, args.k) == (["socket", "-tcp", "-udp"], 3)
    assert parse(build_parser(), ["search", "--", "socket", "-kafka"]).query == ["socket", "-kafka"]
    for argv in (["status", "-tcp"], ["search", "socket", "-kafka"]):
        with pytest.raises(SystemExit) as exc:
            parse(build_parser(), argv)
        assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: -tcp" in err
    assert "argument -k: invalid int value: 'afka'" in err


def test_a_module_that_misses_a_table_command_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "oasis_fake_commands.py").write_text(
        "def register(sub):\n    sub.add_parser('one', help='first').set_defaults(func=None)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    parser = argparse.ArgumentParser(prog="x")
    table = {"one": Command("oasis_fake_commands", "first"), "two": Command("oasis_fake_commands", "second")}
    add_command_table(parser, table, dest="command", metavar="COMMAND")
    with pytest.raises(RuntimeError, match="two"):
        parser.parse_args(["one"])


def test_the_readme_command_table_names_every_command() -> None:
    """The README's table of the ``oasis`` command lists every command the CLI has (``oasis export`` and
    ``oasis engine`` were missing from it until session 27)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## The `oasis` command", 1)[1].split("\n\n", 2)[1]
    first_cells = [row.split(" | ", 1)[0] for row in table.splitlines() if row.startswith("| `oasis ")]
    named = {word for cell in first_cells for word in cell.replace("`", " ").replace(",", " ").split()}
    assert sorted(set(COMMANDS) - named) == []
