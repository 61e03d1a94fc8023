"""``python -m oasis.web --corpus SPEC|PATH [--address-file FILE]``: serve a replayed web until SIGTERM.

The address file gets ``{"address", "pid", "hosts": {corpus origin: served origin}, "seeds": [...],
"corpus", "pages"}`` (written atomically once every host is listening). With ``--living`` (or any change
rate) the pages change over time (:mod:`oasis.web.living`) and the file also holds ``"truth"`` (the ground
truth's HOST:PORT) and ``"token"`` (the evaluator's bearer token; robots are never given it).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from oasis.runtime.files import FileWriteError, write_json_atomic
from oasis.runtime.logs import add_log_arguments
from oasis.web.corpus import CorpusError, load_corpus
from oasis.web.living import ChangeRates, LivingWeb, TruthServer
from oasis.web.server import Behaviour, ReplayedWeb, RobotsPolicy

logger = logging.getLogger("oasis.web")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m oasis.web", description="Serve a replayed web on loopback"
    )
    parser.add_argument(
        "--corpus", required=True, help="synthetic:KEY=VALUE,..., debian:NAME, WARC/graph file or folder"
    )
    parser.add_argument("--base-url", default="http://docs.local/", help="base URL for a folder corpus")
    parser.add_argument("--address-file", type=Path, help="write the served addresses here (JSON)")
    parser.add_argument("--crawl-delay", type=float, default=None, help="Crawl-delay in every robots.txt")
    parser.add_argument("--disallow", action="append", default=[], help="a Disallow path for every host")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every response")
    parser.add_argument("--living", action="store_true", help="versions, validators, ground truth")
    parser.add_argument("--modify-rate", type=float, default=0.0, help="modifications per page per second")
    parser.add_argument("--delete-rate", type=float, default=0.0, help="deletions per page per second")
    parser.add_argument("--create-rate", type=float, default=0.0, help="creations per page per second")
    parser.add_argument("--change-seed", type=int, default=0, help="random seed of the change processes")
    parser.add_argument("--truth-port", type=int, default=0, help="port of the ground truth (0: any)")
    parser.add_argument("--log-level", default="INFO")
    add_log_arguments(parser)
    return parser


def write_address_file(path: Path, info: dict[str, object]) -> None:
    write_json_atomic(path, {**info, "pid": os.getpid()}, indent=1)


def main(argv: Sequence[str] | None = None) -> int:
    from oasis.runtime.service import configure_logging, stop_signal, wait_until_set

    args = build_parser().parse_args(argv)
    configure_logging(args.log_level, args.log_format, service="web")
    try:
        robots = RobotsPolicy(disallow=tuple(args.disallow), crawl_delay=args.crawl_delay)
        behaviour = Behaviour(latency=args.latency)
        corpus = load_corpus(args.corpus, base_url=args.base_url)
        rates = ChangeRates(modify=args.modify_rate, delete=args.delete_rate, create=args.create_rate)
    except (CorpusError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    done = stop_signal("stopping the replayed web")
    living = LivingWeb(corpus, rates, seed=args.change_seed) if args.living or rates.total > 0 else None
    with ReplayedWeb(corpus, robots=robots, behaviour=behaviour, living=living) as web:
        info = web.address_info()
        truth = None
        if living is not None:
            truth = TruthServer(
                living, served_url=web.url_for, corpus_url=web.corpus_url_for, port=args.truth_port
            ).start()
            info.update(truth=truth.address, token=truth.token, rates=asdict(rates))
            living.start()
        try:
            if args.address_file is not None:
                write_address_file(args.address_file, info)
            logger.info("serving %s: %s", corpus.name, json.dumps(info["hosts"]))
            wait_until_set(done)
        except FileWriteError as exc:  # a full or read-only disk: one line (the launcher shows it)
            print(f"error: {exc}", file=sys.stderr)
            return 1
        finally:
            if living is not None and truth is not None:
                living.stop()
                truth.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
