"""Cluster configuration: topics, timing and the default web, read from TOML (with a built-in default).

Robots' learning files (``controller_config``, ``initial_q_table``, ``initial_rates`` in ``[robot]`` or a
``[[topic]]``; ``q_table`` only in a ``[[topic]]``, one table per robot) are paths relative to the TOML file;
the launcher passes them as the robot's ``--controller-config``, ``--initial-q-table``, ``--initial-rates``
and ``--q-table`` flags.

Several hosts: ``[cluster]`` gives ``directory`` and ``broker`` (HOST:PORT, where every node finds them) and
each ``[[node]]`` a ``name``, an ``address`` (advertised; also bound unless ``bind`` is given, e.g.
``0.0.0.0`` in a container), its ``services`` (``directory``, ``broker``, ``gateway``, ``web``,
``engine:TOPIC``, ``robot:TOPIC``) and optional fixed ``ports`` by service (``{"engine:TOPIC" = 7410}``).
``oasis up --node NAME`` starts one node's services. Without ``[[node]]`` everything runs on this host.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from oasis.runtime.addresses import check_advertised, check_target, join_host_port, split_host_port

DEFAULT_CONFIG = "default_cluster.toml"
# service names the launcher uses itself; an engine (topic) may not take one
RESERVED_NAMES = frozenset({"directory", "broker", "replayed-web", "gateway"})
ROBOT_PREFIX = "robot-"
LEARNING_POLICY = "whittle"  # the robot policy that learns a Q-table
QUALITY_FILE = "quality.jsonl"  # the evaluator's R/F/M series in the state folder (oasis.cluster.quality)
ROBOT_FILES = ("controller_config", "q_table", "initial_q_table", "initial_rates")  # robot keys (paths)
NODE_SERVICES = ("directory", "broker", "gateway", "web")  # besides engine:TOPIC and robot:TOPIC
TOPIC_SERVICES = ("engine", "robot")


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
    last_modified: bool = True  # a first retrieval's Last-Modified teaches the change rates (robot flag)
    controller_config: Path | None = None  # every robot's request-controller parameters (JSON or TOML)
    initial_q_table: Path | None = None  # every robot's starting Q-table while it has none of its own
    progress_seconds: float = 10.0  # each robot logs a progress line this often (0: never)
    initial_rates: Path | None = None  # every robot's starting change-rate estimates while it has none

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_relevance <= 1.0:
            raise ConfigError("robot: min_relevance must be in [0, 1]")
        if self.progress_seconds < 0:
            raise ConfigError("robot: progress_seconds must be >= 0")
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


def parse_address(value: object, where: str) -> str:
    """A ``HOST:PORT`` another host can reach (never a wildcard), or :class:`ConfigError`."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be HOST:PORT (a string), got {value!r}")
    try:
        check_target(value)
        check_advertised("", value)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from exc
    return value


@dataclass(frozen=True, kw_only=True)
class NodeConfig:
    """One host of a multi-host cluster: what it runs and the address others reach it at."""

    name: str
    address: str  # advertised host (what the directory and the other nodes are told)
    bind: str  # where its services listen (default: address)
    services: tuple[str, ...]
    ports: dict[str, int] = field(default_factory=dict)  # service -> fixed port (0 / absent: ephemeral)

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(f"node name must be alphanumeric (with - or _), got {self.name!r}")
        try:
            check_advertised(self.bind, self.address)
        except ValueError as exc:
            raise ConfigError(f"node {self.name!r}: address {self.address!r}: {exc}") from exc
        if split_host_port(self.address)[1] is not None:
            raise ConfigError(f"node {self.name!r}: address is a host (no port), got {self.address!r}")
        if not self.services:
            raise ConfigError(f"node {self.name!r} runs no services")
        if len(set(self.services)) != len(self.services):
            raise ConfigError(f"node {self.name!r}: a service is listed twice: {list(self.services)}")
        for service in self.services:
            kind, _, topic = service.partition(":")
            if not (service in NODE_SERVICES or (kind in TOPIC_SERVICES and topic)):
                raise ConfigError(
                    f"node {self.name!r}: unknown service {service!r}; have "
                    f"{', '.join(NODE_SERVICES)}, engine:TOPIC, robot:TOPIC"
                )
        for service, port in self.ports.items():
            if service not in self.services:
                raise ConfigError(f"node {self.name!r}: a port for {service!r}, which it does not run")
            if not 0 <= port <= 65535:
                raise ConfigError(f"node {self.name!r}: port of {service!r} must be in [0, 65535]")

    def topics(self, kind: str) -> list[str]:
        """Topics of this node's ``kind`` services (``engine`` or ``robot``), in the listed order."""
        return [s.partition(":")[2] for s in self.services if s.partition(":")[0] == kind and ":" in s]


