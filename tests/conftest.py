"""Fixtures shared by the robot tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from robot_testweb import LocalEngine


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[LocalEngine]:
    """A real topic engine (Whoosh index in ``tmp_path``) served in-process on loopback."""
    e = LocalEngine(tmp_path / "index")
    yield e
    e.close()
