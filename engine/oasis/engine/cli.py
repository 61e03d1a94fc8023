"""``oasis engine check DIR`` / ``oasis engine repair DIR``: an engine's index directory, offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser(
        "engine",
        help="check or repair an engine's index directory (the engine must be stopped)",
        description=(
            "check: list what is wrong with an index directory (missing table of contents, missing, "
            "truncated or altered segments), exit 1 if anything is. repair: re-index every readable document "
            "into a new index in place; the old files are kept in DIR/oasis-damaged-<time>/."
        ),
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="report problems (exit 1 if any)")
    check.add_argument("index_dir", type=Path)
    check.add_argument("--deep", action="store_true", help="also read every recorded segment in full")
    check.set_defaults(func=run_check)
    repair = actions.add_parser("repair", help="salvage every readable document into a new index")
    repair.add_argument("index_dir", type=Path)
    repair.set_defaults(func=run_repair)


def _locked(directory: Path) -> Any:
    """The index directory's owner lock, or the exit code after saying why not (2: not a directory, 1: an
    engine holds it)."""
    from oasis.engine.index import IndexBusy, owner_lock
    from oasis.engine.integrity import holds_index

    if not directory.is_dir():
        print(f"error: {directory} is not a directory", file=sys.stderr)
        return 2
    try:
        found = holds_index(directory)
        inside = [] if found else sorted(p.name for p in directory.iterdir() if p.is_dir() and holds_index(p))
    except OSError as exc:
        print(f"error: cannot read {directory}: {exc}", file=sys.stderr)
        return 2
    if not found:  # checked before the lock, which would leave its file in a folder that is not an index
        hint = f"; the index folders inside it: {', '.join(inside)}" if inside else ""
        print(
            f"error: {directory} holds no engine index (no table of contents, segment or log){hint}",
            file=sys.stderr,
        )
        return 2
    try:
        return owner_lock(directory)
    except IndexBusy as exc:
        print(f"error: {exc}: stop the engine first", file=sys.stderr)
        return 1


def run_check(args: argparse.Namespace) -> int:
    from oasis.engine.integrity import verify

    directory: Path = args.index_dir
    lock = _locked(directory)
    if isinstance(lock, int):
        return lock
    try:
        report = verify(directory, deep=args.deep)
    finally:
        lock.release()
    print(f"{directory}: {report.segments} segments, {report.documents} documents")
    for name in report.unlisted:
        print(f"  note: {name} is listed by no table of contents (kept aside when the engine starts)")
    for problem in report.problems:
        print(f"  PROBLEM: {problem}")
    print("ok" if report.ok else f"{len(report.problems)} problem(s): run `oasis engine repair {directory}`")
    return 0 if report.ok else 1


def run_repair(args: argparse.Namespace) -> int:
    from oasis.engine.index import make_schema
    from oasis.engine.integrity import repair, verify

    directory: Path = args.index_dir
    lock = _locked(directory)
    if isinstance(lock, int):
        return lock
    try:
        salvage = repair(directory, make_schema())
        after = verify(directory)
    finally:
        lock.release()
    print(f"{directory}: {salvage.documents} documents salvaged, {salvage.lost} unreadable")
    for line in salvage.unreadable:
        print(f"  unreadable segment: {line}")
    print(f"old files kept in {salvage.kept_in}")
    return 0 if after.ok else 1
