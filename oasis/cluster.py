"""Local cluster launcher and its commands (up, down, status, search, index)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Filled in by issue 2."""
