"""``python -m oasis.directory``: run the engine directory service."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc

from oasis.directory.metrics import registry_families
from oasis.directory.registry import Registry
from oasis.directory.servicer import DirectoryServicer
from oasis.runtime.metrics import register_collector
from oasis.runtime.service import (
    ServerConfig,
    add_advertise_argument,
    add_service_arguments,
    build_server,
    configure_logging,
    run_until_signal,
)
from oasis.v1 import directory_pb2, directory_pb2_grpc

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class DirectoryConfig:
    host: str = "127.0.0.1"
    port: int = 0
    address_file: Path | None = None
    lease_seconds: float = 5.0
    max_engines: int = 128

    def __post_init__(self) -> None:
        if not self.lease_seconds > 0:
            raise ValueError(f"lease_seconds must be > 0, got {self.lease_seconds}")
        if self.max_engines < 1:
            raise ValueError(f"max_engines must be >= 1, got {self.max_engines}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m oasis.directory", description="Oasis engine directory")
    p.add_argument("--host", default="127.0.0.1", help="address to bind")
    add_advertise_argument(p)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--address-file", type=Path, default=None)
    p.add_argument("--lease-seconds", type=float, default=5.0)
    p.add_argument("--max-engines", type=int, default=128, help="limit of live registered engines")
    p.add_argument("--log-level", default="INFO")
    add_service_arguments(p)
    return p.parse_args(argv)


def add_directory(server: grpc.Server, registry: Registry) -> list[str]:
    directory_pb2_grpc.add_DirectoryServicer_to_server(DirectoryServicer(registry), server)
    return [directory_pb2.DESCRIPTOR.services_by_name["Directory"].full_name]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.log_level, args.log_format, service="directory")
    config = DirectoryConfig(
        host=args.host,
        port=args.port,
        address_file=args.address_file,
        lease_seconds=args.lease_seconds,
        max_engines=args.max_engines,
    )
    registry = Registry(
        lease_seconds=config.lease_seconds, clock=time.monotonic, max_engines=config.max_engines
    )
    try:
        server_config = ServerConfig(
            host=config.host,
            port=config.port,
            address_file=config.address_file,
            advertise=args.advertise,
            metrics_port=args.metrics_port,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    register_collector(registry_families(registry))
    running = build_server(server_config, lambda server: add_directory(server, registry))
    run_until_signal(running)
    return 0


if __name__ == "__main__":
    sys.exit(main())
