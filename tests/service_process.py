"""Helper for the tests that start a service as a subprocess (``python -m oasis.X --address-file FILE``)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def wait_for_address_file(
    proc: subprocess.Popen[Any], address_file: Path, *, seconds: float, exited: Callable[[], str], late: str
) -> dict[str, Any]:
    """The JSON the service writes to ``address_file`` once it serves. Fails the test with ``exited()`` if
    the process ends first, or with ``late`` if the file is not there within ``seconds``."""
    deadline = time.monotonic() + seconds
    while not address_file.exists():
        assert proc.poll() is None, exited()
        assert time.monotonic() < deadline, late
        time.sleep(0.05)
    info: dict[str, Any] = json.loads(address_file.read_text())
    return info
