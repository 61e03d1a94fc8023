"""Service addresses: ``HOST:PORT`` split, joined and checked (standard library only, so command-line parsers
can use it without importing gRPC).

A port to bind may be 0 (ephemeral); a service to call needs a host and a port in [1, 65535]; an address
published to others may not be a wildcard.
"""

from __future__ import annotations

import argparse


def check_port(port: int) -> None:
    """A port to bind (0: ephemeral): ValueError outside [0, 65535] (``socket.bind`` would raise
    ``OverflowError``)."""
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be in [0, 65535], got {port}")


WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "[::]", "*", "0:0:0:0:0:0:0:0"})


def split_host_port(address: str) -> tuple[str, int | None]:
    """``HOST`` -> (HOST, None); ``HOST:PORT`` / ``[V6]:PORT`` -> (HOST, PORT); a bare IPv6 stays a host."""
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if address.count(":") == 1:
        host, _, port = address.partition(":")
        if not port.isdigit():
            raise ValueError(f"bad port in address {address!r}")
        return host, int(port)
    return address, None


def check_target(address: str) -> str:
    """``address`` if it names a service to call: ``HOST:PORT`` (``[V6]:PORT``) with a host and a port in
    [1, 65535]; else ValueError saying what is wrong. (gRPC takes ``127.0.0.1:99999`` for port 34463, 99999
    modulo 65536, and a bare host for port 443.)"""
    try:
        host, port = split_host_port(address.strip())
    except ValueError as exc:
        raise ValueError(f"{address!r} is not HOST:PORT: {exc}") from None
    if not host or port is None:
        raise ValueError(f"{address!r} is not HOST:PORT")
    if not 1 <= port <= 65535:
        raise ValueError(f"{address!r}: port must be in [1, 65535], got {port}")
    return address.strip()


def address_arg(value: str) -> str:
    """An argparse ``type`` for a flag naming a service to call (``--broker HOST:PORT``): a bad address is a
    usage error at once (``error: argument --broker: ...``), not a connection that fails or waits."""
    try:
        return check_target(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def join_host_port(host: str, port: int) -> str:
    """``HOST:PORT``, an IPv6 host in brackets (once)."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def check_advertised(host: str, advertise: str | None) -> None:
    """Refuse a configuration whose advertised address nobody else could reach (a clear error at start)."""
    if advertise is None:
        if host in WILDCARD_HOSTS:
            raise ValueError(
                f"--host {host or '(empty)'} binds every interface but is no address another host can "
                "reach: give the address to publish with --advertise HOST (e.g. this host's IP or DNS name)"
            )
        return
    advertised_host, port = split_host_port(advertise.strip())
    if advertised_host.strip("[]") in WILDCARD_HOSTS:
        raise ValueError(
            f"--advertise {advertise!r} is a wildcard, not a reachable address: "
            "give this host's IP or DNS name"
        )
    if port is not None and not 0 < port <= 65535:
        raise ValueError(f"--advertise {advertise!r}: port must be in [1, 65535]")
