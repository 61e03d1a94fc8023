"""The ``oasis`` command. Each component contributes its subcommands through a ``register`` function."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

# Modules that define ``register(subparsers) -> None``; each subcommand sets ``func(args) -> int``.
COMMAND_MODULES = (
    "oasis.cluster.commands",  # up, down, status, search, index
    "oasis.robot.cli",  # crawl
    "oasis.replay.cli",  # replay
    "oasis.freshness.cli",  # ephemeral, whittle-learn, recrawl-eval
    "oasis.bench.cli",  # bench ...
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oasis", description="Oasis topic-specific search engine")
    parser.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from oasis.runtime.service import configure_logging

    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
