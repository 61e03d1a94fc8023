"""Suspension of failing engines with capped exponential back-off (a circuit breaker).

After ``threshold`` consecutive failures an engine is suspended for
``min(cap, base * 2 ** (failures - threshold))`` seconds. When the suspension ends, the next query probes
it: a success resets the count, a failure suspends it again for twice as long (up to ``cap``).
The clock is injected.

Failures are counted per *instant*, not per call (issue 15, item 3): a failure of a call that started before
the engine's last counted failure overlapped that one (same outage, seen by several concurrent queries) and
does not count again. While an engine is suspended, the broker probes it in the background at most every
``probe_seconds`` (:meth:`Suspensions.probe_due`), so a recovered engine is back within about that long
instead of waiting out a back-off that grew while it was down.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

logger = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True, kw_only=True)
class BackoffPolicy:
    threshold: int = 2
    base_seconds: float = 1.0
    cap_seconds: float = 60.0
    probe_seconds: float = 0.5  # background probe period of a suspended engine

    def __post_init__(self) -> None:
        if self.threshold < 1:
            raise ValueError(f"threshold must be >= 1, got {self.threshold}")
        if not 0 < self.base_seconds <= self.cap_seconds:
            raise ValueError(
                f"need 0 < base_seconds <= cap_seconds, got {self.base_seconds}, {self.cap_seconds}"
            )
        if not self.probe_seconds > 0:
            raise ValueError(f"probe_seconds must be > 0, got {self.probe_seconds}")

    def suspension(self, failures: int) -> float:
        """Seconds of suspension after ``failures`` consecutive failures (0 below the threshold)."""
        if failures < self.threshold:
            return 0.0
        n = failures - self.threshold
        if n >= 64:  # 2**n would only be capped anyway
            return self.cap_seconds
        return min(self.cap_seconds, self.base_seconds * 2.0**n)


@dataclass(frozen=True)
class _State:
    failures: int = 0
    until: float = 0.0
    last_failure: float = -float("inf")  # when the last counted failure was recorded
    last_probe: float = -float("inf")


class Suspensions:
    """Per-engine consecutive failures and suspension deadlines. Thread-safe."""

    def __init__(self, policy: BackoffPolicy, clock: Clock) -> None:
        self._policy = policy
        self._clock = clock
        self._states: dict[str, _State] = {}
        self._lock = threading.Lock()

    def suspended_for(self, engine: str) -> float:
        """Seconds left in the engine's suspension (0 when it may be called)."""
        with self._lock:
            state = self._states.get(engine)
        return max(0.0, state.until - self._clock()) if state else 0.0

    def failures(self, engine: str) -> int:
        with self._lock:
            state = self._states.get(engine)
        return state.failures if state else 0

    def record_success(self, engine: str) -> None:
        with self._lock:
            previous = self._states.pop(engine, None)
        if previous is not None and previous.failures >= self._policy.threshold:
            logger.info("engine %s recovered after %d failures", engine, previous.failures)

    def probe_due(self, engine: str) -> bool:
        """True (once per ``probe_seconds``) when a suspended engine should be probed in the background."""
        now = self._clock()
        with self._lock:
            state = self._states.get(engine)
            if state is None or state.until <= now or now - state.last_probe < self._policy.probe_seconds:
                return False
            self._states[engine] = replace(state, last_probe=now)
            return True

    def record_failure(self, engine: str, started: float | None = None) -> float:
        """Count a failure of a call made at ``started``; return the suspension it starts (0 when below the
        threshold). A call that started before the last counted failure is part of it and not counted."""
        now = self._clock()
        with self._lock:
            previous = self._states.get(engine, _State())
            if started is not None and started < previous.last_failure:
                return max(0.0, previous.until - now)
            failures = previous.failures + 1
            seconds = self._policy.suspension(failures)
            self._states[engine] = replace(previous, failures=failures, until=now + seconds, last_failure=now)
        if seconds:
            logger.warning("engine %s suspended for %.1f s after %d failures", engine, seconds, failures)
        return seconds
