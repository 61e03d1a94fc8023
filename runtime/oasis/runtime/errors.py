"""The domain error of every call to an Oasis service (no grpc here, so ports can name it)."""

from __future__ import annotations


class ServiceError(RuntimeError):
    """A call to an Oasis service failed; ``code`` is the gRPC status code name (``UNAVAILABLE``,
    ``DEADLINE_EXCEEDED``, ...). Callers may subclass it for their ports (``RobotEngineError``,
    ``EngineCallError``, ``DirectoryUnavailable``); the gRPC boundary of :mod:`oasis.runtime.rpc` raises the
    subclass a client was built with."""

    def __init__(self, message: str, code: str = "UNKNOWN") -> None:
        super().__init__(message)
        self.code = code

    @property
    def reason(self) -> str:
        """The innermost service's own words, without the chain of addresses and codes before them (a broker
        passes an engine's refusal on as "broker ADDR Search: INVALID_ARGUMENT: the engines refused the
        query: engine ADDR Search: INVALID_ARGUMENT: WHY"): what a user is shown of a refused request."""
        return str(self).rsplit(f"{self.code}: ", 1)[-1]
