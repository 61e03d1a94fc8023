"""``python -m oasis.gateway --broker HOST:PORT [--directory HOST:PORT] [--port N] [--address-file FILE]``:
serve the HTTP gateway (uvicorn) until SIGTERM.

Like every Oasis service it binds loopback on an ephemeral port by default and writes ``{"address", "pid"}``
to ``--address-file`` (atomically) once it accepts connections, which is how the launcher
(:func:`oasis.runtime.spawn.spawn_service`) finds it; the address is the HTTP base ``host:port``.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import uvicorn

from oasis.gateway.app import GatewayConfig, create_app
from oasis.runtime.addresses import address_arg, check_port
from oasis.runtime.clients import BrokerClient
from oasis.runtime.files import FileWriteError, write_json_atomic
from oasis.runtime.logs import add_log_arguments
from oasis.runtime.service import add_advertise_argument, advertised_address, configure_logging

logger = logging.getLogger("oasis.gateway")

# uvicorn's h11 parser refuses request heads above this with a bare "Invalid HTTP request"; at 256 KiB a
# 100 kB query string still reaches the app, which answers with a 400 that says what the limit is
MAX_REQUEST_HEAD_BYTES = 256 * 1024


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m oasis.gateway", description="Oasis HTTP gateway")
    p.add_argument("--broker", required=True, type=address_arg, help="HOST:PORT of the broker")
    p.add_argument(
        "--directory", default=None, type=address_arg, help="HOST:PORT of the directory (for /status)"
    )
    p.add_argument("--cluster-state", type=Path, default=None, help="the launcher's cluster.json (/status)")
    p.add_argument("--quality", type=Path, default=None, help="R/F/M series: JSON-lines file or folder")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--address-file", type=Path, default=None)
    p.add_argument("--page-size", type=int, default=10)
    p.add_argument("--deadline-ms", type=int, default=1000, help="the broker's whole-query deadline")
    p.add_argument("--title", default="Oasis")
    p.add_argument("--log-level", default="INFO")
    add_log_arguments(p)
    add_advertise_argument(p)
    return p


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0: ephemeral), bound before uvicorn starts so the real port is
    known and a taken port fails at once."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


class GatewayServer(uvicorn.Server):
    """uvicorn's server that writes the address file once it has started serving."""

    def __init__(self, config: uvicorn.Config, address: str, address_file: Path | None) -> None:
        super().__init__(config)
        self._address = address
        self._address_file = address_file
        self.failed: str | None = None  # why it stopped at start (its address file could not be written)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            logger.info("gateway serving on http://%s", self._address)
            if self._address_file is not None:
                # its Prometheus metrics are GET /metrics on the same HTTP address
                info = {"address": self._address, "pid": os.getpid(), "metrics": self._address}
                try:
                    write_json_atomic(self._address_file, info)
                except FileWriteError as exc:  # a full or read-only disk: stop, and say so in one line
                    self.failed = str(exc)
                    self.should_exit = True


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level, args.log_format, service="gateway")
    try:
        advertised_address(args.host, 0, args.advertise)  # never publish a wildcard: a clear error at start
        check_port(args.port)  # else socket.bind's OverflowError, a traceback
    except ValueError as exc:
        print(f"python -m oasis.gateway: {exc}", file=sys.stderr)
        return 2
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        print(f"python -m oasis.gateway: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    port = sock.getsockname()[1]
    address = advertised_address(args.host, port, args.advertise)
    try:
        config = GatewayConfig(
            page_size=args.page_size,
            deadline_ms=args.deadline_ms,
            title=args.title,
            directory=args.directory,
            cluster_state=args.cluster_state,
            quality=args.quality,
            self_address=address,
        )
    except ValueError as exc:
        print(f"python -m oasis.gateway: {exc}", file=sys.stderr)
        return 2
    broker = BrokerClient(args.broker)
    app = create_app(broker, config)
    server = GatewayServer(
        uvicorn.Config(
            app,
            http="h11",
            loop="asyncio",
            ws="none",
            lifespan="off",
            log_config=None,
            access_log=False,
            server_header=False,
            proxy_headers=False,
            h11_max_incomplete_event_size=MAX_REQUEST_HEAD_BYTES,
            timeout_graceful_shutdown=5,
        ),
        address,
        args.address_file,
    )
    try:
        server.run(sockets=[sock])
    finally:
        broker.close()
    if server.failed is not None:
        print(f"python -m oasis.gateway: {server.failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
