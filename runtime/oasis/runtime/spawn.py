"""Start a service process and wait for the address file it writes once it serves.

Every Oasis service (``python -m oasis.engine|directory|broker|robot|web``) takes ``--address-file FILE`` and
writes ``{"address", "pid", ...}`` there, atomically, once it is ready. :func:`spawn_service` is the one
place that starts such a process and waits for that file; the launcher, the benchmarks, the robot's
temporary engine and the tests all use it.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oasis.runtime.files import JSONFileError, read_json

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.05


class SpawnError(RuntimeError):
    """The service exited before writing its address file, or did not write it in time."""


def log_tail(path: Path | None, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file, or ``(no log)``."""
    if path is None:
        return "(no log)"
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class ServiceProcess:
    """A started service: its reported address, the whole address-file JSON, and the process."""

    name: str
    address: str
    process: subprocess.Popen[bytes]
    info: dict[str, Any] = field(default_factory=dict)
    log: Path | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self, grace: float = 10.0) -> int:
        """SIGTERM (the services drain on it), wait up to ``grace`` seconds, then SIGKILL; the exit code."""
        return stop_process(self.process, grace)


def stop_process(process: subprocess.Popen[Any], grace: float = 10.0) -> int:
    """SIGTERM ``process``, wait up to ``grace`` seconds, then SIGKILL it; its exit code."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            logger.warning("pid %d did not stop within %.1f s: killing", process.pid, grace)
            process.kill()
    return process.wait()


def _kill(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()


def spawn_service(
    argv: Sequence[str],
    address_file: Path,
    *,
    timeout: float = 30.0,
    name: str | None = None,
    log: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    new_session: bool = False,
) -> ServiceProcess:
    """Run ``argv + ["--address-file", address_file]`` and return once the address file is there.

    ``log``: stdout and stderr are appended to this file (otherwise inherited), and its tail is quoted in
    the error when the service exits early or is late. Raises :class:`SpawnError` (after killing and
    reaping the process) if it exits before writing the file or the file is not there within ``timeout``
    seconds. A stale address file is removed first.
    """
    label = name or Path(str(argv[2] if len(argv) > 2 and argv[1] == "-m" else argv[0])).name
    address_file.parent.mkdir(parents=True, exist_ok=True)
    address_file.unlink(missing_ok=True)
    full = [*argv, "--address-file", str(address_file)]
    out: Any = None
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        out = log.open("ab")
    try:
        process = subprocess.Popen(
            full,
            cwd=cwd,
            env=None if env is None else dict(env),
            stdout=out,
            stderr=subprocess.STDOUT if out is not None else None,
            stdin=subprocess.DEVNULL if new_session else None,
            start_new_session=new_session,
        )
    finally:
        if out is not None:
            out.close()
    info = _wait_for_address_file(label, process, address_file, log, timeout)
    return ServiceProcess(label, str(info.get("address", "")), process, info, log)


def _wait_for_address_file(
    name: str, process: subprocess.Popen[bytes], address_file: Path, log: Path | None, timeout: float
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        if address_file.exists():
            try:
                data = read_json(address_file, "address")
            except JSONFileError:
                data = None  # written atomically, so only a foreign writer could get here: retry
            if isinstance(data, dict):
                return data
        if process.poll() is not None:
            raise SpawnError(f"{name} exited with code {process.returncode}; log tail:\n{log_tail(log)}")
        if time.monotonic() >= deadline:
            _kill(process)
            raise SpawnError(
                f"{name} did not report its address within {timeout:.0f}s; log tail:\n{log_tail(log)}"
            )
        time.sleep(POLL_SECONDS)
