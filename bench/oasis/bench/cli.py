"""``oasis bench NAME``: the benchmarks of :data:`BENCHMARKS` (a module's ``register(sub)`` adds them).

The table names each benchmark's module and one-line help, so ``oasis bench --help`` imports no benchmark
and ``oasis bench NAME`` imports only NAME's module (see :mod:`oasis.runtime.commands`). A new benchmark
module needs a row here (tests/test_cli_lazy.py checks that every module with ``register`` has one).

Benchmarks print a table and write JSON (``--json-out``); they measure ratios against a baseline run in the
same process, because absolute times drift on a shared machine.
"""

from __future__ import annotations

import argparse
from typing import Any

from oasis.runtime.commands import Command, add_command_table

_ENGINE = "oasis.bench.engine_index"

BENCHMARKS: dict[str, Command] = {
    "checkpoint": Command(
        "oasis.bench.checkpoint", "controller checkpoint write / restore time vs parsing its JSON"
    ),
    "cli-start": Command(
        "oasis.bench.cli_start", "oasis search/--help/up/down wall time vs python -c 'import grpc'"
    ),
    "crawl": Command("oasis.bench.crawl", "robot pages/s vs a plain requests loop and Scrapy on a local web"),
    "engine-index": Command(_ENGINE, "engine indexing docs/s over gRPC vs raw Whoosh on the same documents"),
    "engine-query": Command(
        _ENGINE, "engine query latency p50/p99 and queries/s over gRPC vs raw Whoosh in-process"
    ),
    "gateway": Command(
        "oasis.bench.gateway", "GET /search?format=json latency vs a direct broker gRPC call (p50/p99, ratio)"
    ),
    "load": Command("oasis.bench.load", "concurrent clients against the broker over 3 engines"),
    "merge-quality": Command(
        "oasis.bench.merge_quality", "broker merged ranking vs one central Whoosh index"
    ),
    "parse": Command(
        "oasis.bench.parse", "parse_html pages/s: lxml vs bs4-lxml vs html.parser, on real pages"
    ),
    "query-latency": Command(
        "oasis.bench.query_latency", "p50/p99 and q/s: bare Whoosh vs direct vs one engine vs broker"
    ),
    "replay-scale": Command("oasis.bench.replay_scale", "replay time of synthetic webs of 1e5 and 1e6 pages"),
    "scheduler": Command(
        "oasis.bench.scheduler", "request controller: decisions/s and memory at 1e4..1e6 queued URLs"
    ),
    "whoosh-lines": Command(
        "oasis.bench.whoosh_lines", "Whoosh 2.7.4 vs whoosh-reloaded vs whoosh3: format, results, speed"
    ),
    "web": Command("oasis.bench.web", "HTML parsing, synthetic web generation, replayed-web serving"),
}


def register(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser("bench", help="run a benchmark (prints a table, writes JSON)")
    add_command_table(parser, BENCHMARKS, dest="bench", metavar="BENCHMARK")
