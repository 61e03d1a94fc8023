"""Cluster configuration: topics, timing and the default web, read from TOML (with a built-in default).

Robots' learning files (``controller_config``, ``initial_q_table``, ``initial_rates`` in ``[robot]`` or a
``[[topic]]``; ``q_table`` only in a ``[[topic]]``, one table per robot) are paths relative to the TOML file;
the launcher passes them as the robot's ``--controller-config``, ``--initial-q-table``, ``--initial-rates``
and ``--q-table`` flags.
"""

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
LEARNING_POLICY = "whittle"  # the robot policy that learns a Q-table
ROBOT_FILES = ("controller_config", "q_table", "initial_q_table", "initial_rates")  # robot keys (paths)


class ConfigError(ValueError):
    """The cluster configuration file is missing a field or has a bad value."""


@dataclass(frozen=True, kw_only=True)
class TopicConfig:
    name: str
    description: str
    keywords: tuple[str, ...]
    # this topic's robot (override [robot]); q_table is the robot's own table, loaded and saved as it learns
    controller_config: Path | None = None
    q_table: Path | None = None
    initial_q_table: Path | None = None
    initial_rates: Path | None = None  # change-rate estimates to start from (e.g. a shipped rates.json)

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
    pages_per_second: float = 0.0  # each robot's page budget per second (0: none)
    recrawl: str = "none"  # "whittle": re-crawl retrieved pages (the robot maintains its topic, never stops)
    recrawl_period: float = 60.0  # seconds per scheduler period T of the re-crawl index
    min_relevance: float = 0.15  # pages below this r(i) are crawled through but not indexed
    controller_config: Path | None = None  # every robot's request-controller parameters (JSON or TOML)
    initial_q_table: Path | None = None  # every robot's starting Q-table while it has none of its own
    initial_rates: Path | None = None  # every robot's starting change-rate estimates while it has none

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_relevance <= 1.0:
            raise ConfigError("robot: min_relevance must be in [0, 1]")
        if self.min_delay < 0 or self.max_in_flight < 1 or self.max_pages < 0:
            raise ConfigError("robot: min_delay >= 0, max_in_flight >= 1, max_pages >= 0 required")
        if self.pages_per_second < 0 or self.recrawl_period <= 0:
            raise ConfigError("robot: pages_per_second >= 0 and recrawl_period > 0 required")
        if self.recrawl not in ("none", "whittle"):
            raise ConfigError(f"robot: recrawl must be 'none' or 'whittle', got {self.recrawl!r}")


@dataclass(frozen=True, kw_only=True)
class WebChanges:
    """The living web's Poisson change rates, per live page per second ([web] of the cluster TOML)."""

    modify_rate: float = 0.0
    delete_rate: float = 0.0
    create_rate: float = 0.0
    seed: int = 0
    evaluate_seconds: float = 2.0  # the live evaluator's period (R, F, M per topic)

    def __post_init__(self) -> None:
        for name in ("modify_rate", "delete_rate", "create_rate"):
            if getattr(self, name) < 0:
                raise ConfigError(f"web: {name} must be >= 0")
        if self.evaluate_seconds <= 0:
            raise ConfigError("web: evaluate_seconds must be > 0")

    @property
    def living(self) -> bool:
        """Any change rate set: the web lives (versions, ground truth) and the evaluator runs."""
        return self.modify_rate > 0 or self.delete_rate > 0 or self.create_rate > 0


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
    web_changes: WebChanges = field(default_factory=WebChanges)

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
        tables = [t.q_table for t in self.topics if t.q_table is not None]
        if len(set(tables)) != len(tables):
            raise ConfigError("each topic's robot needs its own q_table file")
        if self.robot.policy != LEARNING_POLICY:
            for t in self.topics:
                if t.q_table is not None or self.robot_files(t.name).get("initial_q_table") is not None:
                    raise ConfigError(
                        f"robot policy {self.robot.policy!r} learns no Q-table (topic {t.name!r}); "
                        f"q_table and initial_q_table need policy {LEARNING_POLICY!r}"
                    )

    def robot_files(self, topic: str) -> dict[str, Path]:
        """The learning files of ``topic``'s robot (key -> path): the topic's own, else ``[robot]``'s."""
        t = next((t for t in self.topics if t.name == topic), None)
        files: dict[str, Path] = {}
        for key in ROBOT_FILES:
            path = getattr(t, key, None) or getattr(self.robot, key, None)  # [robot] has no q_table
            if path is not None:
                files[key] = path
        return files


