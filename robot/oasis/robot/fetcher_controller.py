"""The fetcher controller: how many requests to have in flight (papers/004, Figure 2).

papers/004 models it as a single-server queueing problem: the server is the response processor, the
customers are responses that fetchers put in the response queue; "the controller attempts to minimize both
the response processor's idle time and the response queue's size ... by deciding, on either a response
arrival or departure event, whether to service a new request. This decision is based on the number of
requests currently in service and the size of the response queue."

The paper leaves the policy open (it proposes average-reward RL as future work). We use the threshold
policy that the queueing model suggests, with rates measured online:

* the processor serves responses at rate ``mu`` (1 / mean service time per response);
* with ``n`` requests in service and mean fetch latency ``L``, responses arrive at ``lam = n / L``
  (Little's law), so ``n_star = ceil(mu * L)`` requests in flight make arrivals match service (rho = 1);
* the queue length ``q`` corrects it towards a small target ``q_star``: below target the processor is about
  to idle (start more requests), above it the processor is the bottleneck (start fewer);
* ``n_target(q) = clamp(n_star + q_star - q, n_min, n_max)``; on each arrival / departure event the robot
  starts ``max(0, n_target(q) - n)`` new requests (fewer if politeness leaves fewer hosts ready).

Pure: no clock, no threads; the crawler feeds it measured durations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


def ewma(previous: float | None, sample: float, beta: float) -> float:
    """Exponentially weighted moving average with weight ``beta`` on the new sample."""
    if not 0.0 < beta <= 1.0:
        raise ValueError(f"beta must be in (0, 1], got {beta}")
    return sample if previous is None else (1.0 - beta) * previous + beta * sample


def n_star(mu: float, latency: float) -> int:
    """Requests in flight so that the arrival rate n / L equals the service rate mu (Little's law,
    lam = n / L); papers/004's single-server formulation of the fetcher controller."""
    if mu < 0 or latency < 0:
        raise ValueError("mu and latency must be >= 0")
    product = mu * latency
    if not math.isfinite(product) or product > 1e9:
        return 10**9
    return max(1, math.ceil(product - 1e-9))


def n_target(n_balance: int, q: int, q_star: int, n_min: int, n_max: int) -> int:
    """Target number in service: the balance point corrected by the queue's distance from its target."""
    if n_min < 0 or n_max < n_min or q < 0 or q_star < 0:
        raise ValueError("need 0 <= n_min <= n_max, q >= 0, q_star >= 0")
    return min(n_max, max(n_min, n_balance + q_star - q))


@dataclass(frozen=True, kw_only=True)
class FetcherControllerConfig:
    max_in_flight: int = 8
    min_in_flight: int = 1
    target_queue: int = 2
    initial_in_flight: int = 2  # before any rate has been measured
    beta: float = 0.2  # EWMA weight of a new measurement

    def __post_init__(self) -> None:
        if self.min_in_flight < 1 or self.max_in_flight < self.min_in_flight:
            raise ValueError("need 1 <= min_in_flight <= max_in_flight")
        if not self.min_in_flight <= self.initial_in_flight <= self.max_in_flight:
            raise ValueError("initial_in_flight must lie in [min_in_flight, max_in_flight]")
        if self.target_queue < 0:
            raise ValueError("target_queue must be >= 0")
        if not 0.0 < self.beta <= 1.0:
            raise ValueError("beta must be in (0, 1]")


@dataclass
class FetcherController:
    config: FetcherControllerConfig = field(default_factory=FetcherControllerConfig)
    latency: float | None = None  # L: mean seconds from dispatch to the response's arrival in the queue
    service_time: float | None = None  # 1 / mu: mean processor seconds per response
    decisions: int = 0  # arrival / departure events at which a decision was taken
    started: int = 0  # requests the decisions allowed to start
    last_target: int = 0
    max_target: int = 0

    def observe_fetch(self, latency: float) -> None:
        if latency >= 0:
            self.latency = ewma(self.latency, latency, self.config.beta)

    def observe_service(self, seconds: float, count: int = 1) -> None:
        """The processor spent ``seconds`` on ``count`` responses."""
        if count > 0 and seconds >= 0:
            self.service_time = ewma(self.service_time, seconds / count, self.config.beta)

    @property
    def mu(self) -> float | None:
        if self.service_time is None:
            return None
        return math.inf if self.service_time <= 0 else 1.0 / self.service_time

    def target(self, queue_len: int) -> int:
        cfg = self.config
        mu = self.mu
        if mu is None or self.latency is None:
            balance = cfg.initial_in_flight
        elif math.isinf(mu):
            balance = cfg.max_in_flight
        else:
            balance = n_star(mu, self.latency)
        return n_target(balance, queue_len, cfg.target_queue, cfg.min_in_flight, cfg.max_in_flight)

    def decide(self, in_flight: int, queue_len: int) -> int:
        """On an arrival or departure event: how many new requests to start now."""
        target = self.target(queue_len)
        self.last_target = target
        self.max_target = max(self.max_target, target)
        self.decisions += 1
        start = max(0, target - in_flight)
        self.started += start
        return start

    def metrics(self) -> dict[str, float]:
        mu = self.mu
        return {
            "target_in_flight": float(self.last_target),
            "max_target_in_flight": float(self.max_target),
            "latency_s": float(self.latency or 0.0),
            "service_rate_per_s": float(mu) if mu is not None and not math.isinf(mu) else 0.0,
            "decisions": float(self.decisions),
            "started": float(self.started),
        }
