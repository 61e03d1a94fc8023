"""Subcommands that are imported only when they run: argparse subparsers built from a command table.

A command table maps a command name to the module that implements it and a one-line help. The parser lists
every command (``--help``) from the table alone; when argparse reaches the chosen command, its module is
imported and its ``register(subparsers)`` adds the real parser (all arguments, ``func`` default), which then
parses the rest of the command line. So ``oasis status`` never imports the benchmark harness, and
``oasis bench --help`` no benchmark. Standard library only.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    """One row of a command table: the module whose ``register(sub)`` adds the command, and its help."""

    module: str
    help: str


class LazySubcommands(argparse._SubParsersAction):
    """``parser.add_subparsers(action=LazySubcommands)``; then :meth:`add_table`.

    Until a command is chosen, each is a placeholder parser that only carries its name and help. When argparse
    dispatches to a placeholder, the module is imported, its placeholders are dropped, and the module's
    ``register(self)`` adds the real parsers (a module may add several commands of the table).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy: dict[str, str] = {}  # command -> module, for commands not yet loaded
        self._order: dict[str, int] = {}

    def add_table(self, table: Mapping[str, Command]) -> None:
        for name, command in table.items():
            self._order[name] = len(self._order)
            self._lazy[name] = command.module
            self.add_parser(name, help=command.help, add_help=False)

    def load(self, name: str) -> None:
        """Import the module of ``name`` and let it register its commands (no-op when already loaded)."""
        module = self._lazy.get(name)
        if module is None:
            return
        names = [n for n, m in self._lazy.items() if m == module]
        for n in names:
            del self._lazy[n]
            del self._name_parser_map[n]
        self._choices_actions[:] = [a for a in self._choices_actions if a.dest not in names]
        importlib.import_module(module).register(self)
        missing = [n for n in names if n not in self._name_parser_map]
        if missing:
            raise RuntimeError(f"{module}.register did not add the commands {missing} of the command table")
        # keep --help listing in table order
        self._choices_actions.sort(key=lambda a: self._order.get(a.dest, len(self._order)))

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if isinstance(values, Sequence) and values and not isinstance(values, str):
            self.load(str(values[0]))
        super().__call__(parser, namespace, values, option_string)


def add_command_table(
    parser: argparse.ArgumentParser, table: Mapping[str, Command], *, dest: str, metavar: str
) -> LazySubcommands:
    """Required subcommands of ``parser`` from ``table``, each imported only when chosen."""
    sub = parser.add_subparsers(dest=dest, required=True, metavar=metavar, action=LazySubcommands)
    assert isinstance(sub, LazySubcommands)
    sub.add_table(table)
    return sub