def _path(table: dict[str, Any], key: str, where: str, base_dir: Path | None) -> Path | None:
    """``table[key]`` as a path relative to ``base_dir`` (the TOML file's folder); None when absent.
    An input file (every key but q_table, which the robot creates) must exist."""
    raw = table.get(key)
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"{where}: {key} must be a file path (a string), got {raw!r}")
    path = Path(raw).expanduser()
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    if key != "q_table" and not path.is_file():
        raise ConfigError(f"{where}: {key} {path} does not exist")
    return path


def _topic(raw: dict[str, Any], base_dir: Path | None) -> TopicConfig:
    try:
        name = str(raw["name"])
        return TopicConfig(
            name=name,
            description=str(raw.get("description", "")),
            keywords=tuple(str(k) for k in raw["keywords"]),
            **{key: _path(raw, key, f"topic {name!r}", base_dir) for key in ROBOT_FILES},
        )
    except KeyError as exc:
        raise ConfigError(f"topic is missing {exc.args[0]!r}: {raw}") from exc


def parse_config(data: dict[str, Any], base_dir: Path | None = None) -> ClusterConfig:
    """The cluster config from parsed TOML; relative robot file paths are taken relative to ``base_dir``
    (the TOML file's folder; None: the current directory)."""
    cluster = data.get("cluster", {})
    web = data.get("web", {})
    robot = data.get("robot", {})
    if "q_table" in robot:
        raise ConfigError("[robot]: q_table is per robot: set it in a [[topic]] (the robot of that topic)")
    try:
        return ClusterConfig(
            topics=tuple(_topic(t, base_dir) for t in data.get("topic", [])),
            lease_seconds=float(cluster.get("lease_seconds", 5.0)),
            heartbeat_seconds=float(cluster.get("heartbeat_seconds", 1.0)),
            route_cache_seconds=float(cluster.get("route_cache_seconds", 2.0)),
            default_deadline_ms=int(cluster.get("default_deadline_ms", 1000)),
            max_concurrent_queries=int(cluster.get("max_concurrent_queries", 64)),
            web_corpus=web.get("corpus"),
            web_changes=WebChanges(
                modify_rate=float(web.get("modify_rate", 0.0)),
                delete_rate=float(web.get("delete_rate", 0.0)),
                create_rate=float(web.get("create_rate", 0.0)),
                seed=int(web.get("change_seed", 0)),
                evaluate_seconds=float(web.get("evaluate_seconds", 2.0)),
            ),
            robot=RobotSettings(
                policy=str(robot.get("policy", "whittle")),
                min_delay=float(robot.get("min_delay", 0.02)),
                max_in_flight=int(robot.get("max_in_flight", 4)),
                max_pages=int(robot.get("max_pages", 0)),
                pages_per_second=float(robot.get("pages_per_second", 0.0)),
                recrawl=str(robot.get("recrawl", "none")),
                recrawl_period=float(robot.get("recrawl_period", 60.0)),
                min_relevance=float(robot.get("min_relevance", 0.15)),
                controller_config=_path(robot, "controller_config", "[robot]", base_dir),
                initial_q_table=_path(robot, "initial_q_table", "[robot]", base_dir),
                initial_rates=_path(robot, "initial_rates", "[robot]", base_dir),
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
    return parse_config(data, base_dir=None if path is None else path.resolve().parent)
