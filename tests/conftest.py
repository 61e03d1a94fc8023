"""Fixtures shared by the robot tests and the gateway tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import gateway_testcluster
import pytest
from gateway_testcluster import GatewayCluster
from robot_testweb import LocalEngine


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[LocalEngine]:
    """A real topic engine (Whoosh index in ``tmp_path``) served in-process on loopback."""
    e = LocalEngine(tmp_path / "index")
    yield e
    e.close()


@pytest.fixture(scope="session")
def gateway_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayCluster]:
    """A local cluster started by `oasis up` (directory, two engines with real pages, broker, gateway)."""
    cluster = gateway_testcluster.start(tmp_path_factory.mktemp("gateway-cluster"))
    yield cluster
    gateway_testcluster.stop(cluster)
