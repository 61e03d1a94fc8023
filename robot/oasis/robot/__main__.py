"""``python -m oasis.robot``: one topic-specific web robot as a gRPC service (see docs/robot.md)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from oasis.robot.app import (
    Q_TABLE_FILE,
    add_rates_arguments,
    add_robot_arguments,
    build_crawler,
    config_from_args,
    resume_crawler,
)
from oasis.robot.engine_port import RobotEngineError
from oasis.robot.metrics import ProgressLog, crawler_families
from oasis.robot.scheduling.gcpolicy import freeze_long_lived
from oasis.robot.servicer import RobotServicer, add_robot_servicer
from oasis.runtime.addresses import address_arg
from oasis.runtime.metrics import register_collector
from oasis.runtime.service import (
    add_server_arguments,
    build_server,
    configure_logging,
    run_until_signal,
    server_config,
)

logger = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m oasis.robot", description="Oasis topic-specific web robot")
    p.add_argument("--name", required=True, help="robot name")
    p.add_argument("--engine", required=True, type=address_arg, help="HOST:PORT of this robot's topic engine")
    p.add_argument("--state-dir", required=True, type=Path, help="checkpoint directory (resumed if present)")
    p.add_argument("--autostart", action="store_true", help="start crawling at once")
    p.add_argument("--engine-wait", type=float, default=30.0, help="seconds to wait for the engine at start")
    p.add_argument(
        "--progress-seconds", type=float, default=10.0, help="log a progress line this often (0: never)"
    )
    add_server_arguments(p)
    add_robot_arguments(p, q_table_default=f"STATE_DIR/{Q_TABLE_FILE}")
    add_rates_arguments(p, rates_default="STATE_DIR/rates.json with --recrawl whittle")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    progress: ProgressLog | None = None
    configure_logging(args.log_level, args.log_format, service=args.name)
    try:
        config = config_from_args(
            args, name=args.name, state_dir=args.state_dir, default_q_table=args.state_dir / Q_TABLE_FILE
        )
        serving = server_config(args)
        if args.progress_seconds < 0:
            raise ValueError(f"--progress-seconds must be >= 0, got {args.progress_seconds}")
        crawler, engine = build_crawler(
            config, args.engine, seed=args.seed, recrawl=args.recrawl, recrawl_period=args.recrawl_period
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        try:
            engine.wait_ready(args.engine_wait)
        except RobotEngineError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        try:
            resumed = resume_crawler(crawler)
        except (RuntimeError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        if args.seeds:
            crawler.add_seeds(args.seeds)
        freeze_long_lived()  # the controller is built and resumed: full collections skip it (gcpolicy)
        register_collector(crawler_families(crawler))
        running = build_server(serving, lambda server: add_robot_servicer(server, RobotServicer(crawler)))
        if args.progress_seconds > 0:
            progress = ProgressLog(args.name, crawler.status, args.progress_seconds)
            progress.start()
        if args.autostart or resumed:
            crawler.start()
        run_until_signal(running, on_stop=crawler.close)  # SIGTERM: stop, flush to the engine, checkpoint
    finally:
        if progress is not None:
            progress.stop()
        crawler.close()
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