@dataclass(frozen=True, kw_only=True)
class ClusterConfig:
    topics: tuple[TopicConfig, ...]
    lease_seconds: float = 5.0
    heartbeat_seconds: float = 1.0
    route_cache_seconds: float = 2.0
    default_deadline_ms: int = 1000
    max_concurrent_queries: int = 64  # the broker refuses more with RESOURCE_EXHAUSTED
    web_corpus: str | None = None
    log_format: str = "text"  # every service's --log-format: text or json (JSON lines)
    robot: RobotSettings = field(default_factory=RobotSettings)
    # several hosts: where every node finds the directory and the broker, and what each node runs
    directory: str | None = None
    broker: str | None = None
    nodes: tuple[NodeConfig, ...] = ()
    gateway_port: int = 0  # [gateway] port: the HTTP gateway's port (0: ephemeral)
    web_changes: WebChanges = field(default_factory=WebChanges)

    def __post_init__(self) -> None:
        if not self.topics:
            raise ConfigError("at least one [[topic]] is required")
        if self.nodes:
            self._check_nodes()
        names = [t.name for t in self.topics]
        if len(set(names)) != len(names):
            raise ConfigError(f"topic names must be unique: {names}")
        if self.heartbeat_seconds <= 0 or self.lease_seconds <= self.heartbeat_seconds:
            raise ConfigError("need 0 < heartbeat_seconds < lease_seconds")
        if self.default_deadline_ms <= 0:
            raise ConfigError("default_deadline_ms must be positive")
        if self.max_concurrent_queries < 1:
            raise ConfigError("max_concurrent_queries must be >= 1")
        if self.log_format not in ("text", "json"):
            raise ConfigError(f"log_format must be text or json, got {self.log_format!r}")
        if not 0 <= self.gateway_port <= 65535:
            raise ConfigError(f"[gateway] port must be in [0, 65535], got {self.gateway_port}")
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

    def _check_nodes(self) -> None:
        if self.directory is None or self.broker is None:
            raise ConfigError("[[node]] needs [cluster] directory and broker (HOST:PORT each)")
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ConfigError(f"node names must be unique: {names}")
        topics = {t.name for t in self.topics}
        for service in ("directory", "broker"):
            holders = [n.name for n in self.nodes if service in n.services]
            if len(holders) != 1:
                raise ConfigError(f"exactly one [[node]] runs the {service}, got {holders or 'none'}")
        engines = [topic for n in self.nodes for topic in n.topics("engine")]
        for kind in TOPIC_SERVICES:
            for n in self.nodes:
                unknown = sorted(set(n.topics(kind)) - topics)
                if unknown:
                    raise ConfigError(f"node {n.name!r}: {kind} of unknown topic {unknown[0]!r}")
        for topic in sorted(topics):
            if engines.count(topic) != 1:
                raise ConfigError(
                    f"topic {topic!r} needs exactly one engine:{topic} on a node, got {engines.count(topic)}"
                )
        for n in self.nodes:
            for topic in n.topics("robot"):
                if self.engine_address(topic, n) is None:
                    raise ConfigError(
                        f"node {n.name!r}: robot:{topic} runs away from its engine; give the engine a fixed "
                        f'port (ports = {{"engine:{topic}" = PORT}} on its node) or run both on one node'
                    )
            if n.topics("robot") and "web" not in n.services:
                raise ConfigError(
                    f"node {n.name!r}: its robots crawl the replayed web, which serves on loopback: "
                    'add "web" to its services'
                )
            if "web" in n.services and self.web_corpus is None:
                raise ConfigError(f"node {n.name!r} runs the web but [web] has no corpus")

    def node(self, name: str) -> NodeConfig:
        for n in self.nodes:
            if n.name == name:
                return n
        have = ", ".join(n.name for n in self.nodes) or "none: this file describes no [[node]]"
        raise ConfigError(f"no [[node]] named {name!r} (have {have})")

    def engine_address(self, topic: str, origin: NodeConfig) -> str | None:
        """Where ``origin``'s robot of ``topic`` reaches the engine: "" when the engine runs on ``origin``
        (the launcher knows its address), HOST:PORT when it runs elsewhere on a fixed port, else None."""
        for n in self.nodes:
            if topic in n.topics("engine"):
                if n.name == origin.name:
                    return ""
                port = n.ports.get(f"engine:{topic}", 0)
                return join_host_port(n.address, port) if port else None
        return None

    def robot_files(self, topic: str) -> dict[str, Path]:
        """The learning files of ``topic``'s robot (key -> path): the topic's own, else ``[robot]``'s."""
        t = next((t for t in self.topics if t.name == topic), None)
        files: dict[str, Path] = {}
        for key in ROBOT_FILES:
            path = getattr(t, key, None) or getattr(self.robot, key, None)  # [robot] has no q_table
            if path is not None:
                files[key] = path
        return files


def _bool(table: dict[str, Any], key: str, where: str, default: bool) -> bool:
    """``table[key]`` as a TOML boolean (a string such as "false" is an error, not true)."""
    raw = table.get(key, default)
    if not isinstance(raw, bool):
        raise ConfigError(f"{where}: {key} must be true or false, got {raw!r}")
    return raw


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


