"""Build a robot from command-line flags (shared by ``python -m oasis.robot`` and ``oasis crawl``)."""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from oasis.robot.config import RobotConfig
from oasis.robot.crawler import Crawler
from oasis.robot.engine_client import EngineClient
from oasis.robot.scheduling import POLICIES, make_controller
from oasis.runtime.urls import InvalidURL, canonicalize, host_of


def add_robot_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", nargs="*", default=[], metavar="URL", help="seed URLs (http/https)")
    p.add_argument(
        "--max-pages", type=int, default=0, help="stop after this many page requests (0: no limit)"
    )
    p.add_argument("--policy", default="whittle", choices=POLICIES, help="request controller policy")
    p.add_argument("--min-delay", type=float, default=1.0, help="seconds between requests to one host")
    p.add_argument("--max-in-flight", type=int, default=8, help="upper bound of concurrent requests")
    p.add_argument("--no-politeness", action="store_true", help="no per-host delay (local benchmarks only)")
    p.add_argument("--checkpoint-interval", type=int, default=100, help="pages between checkpoints")
    p.add_argument("--timeout", type=float, default=10.0, help="read timeout per request (s)")
    p.add_argument("--max-bytes", type=int, default=2 * 1024 * 1024, help="decoded body cap per page")
    p.add_argument("--user-agent", default=None, help="User-Agent header")
    p.add_argument("--seed", type=int, default=0, help="random seed of the request controller")
    p.add_argument(
        "--recrawl",
        choices=("none", "whittle"),
        default="none",
        help="re-crawl retrieved pages by the ephemeral-content Whittle index (papers/002); "
        "the robot then runs until stopped or --max-pages",
    )
    p.add_argument(
        "--recrawl-period",
        type=float,
        default=60.0,
        help="seconds per scheduler period T of the re-crawl index",
    )
    p.add_argument("--min-relevance", type=float, default=0.0, help="index only pages scored at least this")
    private = p.add_mutually_exclusive_group()
    private.add_argument(
        "--allow-private",
        dest="refuse_private",
        action="store_false",
        default=False,
        help="fetch private / loopback addresses (default; the local replayed web)",
    )
    private.add_argument(
        "--refuse-private",
        dest="refuse_private",
        action="store_true",
        help="refuse hosts that resolve to private / loopback addresses",
    )
    scope = p.add_mutually_exclusive_group()
    scope.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="also crawl this host (default scope: the seeds' hosts)",
    )
    scope.add_argument("--any-host", action="store_true", help="follow links to any host")


def config_from_args(args: argparse.Namespace, *, name: str, state_dir: Path | None) -> RobotConfig:
    """The robot's config; the crawl scope is the seeds' hosts plus ``--allow-host`` unless ``--any-host``."""
    allowed: frozenset[str] | None = None
    if not args.any_host:
        hosts = set(args.allow_host)
        for url in args.seeds:
            try:
                hosts.add(host_of(canonicalize(url)))
            except InvalidURL:
                continue
        allowed = frozenset(hosts) if hosts else None
    extra = {} if args.user_agent is None else {"user_agent": args.user_agent}
    return RobotConfig(
        name=name,
        policy=args.policy,
        politeness=not args.no_politeness,
        min_delay=args.min_delay,
        max_in_flight=args.max_in_flight,
        read_timeout=args.timeout,
        max_bytes=args.max_bytes,
        refuse_private=args.refuse_private,
        allowed_hosts=allowed,
        max_pages=args.max_pages,
        checkpoint_interval=args.checkpoint_interval,
        min_relevance=args.min_relevance,
        state_dir=state_dir,
        **extra,
    )


def build_crawler(
    config: RobotConfig,
    engine_address: str,
    *,
    seed: int = 0,
    recrawl: str = "none",
    recrawl_period: float = 60.0,
) -> tuple[Crawler, EngineClient]:
    engine = EngineClient(engine_address, timeout=config.engine_timeout)
    hook = None
    if recrawl == "whittle":
        from oasis.robot.scheduling.recrawl import WhittleRecrawl

        hook = WhittleRecrawl(period=recrawl_period)
    controller = make_controller(config.policy, rng=random.Random(seed), recrawl_index=hook)
    return Crawler(config, controller, engine), engine
