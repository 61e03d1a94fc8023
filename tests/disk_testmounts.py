"""Real disks that refuse writes, for the tests of what the commands do then: a tmpfs mounted read-only, or
one so small it fills (``mount -t tmpfs``: needs root, as CI runs; the tests skip with the reason
otherwise)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def mount_skip_reason() -> str | None:
    """Why a tmpfs cannot be mounted here (None: it can, as far as can be told without mounting)."""
    if sys.platform != "linux":
        return "tmpfs mounts are Linux-only"
    if os.geteuid() != 0:
        return "needs root to mount a tmpfs (a read-only and a full disk); run the suite as root"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "needs mount(8) and umount(8)"
    return None


@contextlib.contextmanager
def tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A real tmpfs mounted at ``where`` with ``options`` (``ro``; ``size=16k``), unmounted after."""
    where.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "oasis-test", str(where)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)
