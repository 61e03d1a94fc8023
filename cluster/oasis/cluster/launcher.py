"""The local-cluster launcher: start each service as its own process on a free loopback port, wait until it
reports SERVING, record it in a state file, and stop everything cleanly.

The state file (``STATE_DIR/cluster.json``) is how the other commands (status, search, index, down, restart)
find a running cluster.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from oasis.cluster.config import ROBOT_PREFIX, ClusterConfig
from oasis.runtime.files import write_json_atomic
from oasis.runtime.service import open_channel
from oasis.runtime.spawn import SpawnError, log_tail, spawn_service

logger = logging.getLogger(__name__)

STATE_FILE = "cluster.json"
DEFAULT_STATE_DIR = Path(".oasis")


class LaunchError(RuntimeError):
    """A service did not come up (exited, or not SERVING within the time allowed)."""


class NoCluster(RuntimeError):
    """No cluster state file in the state directory: start one with `oasis up`."""


@dataclass
class ServiceRecord:
    name: str
    kind: str  # directory | broker | engine | robot | web
    address: str
    pid: int
    log: str
    argv: list[str]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1]) if ":" in self.address else 0


def health_status(address: str, timeout: float = 1.0, service: str = "") -> str:
    """``SERVING`` / ``NOT_SERVING`` / ``UNKNOWN`` from the standard health service, or ``UNREACHABLE``."""
    try:
        with open_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout
            )
    except grpc.RpcError:
        return "UNREACHABLE"
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - another user's process
        return True
    # a zombie child of ours still answers kill(0); reap it if it is ours
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done == 0


class Cluster:
    """Processes of one local cluster, described by a state directory."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir.resolve()
        self.services: list[ServiceRecord] = []
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    # ------------------------------------------------------------------ state file
    @property
    def state_path(self) -> Path:
        return self.state_dir / STATE_FILE

    def save(self) -> None:
        write_json_atomic(self.state_path, {"services": [asdict(s) for s in self.services]}, indent=2)

    @classmethod
    def load(cls, state_dir: Path) -> Cluster:
        cluster = cls(state_dir)
        try:
            data = json.loads(cluster.state_path.read_text())
        except FileNotFoundError as exc:
            raise NoCluster(f"no cluster in {cluster.state_dir}: start one with `oasis up`") from exc
        except (OSError, json.JSONDecodeError) as exc:
            raise NoCluster(f"unreadable cluster state {cluster.state_path}: {exc}") from exc
        cluster.services = [ServiceRecord(**s) for s in data.get("services", [])]
        return cluster

    def get(self, name: str) -> ServiceRecord:
        for s in self.services:
            if s.name == name:
                return s
        raise KeyError(f"no service named {name!r}; have {[s.name for s in self.services]}")

    def of_kind(self, kind: str) -> list[ServiceRecord]:
        return [s for s in self.services if s.kind == kind]

    # ------------------------------------------------------------------ processes
    def start(
        self,
        name: str,
        kind: str,
        argv: Sequence[str],
        *,
        port: int = 0,
        timeout: float = 30.0,
        grpc_health: bool = True,
    ) -> ServiceRecord:
        """Start ``python -m ...`` ``argv`` with ``--port``/``--address-file`` and wait until it serves."""
        log_path = self.state_dir / "logs" / f"{name}.log"
        full = [sys.executable, *argv]
        if grpc_health:
            full += ["--port", str(port)]
        try:
            service = spawn_service(
                full,
                self.state_dir / "run" / f"{name}.json",
                timeout=timeout,
                name=name,
                log=log_path,
                new_session=True,
            )
        except SpawnError as exc:
            raise LaunchError(str(exc)) from exc
        proc = service.process
        self._procs[name] = proc
        address = service.address
        if grpc_health:
            self._wait_serving(name, proc, address, log_path, timeout)
        extra = {k: v for k, v in service.info.items() if k not in {"address", "pid"}}
        record = ServiceRecord(name, kind, address, proc.pid, str(log_path), list(argv), extra)
        self.services = [s for s in self.services if s.name != name] + [record]
        self.save()
        logger.info("%s %s up on %s (pid %d)", kind, name, address, proc.pid)
        return record

    def _wait_serving(
        self, name: str, proc: subprocess.Popen[bytes], address: str, log: Path, timeout: float
    ) -> None:
        deadline = time.monotonic() + timeout
        status = "UNKNOWN"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise LaunchError(f"{name} exited with code {proc.returncode}; log tail:\n{log_tail(log)}")
            status = health_status(address, timeout=1.0)
            if status == "SERVING":
                return
            time.sleep(0.05)
        self._kill(proc)
        raise LaunchError(f"{name} on {address} not SERVING after {timeout:.0f}s (last: {status})")

    @staticmethod
    def _kill(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    def release(self) -> None:
        """Leave the started processes running on their own (``oasis up --detach``, ``oasis restart``): this
        object stops tracking them; ``oasis down`` finds them again through the state file."""
        for proc in self._procs.values():
            # Popen warns when an object for a still-running child is collected; these children are meant
            # to outlive us, and are stopped through their recorded pid.
            proc.returncode = proc.returncode if proc.returncode is not None else 0
        self._procs.clear()

    def restart(self, name: str, timeout: float = 30.0) -> ServiceRecord:
        """Start a (dead or alive) service again with its recorded command line and port."""
        record = self.get(name)
        if _alive(record.pid):
            self.stop_one(record)
        previous = self._procs.pop(name, None)
        if previous is not None:
            previous.poll()  # a child of ours that died (kill -9): reap it; its Popen is not left "running"
        grpc_health = record.kind not in ("web", "evaluator")
        return self.start(
            record.name, record.kind, record.argv, port=record.port, timeout=timeout, grpc_health=grpc_health
        )

    def stop_one(self, record: ServiceRecord, grace: float = 10.0) -> bool:
        """SIGTERM (drain), then SIGKILL after ``grace`` seconds. True if it had been running."""
        proc = self._procs.get(record.name)
        if not _alive(record.pid):
            return False
        try:
            os.kill(record.pid, signal.SIGTERM)
        except ProcessLookupError:
            return False
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if proc is not None:
                if proc.poll() is not None:
                    return True
            elif not _alive(record.pid):
                return True
            time.sleep(0.05)
        logger.warning("%s did not stop within %.0fs: killing", record.name, grace)
        with contextlib.suppress(ProcessLookupError):
            os.kill(record.pid, signal.SIGKILL)
        if proc is not None:
            proc.wait()
        return True

    def down(self, grace: float = 10.0) -> list[str]:
        """Stop every service, newest first (robots before engines before the directory)."""
        stopped = []
        for record in reversed(self.services):
            if self.stop_one(record, grace):
                stopped.append(record.name)
        self.state_path.unlink(missing_ok=True)
        return stopped


def bring_up(
    config: ClusterConfig,
    state_dir: Path,
    *,
    robots: bool = True,
    timeout: float = 60.0,
    log_level: str = "INFO",
) -> Cluster:
    """Start directory, engines, broker and (when the config has a web and ``robots``) the replayed web and
    one robot per topic. On any failure, everything started so far is stopped again."""
    cluster = Cluster(state_dir)
    if cluster.state_path.exists():
        try:
            existing = Cluster.load(state_dir)
        except NoCluster:
            existing = None
        if existing is not None and any(_alive(s.pid) for s in existing.services):
            raise LaunchError(f"a cluster is already running in {cluster.state_dir}: `oasis down` first")
    cluster.state_dir.mkdir(parents=True, exist_ok=True)
    lvl = ["--log-level", log_level]
    try:
        directory = cluster.start(
            "directory",
            "directory",
            ["-m", "oasis.directory", "--lease-seconds", str(config.lease_seconds), *lvl],
            timeout=timeout,
        )
        for topic in config.topics:
            cluster.start(
                topic.name,
                "engine",
                [
                    "-m", "oasis.engine",
                    "--name", topic.name,
                    "--topic", topic.name,
                    "--description", topic.description,
                    "--keywords", ",".join(topic.keywords),
                    "--index-dir", str(cluster.state_dir / "index" / topic.name),
                    "--directory", directory.address,
                    "--heartbeat-seconds", str(config.heartbeat_seconds),
                    *lvl,
                ],
                timeout=timeout,
            )  # fmt: skip
        cluster.start(
            "broker",
            "broker",
            [
                "-m", "oasis.broker",
                "--directory", directory.address,
                "--route-cache-seconds", str(config.route_cache_seconds),
                "--default-deadline-ms", str(config.default_deadline_ms),
                "--max-concurrent-queries", str(config.max_concurrent_queries),
                *lvl,
            ],
            timeout=timeout,
        )  # fmt: skip
        if robots and config.web_corpus:
            start_web_and_robots(cluster, config, timeout=timeout, log_level=log_level)
    except BaseException:
        cluster.down(grace=5.0)
        raise
    return cluster


def start_web_and_robots(cluster: Cluster, config: ClusterConfig, *, timeout: float, log_level: str) -> None:
    """The replayed web (``python -m oasis.web``) and one robot per topic engine, seeded from the web."""
    assert config.web_corpus is not None
    web_argv = ["-m", "oasis.web", "--corpus", config.web_corpus, "--log-level", log_level]
    web = cluster.start(
        "replayed-web",
        "web",
        web_argv + web_change_args(config),
        timeout=timeout,
        grpc_health=False,
    )
    seeds = [str(s) for s in web.extra.get("seeds", [])]
    if not seeds:
        raise LaunchError("the replayed web reported no seed URLs")
    hosts = web.extra.get("hosts", {})
    if isinstance(hosts, dict) and hosts and not web.address:
        first = str(next(iter(hosts.values())))
        web.address = first
        cluster.save()
    for engine in cluster.of_kind("engine"):
        argv = robot_argv(
            config,
            engine.name,
            engine.address,
            state_dir=cluster.state_dir / "robots" / engine.name,
            seeds=seeds,
            log_level=log_level,
        )
        cluster.start(f"{ROBOT_PREFIX}{engine.name}", "robot", argv, timeout=timeout)
    if web.extra.get("truth"):  # a living web: measure R, F, M per topic against its ground truth
        evaluator = [
            "-m", "oasis.cluster.evaluator",
            "--state-dir", str(cluster.state_dir),
            "--interval", str(config.web_changes.evaluate_seconds),
            "--min-relevance", str(config.robot.min_relevance),
            "--log-level", log_level,
        ]  # fmt: skip
        cluster.start("evaluator", "evaluator", evaluator, timeout=timeout, grpc_health=False)


def web_change_args(config: ClusterConfig) -> list[str]:
    """``python -m oasis.web`` flags of the living web (versions, ground truth, the change rates); none for
    a web without change rates."""
    w = config.web_changes
    if not w.living:
        return []
    return [
        "--living",
        "--modify-rate", str(w.modify_rate),
        "--delete-rate", str(w.delete_rate),
        "--create-rate", str(w.create_rate),
        "--change-seed", str(w.seed),
    ]  # fmt: skip


def robot_argv(
    config: ClusterConfig,
    topic: str,
    engine_address: str,
    *,
    state_dir: Path,
    seeds: Sequence[str],
    log_level: str,
) -> list[str]:
    """``python -m oasis.robot`` arguments of ``topic``'s robot (without --port / --address-file)."""
    rs = config.robot
    # the robot's learning files from the cluster TOML: --controller-config, --q-table, --initial-q-table
    learning = [
        arg
        for key, path in config.robot_files(topic).items()
        for arg in ("--" + key.replace("_", "-"), str(path))
    ]
    return [
        "-m", "oasis.robot",
        "--name", f"{ROBOT_PREFIX}{topic}",
        "--engine", engine_address,
        "--state-dir", str(state_dir),
        "--policy", rs.policy,
        "--min-delay", str(rs.min_delay),
        "--max-in-flight", str(rs.max_in_flight),
        "--max-pages", str(rs.max_pages),
        "--pages-per-second", str(rs.pages_per_second),
        "--recrawl", rs.recrawl,
        "--recrawl-period", str(rs.recrawl_period),
        "--min-relevance", str(rs.min_relevance),
        "--allow-private",
        "--autostart",
        "--log-level", log_level,
        *learning,
        "--seeds", *seeds,
    ]  # fmt: skip
