"""The robot's engine adapter: the one engine client of :mod:`oasis.runtime.clients`, whose failures raise
the robot's :class:`~oasis.robot.engine_port.RobotEngineError`. It satisfies the crawler's ``EngineLike``
port: each ``index`` call streams one batch and returns once the engine has acknowledged all of it."""

from __future__ import annotations

from oasis.robot.engine_port import RobotEngineError
from oasis.runtime.clients import EngineClient


def connect_engine(address: str, *, timeout: float = 30.0) -> EngineClient:
    """An engine client for the robot: every call's deadline is ``timeout`` seconds."""
    return EngineClient(address, timeout=timeout, error=RobotEngineError)
