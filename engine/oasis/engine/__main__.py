"""``python -m oasis.engine``: run one per-topic engine (see docs/engine.md)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from oasis.engine.config import EngineConfig, parse_allowed_hosts
from oasis.engine.index import IndexBusy, TopicIndex
from oasis.engine.integrity import IndexDamaged
from oasis.engine.metrics import index_families
from oasis.engine.relevance import RelevanceModel
from oasis.engine.servicer import EngineServicer, add_engine_servicer, summary_to_proto
from oasis.engine.topic import InvalidTopic, Topic
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
    p = argparse.ArgumentParser(prog="python -m oasis.engine", description="Oasis per-topic search engine")
    p.add_argument("--name", required=True, help="engine name (directory registration key)")
    p.add_argument("--topic", required=True, help="topic name")
    p.add_argument("--description", default="", help="topic description (free text)")
    p.add_argument("--keywords", default="", help="comma-separated topic keywords")
    p.add_argument("--index-dir", required=True, type=Path, help="Whoosh index directory (created if absent)")
    p.add_argument(
        "--directory",
        default=None,
        type=address_arg,
        help="HOST:PORT of the engine directory (omit: no registration)",
    )
    p.add_argument("--heartbeat-seconds", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=256, help="commit after this many buffered operations")
    p.add_argument("--limitmb", type=int, default=256, help="Whoosh writer memory limit per commit (MB)")
    p.add_argument(
        "--commit-seconds",
        type=float,
        default=EngineConfig.commit_seconds,
        help="commit batches held only in the write-ahead log at least this often (reads commit at once)",
    )
    p.add_argument(
        "--summary-terms",
        type=int,
        default=EngineConfig.summary_terms,
        help="terms in the summary for the directory (routing skips engines lacking all query terms)",
    )
    p.add_argument("--allowed-hosts", default="", help="comma-separated hosts; refuse to index any other")
    p.add_argument(
        "--recover",
        action="store_true",
        help="if the index is damaged, salvage every readable document first (as `oasis engine repair`)",
    )
    add_server_arguments(p)
    return p


# The index's applier thread runs Whoosh's writer (pure Python, CPU-bound) while gRPC threads answer Score,
# Index and Search calls; with Python's default 5 ms switch interval each of those calls waits up to 5 ms for
# the GIL at every hand-over. 1 ms: the crawl benchmark's robot ran 1.05-1.16x faster in three of three
# alternated rounds, with the same engine CPU (issue 14, docs/speed.md).
SWITCH_INTERVAL = 0.001


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level, args.log_format, service=args.name)
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        config = EngineConfig(
            name=args.name,
            topic=Topic.parse(args.topic, args.description, args.keywords),
            index_dir=args.index_dir,
            directory=args.directory,
            heartbeat_seconds=args.heartbeat_seconds,
            batch_size=args.batch_size,
            limitmb=args.limitmb,
            commit_seconds=args.commit_seconds,
            summary_terms=args.summary_terms,
            allowed_hosts=parse_allowed_hosts(args.allowed_hosts),
        )
        serving = server_config(args)
        RelevanceModel.from_topic(config.topic)  # the profile must have indexable terms
    except (ValueError, InvalidTopic) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        index = TopicIndex.open(
            config.index_dir,
            config.topic,
            limitmb=config.limitmb,
            limits=config.limits,
            recover=args.recover,
            commit_seconds=config.commit_seconds,
        )
    except (IndexBusy, IndexDamaged, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a full, read-only or unwritable disk under the index: one line, not a traceback
        print(f"error: cannot open the index at {config.index_dir}: {exc}", file=sys.stderr)
        return 1
    registration = None
    try:
        servicer = EngineServicer(index, config)
        register_collector(index_families(index, config.name))
        running = build_server(serving, lambda server: add_engine_servicer(server, servicer))
        if config.directory is not None:
            from oasis.engine.directory_client import DirectoryClient, Registration, owner_token

            owner = owner_token(config.index_dir)
            registration = Registration(
                DirectoryClient(config.directory, timeout=config.rpc_timeout_seconds, owner=owner),
                name=config.name,
                address=running.address,
                summary_fn=lambda: (index.generation, summary_to_proto(index.summary(config.summary_terms))),
                heartbeat_seconds=config.heartbeat_seconds,
            )
            registration.start()
        run_until_signal(running)
    finally:
        if registration is not None:
            registration.stop()
        index.close()
        logger.info("engine %s stopped", config.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
