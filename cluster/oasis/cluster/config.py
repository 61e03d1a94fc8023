"""Cluster configuration: topics, timing and the default web, read from TOML (with a built-in default)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

DEFAULT_CONFIG = "default_cluster.toml"
# service names the launcher uses itself; an engine (topic) may not take one
RESERVED_NAMES = frozenset({"directory", "broker", "replayed-web"})
ROBOT_PREFIX = "robot-"


class ConfigError(ValueError):
    """The cluster configuration file is missing a field or has a bad value."""


@dataclass(frozen=True, kw_only=True)
class TopicConfig:
    name: str
    description: str
    keywords: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(f"topic name must be alphanumeric (with - or _), got {self.name!r}")
        if self.name in RESERVED_NAMES or self.name.startswith(ROBOT_PREFIX):
            raise ConfigError(f"topic name {self.name!r} is taken by a cluster service; choose another")
        if not self.keywords:
            raise ConfigError(f"topic {self.name!r} needs at least one keyword")


@dataclass(frozen=True, kw_only=True)
class RobotSettings:
    policy: str = "whittle"
    min_delay: float = 0.02
    max_in_flight: int = 4
    max_pages: int = 0
    min_relevance: float = 0.15  # pages below this r(i) are crawled through but not indexed

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_relevance <= 1.0:
            raise ConfigError("robot: min_relevance must be in [0, 1]")
        if self.min_delay < 0 or self.max_in_flight < 1 or self.max_pages < 0:
            raise ConfigError("robot: min_delay >= 0, max_in_flight >= 1, max_pages >= 0 required")


@dataclass(frozen=True, kw_only=True)
class ClusterConfig:
    topics: tuple[TopicConfig, ...]
    lease_seconds: float = 5.0
    heartbeat_seconds: float = 1.0
    route_cache_seconds: float = 2.0
    default_deadline_ms: int = 1000
    max_concurrent_queries: int = 64  # the broker refuses more with RESOURCE_EXHAUSTED
    web_corpus: str | None = None
    robot: RobotSettings = field(default_factory=RobotSettings)

    def __post_init__(self) -> None:
        if not self.topics:
            raise ConfigError("at least one [[topic]] is required")
        names = [t.name for t in self.topics]
        if len(set(names)) != len(names):
            raise ConfigError(f"topic names must be unique: {names}")
        if self.heartbeat_seconds <= 0 or self.lease_seconds <= self.heartbeat_seconds:
            raise ConfigError("need 0 < heartbeat_seconds < lease_seconds")
        if self.default_deadline_ms <= 0:
            raise ConfigError("default_deadline_ms must be positive")
        if self.max_concurrent_queries < 1:
            raise ConfigError("max_concurrent_queries must be >= 1")


def _topic(raw: dict[str, Any]) -> TopicConfig:
    try:
        return TopicConfig(
            name=str(raw["name"]),
            description=str(raw.get("description", "")),
            keywords=tuple(str(k) for k in raw["keywords"]),
        )
    except KeyError as exc:
        raise ConfigError(f"topic is missing {exc.args[0]!r}: {raw}") from exc


def parse_config(data: dict[str, Any]) -> ClusterConfig:
    cluster = data.get("cluster", {})
    web = data.get("web", {})
    robot = data.get("robot", {})
    try:
        return ClusterConfig(
            topics=tuple(_topic(t) for t in data.get("topic", [])),
            lease_seconds=float(cluster.get("lease_seconds", 5.0)),
            heartbeat_seconds=float(cluster.get("heartbeat_seconds", 1.0)),
            route_cache_seconds=float(cluster.get("route_cache_seconds", 2.0)),
            default_deadline_ms=int(cluster.get("default_deadline_ms", 1000)),
            max_concurrent_queries=int(cluster.get("max_concurrent_queries", 64)),
            web_corpus=web.get("corpus"),
            robot=RobotSettings(
                policy=str(robot.get("policy", "whittle")),
                min_delay=float(robot.get("min_delay", 0.02)),
                max_in_flight=int(robot.get("max_in_flight", 4)),
                max_pages=int(robot.get("max_pages", 0)),
                min_relevance=float(robot.get("min_relevance", 0.15)),
            ),
        )
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"bad value in cluster configuration: {exc}") from exc


def load_config(path: Path | None = None) -> ClusterConfig:
    """Read ``path``, or the built-in default when ``path`` is None."""
    if path is None:
        text = resources.files("oasis.cluster").joinpath(DEFAULT_CONFIG).read_text(encoding="utf-8")
        source = "built-in default"
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        source = str(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    return parse_config(data)
