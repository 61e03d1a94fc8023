"""``python -m oasis.broker``: run the query broker service."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence

import grpc

from oasis.broker.clients import EngineClientPool, GrpcDirectoryClient
from oasis.broker.merge import NORMALISATIONS
from oasis.broker.service import Broker, BrokerConfig
from oasis.broker.servicer import BrokerServicer
from oasis.runtime.addresses import address_arg
from oasis.runtime.service import (
    add_server_arguments,
    build_server,
    configure_logging,
    run_until_signal,
    server_config,
)
from oasis.v1 import broker_pb2, broker_pb2_grpc

logger = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m oasis.broker", description="Oasis query broker")
    p.add_argument("--directory", required=True, type=address_arg, help="HOST:PORT of the directory")
    p.add_argument("--route-cache-seconds", type=float, default=2.0)
    p.add_argument("--default-deadline-ms", type=int, default=1000)
    p.add_argument("--max-concurrent-queries", type=int, default=64)
    p.add_argument("--normalisation", choices=NORMALISATIONS, default=BrokerConfig.normalisation)
    add_server_arguments(p)
    return p.parse_args(argv)


def add_broker(server: grpc.Server, broker: Broker) -> list[str]:
    broker_pb2_grpc.add_BrokerServicer_to_server(BrokerServicer(broker), server)
    return [broker_pb2.DESCRIPTOR.services_by_name["Broker"].full_name]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.log_level, args.log_format, service="broker")
    config = BrokerConfig(
        route_cache_seconds=args.route_cache_seconds,
        default_deadline_ms=args.default_deadline_ms,
        max_concurrent_queries=args.max_concurrent_queries,
        normalisation=args.normalisation,
    )
    # enough server threads that the concurrency bound, not the thread pool, is what refuses excess load
    workers = config.max_concurrent_queries + 8
    try:
        serving = server_config(args, max_workers=workers)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    directory = GrpcDirectoryClient(args.directory)
    engines = EngineClientPool()
    broker = Broker(config, directory=directory, engines=engines, clock=time.monotonic)
    running = build_server(serving, lambda server: add_broker(server, broker))

    def close() -> None:
        directory.close()
        engines.close()

    run_until_signal(running, on_stop=close)
    return 0


if __name__ == "__main__":
    sys.exit(main())
