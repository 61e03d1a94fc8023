"""Keeps this engine registered with the directory: Register, then Heartbeat every lease/3 with the summary;
Register again when the directory forgets us (known=false) or was unreachable; Deregister on stop.

Every call carries the engine's owner token (:func:`owner_token`, kept in its index directory so that a
restarted engine is the same owner): the directory binds the name to it (issue 15, item 1)."""

from __future__ import annotations

import logging
import re
import secrets
import threading
from collections.abc import Callable
from pathlib import Path

from oasis.runtime.errors import ServiceError
from oasis.runtime.files import write_bytes_atomic
from oasis.runtime.rpc import GrpcClient
from oasis.v1 import common_pb2, directory_pb2, directory_pb2_grpc

logger = logging.getLogger(__name__)


OWNER_FILE = "oasis-engine.owner"


class DirectoryUnavailable(ServiceError):
    """The directory could not be reached or refused a call."""


_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,256}")  # what secrets.token_urlsafe writes


def owner_token(directory: Path) -> str:
    """This engine's owner token: read from ``directory/oasis-engine.owner``, created there on first use. A
    damaged file (not a token: bytes that are not one, a crash's zeros) is replaced by a new token, with a
    warning: the engine starts as a new owner of its name, which the directory grants once the old
    registration's lease has run out."""
    path = Path(directory) / OWNER_FILE
    try:
        token = path.read_bytes().strip().decode("ascii")
    except FileNotFoundError:
        token = ""
    except UnicodeDecodeError:
        token = "(not text)"
    if token and not _TOKEN.fullmatch(token):
        logger.warning("owner token file %s is damaged (%r...): writing a new token", path, token[:20])
        token = ""
    if not token:
        token = secrets.token_urlsafe(24)
        write_bytes_atomic(path, token.encode())
    return token


class DirectoryClient(GrpcClient):
    """Thin adapter over the Directory stub: always a timeout, grpc.RpcError -> DirectoryUnavailable (at the
    boundary of :class:`~oasis.runtime.rpc.GrpcClient`)."""

    kind = "directory"

    def __init__(self, address: str, *, timeout: float = 2.0, owner: str = "") -> None:
        super().__init__(address, timeout=timeout, error=DirectoryUnavailable)
        self._stub = directory_pb2_grpc.DirectoryStub(self._channel)
        self._owner = owner

    def register(self, name: str, address: str, summary: common_pb2.TopicSummary) -> float:
        info = directory_pb2.EngineInfo(name=name, address=address, summary=summary)
        request = directory_pb2.RegisterRequest(engine=info, owner=self._owner)
        reply = self._call("Register", self._stub.Register, request)
        return float(reply.lease_seconds)

    def heartbeat(self, name: str, summary: common_pb2.TopicSummary | None) -> tuple[bool, float]:
        request = directory_pb2.HeartbeatRequest(name=name, owner=self._owner)
        if summary is not None:
            request.summary.CopyFrom(summary)
        reply = self._call("Heartbeat", self._stub.Heartbeat, request)
        return bool(reply.known), float(reply.lease_seconds)

    def deregister(self, name: str) -> bool:
        request = directory_pb2.DeregisterRequest(name=name, owner=self._owner)
        return bool(self._call("Deregister", self._stub.Deregister, request).removed)


class Registration:
    """Daemon thread that keeps the lease alive. ``summary_fn`` returns (generation, summary); the summary
    is sent with a heartbeat only when its generation changed since the last one the directory got."""

    def __init__(
        self,
        client: DirectoryClient,
        *,
        name: str,
        address: str,
        summary_fn: Callable[[], tuple[int, common_pb2.TopicSummary]],
        heartbeat_seconds: float,
    ) -> None:
        if heartbeat_seconds <= 0:
            raise ValueError("heartbeat_seconds must be > 0")
        self._client = client
        self._name = name
        self._address = address
        self._summary_fn = summary_fn
        self._heartbeat = heartbeat_seconds
        self._interval = heartbeat_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"directory-{name}", daemon=True)
        self._registered = False
        self._sent_generation: int | None = None
        self.registrations = 0  # how many times Register succeeded (a directory restart adds one)
        self.heartbeats = 0

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._tick()
            except DirectoryUnavailable as exc:
                if exc.code == "ALREADY_EXISTS":
                    logger.warning("directory refused the registration: %s", exc)
                elif self._registered:
                    logger.warning("lost the directory: %s", exc)
                self._registered = False
            except Exception:
                logger.error("directory registration loop failed", exc_info=True)
                self._registered = False
            self._stop.wait(self._interval)

    def _tick(self) -> None:
        generation, summary = self._summary_fn()
        if not self._registered:
            lease = self._client.register(self._name, self._address, summary)
            self._registered = True
            self._sent_generation = generation
            self.registrations += 1
            self._interval = self._next_interval(lease)
            logger.info(
                "registered %s at %s with %s (lease %.1fs)",
                self._name,
                self._address,
                self._client.address,
                lease,
            )
            return
        changed = generation != self._sent_generation
        known, lease = self._client.heartbeat(self._name, summary if changed else None)
        self.heartbeats += 1
        if not known:
            logger.info(
                "directory does not know %s (restart or expired lease): registering again", self._name
            )
            self._registered = False
            self._tick()  # register again at once
            return
        if changed:
            self._sent_generation = generation
        self._interval = self._next_interval(lease)

    def _next_interval(self, lease: float) -> float:
        """Heartbeat every lease/3, never slower than the configured period."""
        return min(self._heartbeat, lease / 3.0) if lease > 0 else self._heartbeat

    @property
    def registered(self) -> bool:
        return self._registered

    def stop(self, *, deregister: bool = True) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        if deregister and self._registered:
            try:
                self._client.deregister(self._name)
            except DirectoryUnavailable as exc:
                logger.warning("could not deregister: %s", exc)
        self._registered = False
        self._client.close()
