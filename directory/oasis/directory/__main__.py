"""``python -m oasis.directory``: run the engine directory service."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from oasis.directory.metrics import registry_families
from oasis.directory.registry import Registry
from oasis.directory.servicer import DirectoryServicer
from oasis.runtime.metrics import register_collector
from oasis.runtime.service import (
    add_server_arguments,
    build_server,
    configure_logging,
    run_until_signal,
    server_config,
)
from oasis.v1 import directory_pb2, directory_pb2_grpc

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class DirectoryConfig:
    lease_seconds: float = 5.0
    max_engines: int = 128

    def __post_init__(self) -> None:
        if not self.lease_seconds > 0:
            raise ValueError(f"lease_seconds must be > 0, got {self.lease_seconds}")
        if self.max_engines < 1:
            raise ValueError(f"max_engines must be >= 1, got {self.max_engines}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m oasis.directory", description="Oasis engine directory")
    p.add_argument("--lease-seconds", type=float, default=5.0)
    p.add_argument("--max-engines", type=int, default=128, help="limit of live registered engines")
    add_server_arguments(p)
    return p.parse_args(argv)


def add_directory(server: grpc.Server, registry: Registry) -> list[str]:
    directory_pb2_grpc.add_DirectoryServicer_to_server(DirectoryServicer(registry), server)
    return [directory_pb2.DESCRIPTOR.services_by_name["Directory"].full_name]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.log_level, args.log_format, service="directory")
    try:
        config = DirectoryConfig(lease_seconds=args.lease_seconds, max_engines=args.max_engines)
        serving = server_config(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    registry = Registry(
        lease_seconds=config.lease_seconds, clock=time.monotonic, max_engines=config.max_engines
    )
    register_collector(registry_families(registry))
    running = build_server(serving, lambda server: add_directory(server, registry))
    run_until_signal(running)
    return 0


if __name__ == "__main__":
    sys.exit(main())
