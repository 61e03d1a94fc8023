"""The robot's request controller: restless-bandit scheduling of fetches (papers/004, Eqs. 9-11).

Pure domain code (no grpc). See :mod:`oasis.robot.scheduling.controller` for the public interface.
"""

from oasis.robot.scheduling.controller import (
    POLICIES,
    ControllerConfig,
    Discovered,
    FetchOutcome,
    RecrawlArm,
    RecrawlIndex,
    RequestController,
    make_controller,
)
from oasis.robot.scheduling.equations import q_update, reward, whittle_index
from oasis.robot.scheduling.frontier import Frontier
from oasis.robot.scheduling.qtable import QTable
from oasis.robot.scheduling.state import STATE_NAMES, DiscoveryContext, make_state_extractor

__all__ = [
    "POLICIES",
    "STATE_NAMES",
    "ControllerConfig",
    "Discovered",
    "DiscoveryContext",
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