# every key each table of a cluster TOML may hold: a misspelt one is an error, not a default silently kept
TABLE_KEYS: dict[str, frozenset[str]] = {
    "": frozenset({"cluster", "web", "robot", "gateway", "topic", "node"}),
    "[cluster]": frozenset(
        {
            "lease_seconds",
            "heartbeat_seconds",
            "route_cache_seconds",
            "default_deadline_ms",
            "max_concurrent_queries",
            "log_format",
            "directory",
            "broker",
        }
    ),
    "[web]": frozenset(
        {"corpus", "modify_rate", "delete_rate", "create_rate", "change_seed", "evaluate_seconds"}
    ),
    "[robot]": frozenset(
        {
            "policy",
            "min_delay",
            "max_in_flight",
            "max_pages",
            "pages_per_second",
            "recrawl",
            "recrawl_period",
            "min_relevance",
            "last_modified",
            "controller_config",
            "initial_q_table",
            "progress_seconds",
            "initial_rates",
        }
    ),
    "[gateway]": frozenset({"port"}),
    "[[topic]]": frozenset({"name", "description", "keywords", *ROBOT_FILES}),
    "[[node]]": frozenset({"name", "address", "bind", "services", "ports"}),
}


def _table(raw: object, where: str) -> dict[str, Any]:
    """``raw`` as the table ``where`` of a cluster TOML, every key a known one (else :class:`ConfigError`
    naming the key, with the nearest known key when one is close)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where or 'the configuration'} must be a table, got {raw!r}")
    known = TABLE_KEYS[where]
    for key in sorted(set(raw) - known):
        near = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f"; did you mean {near[0]!r}?" if near else f"; known: {', '.join(sorted(known))}"
        name = f" {raw['name']!r}" if where.startswith("[[") and "name" in raw else ""
        raise ConfigError(f"{where or 'top level'}{name}: unknown key {key!r}{hint}")
    return raw


def _topic(raw: object, base_dir: Path | None) -> TopicConfig:
    raw = _table(raw, "[[topic]]")
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


def _node(raw: object) -> NodeConfig:
    raw = _table(raw, "[[node]]")
    try:
        name, address = raw["name"], raw["address"]
    except KeyError as exc:
        raise ConfigError(f"[[node]] is missing {exc.args[0]!r}: {raw}") from exc
    services, ports = raw.get("services", []), raw.get("ports", {})
    if not isinstance(services, list) or not all(isinstance(s, str) for s in services):
        raise ConfigError(f"node {name!r}: services must be a list of strings, got {services!r}")
    if not isinstance(ports, dict) or not all(isinstance(p, int) for p in ports.values()):
        raise ConfigError(f"node {name!r}: ports must map services to integers, got {ports!r}")
    return NodeConfig(
        name=str(name),
        address=str(address),
        bind=str(raw.get("bind", address)),
        services=tuple(services),
        ports={str(k): int(v) for k, v in ports.items()},
    )


def parse_config(data: dict[str, Any], base_dir: Path | None = None) -> ClusterConfig:
    """The cluster config from parsed TOML; relative robot file paths are taken relative to ``base_dir``
    (the TOML file's folder; None: the current directory)."""
    _table(data, "")
    robot = data.get("robot", {})
    if isinstance(robot, dict) and "q_table" in robot:
        raise ConfigError("[robot]: q_table is per robot: set it in a [[topic]] (the robot of that topic)")
    cluster, web, robot, gateway = (
        _table(data.get(name, {}), f"[{name}]") for name in ("cluster", "web", "robot", "gateway")
    )
    for many in ("topic", "node"):
        if not isinstance(data.get(many, []), list):
            raise ConfigError(f"{many} must be [[{many}]] tables, got {data[many]!r}")
    try:
        return ClusterConfig(
            topics=tuple(_topic(t, base_dir) for t in data.get("topic", [])),
            lease_seconds=float(cluster.get("lease_seconds", 5.0)),
            heartbeat_seconds=float(cluster.get("heartbeat_seconds", 1.0)),
            route_cache_seconds=float(cluster.get("route_cache_seconds", 2.0)),
            default_deadline_ms=int(cluster.get("default_deadline_ms", 1000)),
            max_concurrent_queries=int(cluster.get("max_concurrent_queries", 64)),
            web_corpus=web.get("corpus"),
            log_format=str(cluster.get("log_format", "text")),
            directory=None
            if "directory" not in cluster
            else parse_address(cluster["directory"], "[cluster] directory"),
            broker=None if "broker" not in cluster else parse_address(cluster["broker"], "[cluster] broker"),
            nodes=tuple(_node(n) for n in data.get("node", [])),
            gateway_port=int(gateway.get("port", 0)),
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
                last_modified=_bool(robot, "last_modified", "[robot]", True),
                controller_config=_path(robot, "controller_config", "[robot]", base_dir),
                initial_q_table=_path(robot, "initial_q_table", "[robot]", base_dir),
                progress_seconds=float(robot.get("progress_seconds", 10.0)),
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
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"cannot read {path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                f"{exc.start}); a cluster TOML is UTF-8"
            ) from exc
        source = str(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    return parse_config(data, base_dir=None if path is None else path.resolve().parent)
