"""``oasis crawl``: run one robot in-process against seed URLs, with a progress bar and a summary."""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from oasis.runtime.addresses import address_arg
from oasis.runtime.files import write_json_atomic
from oasis.runtime.spawn import spawn_service

logger = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    from oasis.robot.app import Q_TABLE_FILE, add_robot_arguments

    p = sub.add_parser(
        "crawl",
        help="crawl from seed URLs into a topic engine (progress bar, summary)",
        description=(
            "Run one robot in this process. With --engine HOST:PORT it indexes into that engine; "
            "without it, a temporary engine for --topic/--keywords is started (index in "
            "--state-dir/index, or a temp dir) and stopped at the end."
        ),
    )
    add_robot_arguments(p, q_table_default=f"STATE_DIR/robot/{Q_TABLE_FILE} with --state-dir, else none")
    p.add_argument(
        "--engine",
        default=None,
        type=address_arg,
        help="HOST:PORT of a running engine (omit: start a temporary one)",
    )
    p.add_argument("--topic", default="topic", help="topic name of the temporary engine")
    p.add_argument("--description", default="", help="topic description of the temporary engine")
    p.add_argument("--keywords", default="", help="comma-separated keywords of the temporary engine")
    p.add_argument("--state-dir", type=Path, default=None, help="checkpoint directory (resumed if present)")
    p.add_argument("--name", default="crawl", help="robot name")
    p.add_argument("--time-limit", type=float, default=None, help="stop after this many seconds")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json-out", type=Path, default=None, help="write the final status as JSON")
    p.set_defaults(func=run_crawl)


def _start_engine(args: argparse.Namespace, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    cmd = [
        sys.executable, "-m", "oasis.engine",
        "--name", f"{args.name}-engine", "--topic", args.topic, "--description", args.description,
        "--keywords", args.keywords, "--index-dir", str(workdir / "index"),
        "--log-level", "WARNING",
    ]  # fmt: skip
    engine = spawn_service(cmd, workdir / "engine.json", timeout=30, name="temporary engine", cwd=workdir)
    return engine.process, engine.address


def run_crawl(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from oasis.robot.app import Q_TABLE_FILE, build_crawler, config_from_args, resume_crawler
    from oasis.robot.engine_port import RobotEngineError
    from oasis.robot.scheduling.gcpolicy import freeze_long_lived

    if args.time_limit is not None and not args.time_limit > 0:  # it was taken as "stop at once"
        print(f"error: --time-limit must be > 0 seconds, got {args.time_limit}", file=sys.stderr)
        return 2
    tmp: tempfile.TemporaryDirectory[str] | None = None
    engine_proc: subprocess.Popen[bytes] | None = None
    try:
        if args.state_dir is None:
            tmp = tempfile.TemporaryDirectory(prefix="oasis-crawl-")
            state_dir = Path(tmp.name)
        else:
            state_dir = args.state_dir
            state_dir.mkdir(parents=True, exist_ok=True)
        robot_dir = state_dir / "robot"
        # a temporary state dir forgets everything at the end: no default table there
        default_q = robot_dir / Q_TABLE_FILE if args.state_dir is not None else None
        try:
            config = config_from_args(args, name=args.name, state_dir=robot_dir, default_q_table=default_q)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        address = args.engine
        if address is None:
            if not args.keywords:
                print("error: give --engine HOST:PORT, or --keywords for a temporary engine", file=sys.stderr)
                return 2
            engine_proc, address = _start_engine(args, state_dir)
        try:
            crawler, engine = build_crawler(
                config, address, seed=args.seed, recrawl=args.recrawl, recrawl_period=args.recrawl_period
            )
        except ValueError as exc:  # an unreadable Q-table (nothing written)
            print(f"error: {exc}", file=sys.stderr)
            return 2
        try:
            engine.wait_ready(30)
            try:
                resumed = resume_crawler(crawler)
            except (RuntimeError, ValueError) as exc:  # an unreadable checkpoint or Q-table
                print(f"error: {exc}", file=sys.stderr)
                return 1
            seeds = crawler.add_seeds(args.seeds)
            if not seeds and not resumed:
                print("error: no valid http(s) seed URL", file=sys.stderr)
                return 2
            freeze_long_lived()  # the controller is built and resumed (scheduling.gcpolicy)
            crawler.start()
            start = time.monotonic()
            total = args.max_pages or None
            limited = False
            with tqdm(total=total, unit="page", disable=args.no_progress, file=sys.stderr) as bar:
                while not crawler.wait(0.5):
                    s = crawler.status()
                    bar.n = s.pages_fetched
                    bar.set_postfix(
                        indexed=s.pages_indexed, frontier=s.frontier_size, inflight=s.in_flight,
                        harvest=f"{s.harvest_rate:.2f}",
                    )  # fmt: skip
                    bar.refresh()
                    if args.time_limit is not None and time.monotonic() - start > args.time_limit:
                        limited = True
                        break
                # at the time limit, requests in flight are abandoned (fetched again on resume); checkpoint
                crawler.stop(abandon_in_flight=limited)
                s = crawler.status()
                bar.n = s.pages_fetched
                bar.refresh()
        except RobotEngineError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        finally:
            crawler.close()
            engine.close()
        _print_summary(s, address)
        if args.json_out is not None:
            write_json_atomic(args.json_out, s.__dict__, indent=2, default=str)
        return 0
    finally:
        if engine_proc is not None:
            engine_proc.terminate()
            try:
                engine_proc.wait(15)
            except subprocess.TimeoutExpired:
                engine_proc.kill()
        if tmp is not None:
            tmp.cleanup()


def _print_summary(s: Any, address: str) -> None:
    print(f"engine            {address}")
    print(f"state             {s.state}")
    print(f"pages fetched     {s.pages_fetched}")
    print(f"pages indexed     {s.pages_indexed}")
    print(f"frontier left     {s.frontier_size}")
    print(f"harvest rate      {s.harvest_rate:.3f}  (mean relevance of fetched pages)")
    print(f"recall estimate   {s.recall_estimate:.3f}")
    print(f"elapsed           {s.elapsed:.1f} s  ({s.pages_per_second:.1f} pages/s)")
    fc = s.fetcher_controller
    target, peak = fc.get("target_in_flight", 0), fc.get("max_target_in_flight", 0)
    print(
        f"fetcher control   target {target:.0f} (max {peak:.0f}), "
        f"latency {fc.get('latency_s', 0) * 1000:.1f} ms, service {fc.get('service_rate_per_s', 0):.0f}/s"
    )
    if s.errors:
        print("errors            " + ", ".join(f"{k}={v}" for k, v in sorted(s.errors.items())))
    if s.links_skipped:
        print("links skipped     " + ", ".join(f"{k}={v}" for k, v in sorted(s.links_skipped.items())))
