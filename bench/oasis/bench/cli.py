"""``oasis bench NAME``: every module in ``oasis.bench`` that defines ``register(sub)`` adds one benchmark.

Benchmarks print a table and write JSON (``--json-out``); they measure ratios against a baseline run in the
same process, because absolute times drift on a shared machine.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
from typing import Any

logger = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser("bench", help="run a benchmark (prints a table, writes JSON)")
    bench_sub = parser.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    import oasis.bench as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name in {"cli", "common"} or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"oasis.bench.{info.name}")
        hook = getattr(module, "register", None)
        if callable(hook):
            hook(bench_sub)
