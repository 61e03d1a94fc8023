"""The robot's request controller: restless-bandit scheduling of fetches (papers/004, Eqs. 9-11).

Pure domain code (no grpc). The public interface is :mod:`oasis.robot.scheduling.interface` (the
:class:`RequestController` protocol and the types it exchanges); :func:`make_controller` builds one.
"""

from oasis.robot.scheduling.config import SHIPPED, ControllerConfig
from oasis.robot.scheduling.controller import POLICIES, make_controller
from oasis.robot.scheduling.equations import q_update, reward, whittle_index
from oasis.robot.scheduling.frontier import Frontier
from oasis.robot.scheduling.interface import (
    DELETED,
    ERROR,
    FETCH_KINDS,
    MODIFIED,
    NEW,
    UNCHANGED,
    Discovered,
    FetchKind,
    FetchOutcome,
    RecrawlArm,
    RecrawlIndex,
    RequestController,
)
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.state import STATE_NAMES, DiscoveryContext, make_state_extractor

__all__ = [
    "DELETED",
    "ERROR",
    "FETCH_KINDS",
    "MODIFIED",
    "NEW",
    "POLICIES",
    "SHIPPED",
    "STATE_NAMES",
    "UNCHANGED",
    "ControllerConfig",
    "Discovered",
    "DiscoveryContext",
    "FetchKind",
    "FetchOutcome",
    "Frontier",
    "QTable",
    "RecrawlArm",
    "RecrawlIndex",
    "RequestController",
    "make_controller",
    "make_state_extractor",
    "q_update",
    "reward",
    "whittle_index",
]
