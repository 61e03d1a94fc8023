"""A cluster seen from any machine, without a local state file: the directory lists its engines.

``oasis status --directory HOST:PORT`` builds the same service table as for a local cluster from what the
directory knows (every registered engine, at its advertised address) plus the directory itself and,
when given, the broker.
"""

from __future__ import annotations

import logging
from pathlib import Path

from oasis.cluster.launcher import Cluster, ServiceRecord
from oasis.runtime.rpc import GrpcClient
from oasis.v1 import directory_pb2, directory_pb2_grpc

logger = logging.getLogger(__name__)


class DirectoryLister(GrpcClient):
    """The directory's ListEngines: (name, advertised address) of every engine with a live lease."""

    kind = "directory"

    def __init__(self, address: str, timeout: float = 2.0) -> None:
        super().__init__(address, timeout=timeout)
        self._stub = directory_pb2_grpc.DirectoryStub(self._channel)

    def engines(self) -> list[tuple[str, str]]:
        reply = self._call("ListEngines", self._stub.ListEngines, directory_pb2.ListEnginesRequest())
        return sorted((e.name, e.address) for e in reply.engines)


def remote_cluster(directory: str, broker: str | None = None) -> Cluster:
    """A :class:`Cluster` (not saved anywhere) of the directory, the broker if given, and every engine the
    directory lists. Raises :class:`~oasis.runtime.errors.ServiceError` when the directory does not answer."""
    lister = DirectoryLister(directory)
    try:
        engines = lister.engines()
    finally:
        lister.close()
    cluster = Cluster(Path("."))
    cluster.remote = {"directory": directory, **({"broker": broker} if broker else {})}
    cluster.services = [ServiceRecord("directory", "directory", directory, 0, "", [])]
    if broker:
        cluster.services.append(ServiceRecord("broker", "broker", broker, 0, "", []))
    cluster.services += [ServiceRecord(name, "engine", address, 0, "", []) for name, address in engines]
    return cluster
