"""Build a robot from command-line flags (shared by ``python -m oasis.robot`` and ``oasis crawl``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import random
import tomllib
from pathlib import Path
from typing import Any

from oasis.robot.config import LEARNING_POLICY, RobotConfig
from oasis.robot.crawler import Crawler
from oasis.robot.engine_client import connect_engine
from oasis.robot.rates import RATES_FILE
from oasis.robot.scheduling import POLICIES, SHIPPED, ControllerConfig, QTable, make_controller
from oasis.runtime.clients import EngineClient
from oasis.runtime.urls import InvalidURL, canonicalize, host_of

logger = logging.getLogger(__name__)

Q_TABLE_FILE = "q_table.json"
# ControllerConfig keys that every policy reads; all others only the learning policy reads
_ALL_POLICY_KEYS = frozenset({"recrawl_rekey"})


def add_robot_arguments(p: argparse.ArgumentParser, *, q_table_default: str = "none") -> None:
    """The robot's flags. ``q_table_default`` says in --help where the robot keeps its Q-table by default."""
    p.add_argument("--seeds", nargs="*", default=[], metavar="URL", help="seed URLs (http/https)")
    p.add_argument(
        "--max-pages", type=int, default=0, help="stop after this many page requests (0: no limit)"
    )
    p.add_argument(
        "--pages-per-second",
        type=float,
        default=0.0,
        help="page budget per second (0: none); with --recrawl the robot keeps maintaining its topic",
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
    p.add_argument(
        "--ignore-last-modified",
        dest="last_modified",
        action="store_false",
        help="do not learn change rates from a first retrieval's Last-Modified (servers whose dates say "
        "nothing of their pages)",
    )
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
    p.add_argument(
        "--controller-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="request controller parameters: a JSON (or .toml) object of ControllerConfig fields "
        "(state, alpha, alpha_passive, gamma, epsilon, q_init, relevance_bins, anchor_bins, max_depth, "
        "recrawl_rekey, learn, prior, rediscovery); default: the built-in values",
    )
    p.add_argument(
        "--q-table",
        type=Path,
        default=None,
        metavar="PATH",
        help="the robot's own Q-table (policy whittle): loaded at start if it exists, saved atomically "
        f"at every checkpoint and on stop, so a restarted robot keeps what it learned (default: "
        f"{q_table_default})",
    )
    p.add_argument(
        "--initial-q-table",
        type=Path,
        default=None,
        metavar="PATH",
        help="a shipped or offline-trained Q-table (e.g. from 'oasis replay --save-q') to start from "
        "while the robot has no table of its own (no --q-table file, no checkpoint)",
    )


def add_rates_arguments(p: argparse.ArgumentParser, *, rates_default: str = "none") -> None:
    """Where the re-crawl change-rate estimates persist (``--recrawl whittle``)."""
    p.add_argument(
        "--rates",
        type=Path,
        default=None,
        metavar="PATH",
        help="the robot's change-rate estimates (--recrawl whittle): loaded at start if the file exists, "
        f"saved atomically at every checkpoint and on stop (default: {rates_default})",
    )
    p.add_argument(
        "--initial-rates",
        type=Path,
        default=None,
        metavar="PATH",
        help="change-rate estimates to start from while the robot has none of its own",
    )


def load_controller_config(path: Path) -> ControllerConfig:
    """A :class:`ControllerConfig` from a JSON object (or a TOML table for ``*.toml``) of its fields.

    Raises ValueError naming the file (and the key) for unreadable files, unknown keys and bad values."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read controller config {path}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"controller config {path}: not UTF-8 text (byte {exc.start})") from exc
    is_toml = path.suffix.lower() == ".toml"
    try:
        data: Any = tomllib.loads(text) if is_toml else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        kind = "TOML" if is_toml else "JSON"
        raise ValueError(f"controller config {path}: not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"controller config {path}: expected an object of ControllerConfig fields")
    return controller_config_from_dict(data, source=str(path))


def controller_config_from_dict(data: dict[str, Any], *, source: str) -> ControllerConfig:
    """Check each key (known field, right type, valid value) and build the config; errors name the key."""
    defaults = SHIPPED  # the robot as shipped; the file overrides the fields it names
    known = {f.name for f in dataclasses.fields(ControllerConfig)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise ValueError(
                f"controller config {source}: unknown key {key!r}; known keys: {', '.join(sorted(known))}"
            )
        expected = type(getattr(defaults, key))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if type(value) is not expected:
            raise ValueError(
                f"controller config {source}: key {key!r} must be {expected.__name__}, got {value!r}"
            )
        try:
            ControllerConfig(**{key: value})  # each key's own check, so the message can name it
        except ValueError as exc:
            raise ValueError(f"controller config {source}: key {key!r}: {exc}") from exc
        values[key] = value
    try:
        return dataclasses.replace(SHIPPED, **values)
    except ValueError as exc:
        raise ValueError(f"controller config {source}: {exc}") from exc


def load_q_table(path: Path) -> QTable:
    """Read a Q-table file; ValueError naming the file if it is unreadable or not a Q-table."""
    try:
        return QTable.load(path)  # (its ValueError names the file)
    except OSError as exc:
        raise ValueError(f"cannot load Q-table {path}: {exc.strerror or exc}") from exc


def config_from_args(
    args: argparse.Namespace, *, name: str, state_dir: Path | None, default_q_table: Path | None = None
) -> RobotConfig:
    """The robot's config; the crawl scope is the seeds' hosts plus ``--allow-host`` unless ``--any-host``.

    ``--q-table`` falls back to ``default_q_table`` for the learning policy. Learning flags with a policy
    that learns nothing, a bad controller config or a missing initial table raise ValueError."""
    allowed: frozenset[str] | None = None
    if not args.any_host:
        hosts = set(args.allow_host)
        for url in args.seeds:
            try:
                hosts.add(host_of(canonicalize(url)))
            except InvalidURL:
                continue
        allowed = frozenset(hosts) if hosts else None
    extra: dict[str, Any] = {} if args.user_agent is None else {"user_agent": args.user_agent}
    learning = args.policy == LEARNING_POLICY
    if not learning and (args.q_table is not None or args.initial_q_table is not None):
        raise ValueError(
            f"policy {args.policy!r} learns no Q-table: --q-table and --initial-q-table need "
            f"--policy {LEARNING_POLICY}"
        )
    if args.controller_config is not None:
        controller = load_controller_config(args.controller_config)
        if not learning:
            ignored = sorted(
                f.name
                for f in dataclasses.fields(ControllerConfig)
                if f.name not in _ALL_POLICY_KEYS and getattr(controller, f.name) != getattr(SHIPPED, f.name)
            )
            if ignored:
                raise ValueError(
                    f"controller config {args.controller_config}: policy {args.policy!r} learns nothing "
                    f"and ignores {', '.join(ignored)} (only --policy {LEARNING_POLICY} reads them)"
                )
        extra["controller"] = controller
    if args.initial_q_table is not None and not args.initial_q_table.is_file():
        raise ValueError(f"initial Q-table {args.initial_q_table} does not exist")
    q_table = args.q_table if args.q_table is not None else (default_q_table if learning else None)
    rates = getattr(args, "rates", None)
    initial_rates = getattr(args, "initial_rates", None)
    if initial_rates is not None and not initial_rates.is_file():
        raise ValueError(f"initial change rates {initial_rates} does not exist")
    if rates is None and args.recrawl == "whittle" and state_dir is not None and default_q_table is not None:
        rates = default_q_table.parent / RATES_FILE  # beside the robot's own Q-table
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
        pages_per_second=args.pages_per_second,
        rates=rates,
        initial_rates=initial_rates,
        checkpoint_interval=args.checkpoint_interval,
        min_relevance=args.min_relevance,
        last_modified=args.last_modified,
        state_dir=state_dir,
        q_table=q_table,
        initial_q_table=args.initial_q_table,
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
    """The crawler and its engine client; the request controller is built from ``config.policy`` and
    ``config.controller`` and starts from :func:`start_q_table`. Call :func:`resume_crawler` next.
    Raises ValueError (naming the file) for an unreadable Q-table."""
    table = start_q_table(config)  # first: a bad table is reported before anything starts
    hook = None
    if recrawl == "whittle":
        from oasis.robot.scheduling.recrawl import WhittleRecrawl

        hook = WhittleRecrawl(period=recrawl_period)
    engine = connect_engine(engine_address, timeout=config.engine_timeout)
    controller = make_controller(
        config.policy, rng=random.Random(seed), config=config.controller, recrawl_index=hook, q=table
    )
    crawler = Crawler(config, controller, engine)
    crawler.recrawl_hook = hook
    return crawler, engine


def start_q_table(config: RobotConfig) -> QTable | None:
    """The table a robot starts from: its own (``q_table``) if that file exists, else ``initial_q_table``,
    else None (a fresh table). Read before anything is written, so a corrupt file is reported (ValueError
    naming it) and never overwritten."""
    for path, what in ((config.q_table, "own"), (config.initial_q_table, "initial")):
        if path is not None and (what == "initial" or path.exists()):
            table = load_q_table(path)
            logger.info("%s: starts from the %s Q-table %s (%d states)", config.name, what, path, len(table))
            return table
    return None


def load_start_rates(crawler: Crawler) -> int:
    """Load the robot's own change-rate estimates (``rates``) if that file exists, else ``initial_rates``.
    Returns the number of pages with estimates; ValueError naming an unreadable file."""
    hook = crawler.recrawl_hook
    if hook is None:
        return 0
    from oasis.robot.rates import load_rates_file

    cfg = crawler.config
    for path in (cfg.rates, cfg.initial_rates):
        if path is not None and path.exists():
            return load_rates_file(hook, path)
    return 0


def resume_crawler(crawler: Crawler) -> bool:
    """Resume from the checkpoint (:meth:`Crawler.resume`), keeping the robot's own Q-table file.

    A checkpoint holds the controller's table as it was at that checkpoint; the ``q_table`` file is written
    then or later (and on stop), so when it exists it replaces the checkpoint's copy: a restarted robot
    never goes back to fewer updates than it saved. Without a file of its own, a resumed robot keeps the
    checkpoint's table (its ``initial_q_table`` is only a starting point)."""
    load_start_rates(crawler)  # first: the controller's re-crawl arms then find their learned histories
    resumed = crawler.resume()
    path = crawler.config.q_table
    if resumed and path is not None and path.exists():
        try:
            crawler.controller.load_q(path)
        except (OSError, ValueError, TypeError) as exc:
            raise ValueError(f"cannot load Q-table {path}: {exc}") from exc
    return resumed
