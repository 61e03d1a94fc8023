"""The ``oasis`` command.

:data:`COMMANDS` lists every subcommand with the module that implements it and a one-line help, so
``oasis --help`` needs none of them, and ``oasis CMD ...`` imports only CMD's module, whose
``register(subparsers)`` adds the command's parser (``func(args) -> int``). See
:mod:`oasis.runtime.commands`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from oasis.runtime.commands import Command, add_command_table

_CLUSTER = "oasis.cluster.commands"
_FRESHNESS = "oasis.freshness.cli"

COMMANDS: dict[str, Command] = {
    "up": Command(_CLUSTER, "start a local cluster (Ctrl-C or `oasis down` stops it)"),
    "down": Command(_CLUSTER, "stop the cluster"),
    "restart": Command(_CLUSTER, "restart one service (same command line and port)"),
    "status": Command(_CLUSTER, "services, addresses, health, document counts"),
    "watch": Command(_CLUSTER, "live status: R/F/M per topic, robots' progress (Ctrl-C stops)"),
    "report": Command("oasis.freshness.live_report", "PNG plots of live R/F/M per topic over time"),
    "search": Command(_CLUSTER, "query the cluster through the broker"),
    "index": Command(_CLUSTER, "bulk-load local HTML files or folders into one engine"),
    "demo": Command(_CLUSTER, "the main job: cluster + robots crawl the built-in web + queries"),
    "export": Command("oasis.cluster.export", "write every document of one engine to a JSONL or WARC file"),
    "engine": Command(
        "oasis.engine.cli", "check or repair an engine's index directory (the engine must be stopped)"
    ),
    "crawl": Command("oasis.robot.cli", "crawl from seed URLs into a topic engine (progress bar, summary)"),
    "replay": Command(
        "oasis.replay.cli",
        "compare crawl policies on an offline web graph (P / P_upper, papers/004 Figures 3-5)",
    ),
    "ephemeral": Command(
        _FRESHNESS, "crawl sources of ephemeral content: Whittle index vs baselines (papers/002, 003, 000)"
    ),
    "whittle-learn": Command(_FRESHNESS, "Whittle-index Q-learning on N identical arms (papers/001)"),
    "recrawl-eval": Command(
        _FRESHNESS,
        "re-crawl policies at equal budget on a changing collection / replayed web: F and M over time",
    ),
    "bench": Command("oasis.bench.cli", "run a benchmark (prints a table, writes JSON)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oasis", description="Oasis topic-specific search engine")
    parser.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    add_command_table(parser, COMMANDS, dest="command", metavar="COMMAND")
    return parser


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, except that ``oasis search``'s query may hold ``-word``s unquoted: an
    argument that is no option of the command, starting with ``-``, is a word of the query (the engines read
    ``-word`` as "without word"), so ``oasis search socket -tcp`` is the query ``socket -tcp``."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        words = all(w.startswith("-") and len(w) > 1 for w in extra)
        if getattr(args, "command", None) == "search" and words:
            args.query = [*args.query, *extra]
        else:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parse(parser, argv)
    from oasis.runtime.service import configure_logging

    configure_logging(args.log_level)
    json_out = getattr(args, "json_out", None)
    if json_out is not None:  # benchmarks and `oasis crawl` write it at the end: its folder is checked first
        from oasis.runtime.files import FileWriteError, writable_folder

        if Path(json_out).is_dir():
            print(f"oasis: --json-out {json_out}: a folder; name the file to write", file=sys.stderr)
            return 2
        try:
            writable_folder(Path(json_out).resolve().parent)
        except FileWriteError as exc:
            print(f"oasis: --json-out {json_out}: {exc}", file=sys.stderr)
            return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except OSError as exc:  # a result the disk refused at the end (full, read-only): the file and why
        from oasis.runtime.files import FileWriteError

        if not isinstance(exc, FileWriteError):
            raise
        print(f"oasis {args.command}: {exc}", file=sys.stderr)
        return 1
