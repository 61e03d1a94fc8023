"""The local-cluster launcher: start each service as its own process on a free loopback port, wait until it
reports SERVING, record it in a state file, and stop everything cleanly.

The state file (``STATE_DIR/cluster.json``) is how the other commands (status, search, index, down, restart)
find a running cluster. One cluster per state folder: ``oasis up`` holds an exclusive lock on
``STATE_DIR/lock`` while it starts services (and for as long as it runs in the foreground), and refuses a
folder whose services are still running. A recorded pid is signalled only while it is still the process
that was started (same start time, command line naming its address file in this folder), and when
``cluster.json`` is lost or truncated ``oasis down`` finds the services by their command lines in /proc.
On several hosts (``[[node]]`` in the cluster TOML) each host runs :func:`bring_up_node` with its own state
directory: the state file then holds that node's services and, under ``cluster``, where the node finds the
cluster's directory and broker.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from oasis.cluster.config import QUALITY_FILE, ROBOT_PREFIX, ClusterConfig, NodeConfig
from oasis.runtime.files import FileWriteError, FolderBusy, FolderLock, writable_folder, write_json_atomic
from oasis.runtime.rpc import health_status
from oasis.runtime.spawn import SpawnError, log_tail, spawn_service

logger = logging.getLogger(__name__)

STATE_FILE = "cluster.json"
LOCK_FILE = "lock"
# stop order when the state file is lost: robots first, the directory last (the order ``bring_up`` reverses)
_STOP_ORDER = ("robot", "web", "broker", "engine", "directory")
DEFAULT_STATE_DIR = Path(".oasis")


class LaunchError(RuntimeError):
    """A service did not come up (exited, or not SERVING within the time allowed)."""


class NoCluster(RuntimeError):
    """No cluster state file in the state directory: start one with `oasis up`."""


@dataclass
class ServiceRecord:
    name: str
    kind: str  # directory | broker | engine | robot | web | gateway
    address: str
    pid: int
    log: str
    argv: list[str]
    extra: dict[str, Any] = field(default_factory=dict)
    started: int = 0  # the process's start time (clock ticks after boot, /proc/PID/stat); 0: unknown

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1]) if ":" in self.address else 0


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
        return not _zombie(pid)  # not ours (`oasis up --detach`): dead once exited, reaped or not
    return done == 0


def _zombie(pid: int) -> bool:
    """True when ``pid`` has exited and waits for its parent (or init) to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].startswith("Z")


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot, field 22 of /proc/PID/stat); None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return int(fields[19])


def _cmdline(pid: int) -> list[str]:
    """The command line of ``pid`` from /proc ([] if it is gone or unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0")[:-1]]


def processes_of(state_dir: Path) -> list[int]:
    """Pids of the live service processes this launcher started for ``state_dir``, found in /proc by their
    command line (``--address-file STATE_DIR/run/NAME.json``): works without ``cluster.json``."""
    run = str(Path(state_dir).resolve() / "run") + os.sep
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        argv = _cmdline(int(entry.name))
        value = _address_file_arg(argv)
        if value is not None and value.startswith(run) and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _address_file_arg(argv: Sequence[str]) -> str | None:
    for flag, value in itertools.pairwise(argv):
        if flag == "--address-file":
            return value
    return None


class StateDirLock:
    """An exclusive ``flock`` on ``STATE_DIR/lock`` (released when the holder exits, even by kill -9)."""

    def __init__(self, state_dir: Path) -> None:
        try:  # a read-only, full or unwritable state folder is one clear line, before any service starts
            writable_folder(state_dir)
        except FileWriteError as exc:
            raise LaunchError(f"the state folder cannot be used: {exc.strerror or exc}") from None
        self.path = state_dir / LOCK_FILE
        try:
            self._lock = FolderLock(self.path)
        except FolderBusy as exc:
            raise LaunchError(
                f"a cluster is already starting or running in {state_dir} (`oasis up` pid {exc.holder} holds "
                f"{self.path}): one cluster per state folder; `oasis down --state-dir {state_dir}` first"
            ) from None
        except OSError as exc:
            raise LaunchError(f"cannot lock {self.path}: {exc.strerror or exc}") from None

    def release(self) -> None:
        self._lock.release()


class Cluster:
    """Processes of one local cluster, described by a state directory."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir.resolve()
        self.services: list[ServiceRecord] = []
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self.lock: StateDirLock | None = None  # held by `oasis up` while it starts (and runs) the cluster
        self.remote: dict[str, str] = {}  # a node of a multi-host cluster: node, directory, broker
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ state file
    @property
    def state_path(self) -> Path:
        return self.state_dir / STATE_FILE

    def save(self) -> None:
        data: dict[str, Any] = {"services": [asdict(s) for s in self.services]}
        if self.remote:
            data["cluster"] = self.remote
        write_json_atomic(self.state_path, data, indent=2)

    @classmethod
    def load(cls, state_dir: Path) -> Cluster:
        cluster = cls(state_dir)
        try:
            data = json.loads(cluster.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise NoCluster(f"no cluster in {cluster.state_dir}: start one with `oasis up`") from exc
        except (OSError, ValueError) as exc:  # not JSON, or bytes that are not UTF-8 (a damaged disk)
            raise NoCluster(f"unreadable cluster state {cluster.state_path}: {exc}") from exc
        try:
            cluster.services = [ServiceRecord(**s) for s in data.get("services", [])]
            cluster.remote = {str(k): str(v) for k, v in data.get("cluster", {}).items()}
        except (TypeError, AttributeError) as exc:
            raise NoCluster(f"unreadable cluster state {cluster.state_path}: {exc}") from exc
        return cluster

    @classmethod
    def recover(cls, state_dir: Path) -> Cluster:
        """The cluster as far as it can be found without ``cluster.json``: every live process whose command
        line names an address file of this state folder (name from the file, address from its contents
        when readable), in stop order. Empty when nothing of this folder runs."""
        cluster = cls(state_dir)
        records = []
        for pid in processes_of(cluster.state_dir):
            argv = _cmdline(pid)
            run_file = Path(_address_file_arg(argv) or "")
            kind = next((a.split(".")[-1] for a in argv if a.startswith("oasis.")), "unknown")
            address = ""
            with contextlib.suppress(OSError, ValueError, AttributeError):
                info = json.loads(run_file.read_text())
                address = str(info.get("address", "")) if int(info.get("pid", -1)) == pid else ""
            started = start_time(pid) or 0
            records.append(ServiceRecord(run_file.stem, kind, address, pid, "", argv[1:], {}, started))
        order = {k: i for i, k in enumerate(_STOP_ORDER)}
        # down() stops in reverse record order
        cluster.services = sorted(records, key=lambda r: order.get(r.kind, -1), reverse=True)
        return cluster

    def owns(self, record: ServiceRecord) -> bool:
        """Is ``record.pid`` still the process this launcher started (alive, same start time when known,
        command line naming ``run/NAME.json`` of this state folder)? A recycled pid is never ours."""
        if record.pid <= 0 or not _alive(record.pid):
            return False
        if record.started and start_time(record.pid) != record.started:
            return False
        expected = str(self.state_dir / "run" / f"{record.name}.json")
        return _address_file_arg(_cmdline(record.pid)) == expected

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
        if grpc_health or kind == "gateway":
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
        record = ServiceRecord(
            name, kind, address, proc.pid, str(log_path), list(argv), extra, start_time(proc.pid) or 0
        )
        with self._lock:  # services start in parallel threads (bring_up)
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
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def restart(self, name: str, timeout: float = 30.0) -> ServiceRecord:
        """Start a (dead or alive) service again with its recorded command line and port."""
        record = self.get(name)
        if self.owns(record):
            self.stop_one(record)
        previous = self._procs.pop(name, None)
        if previous is not None and previous.poll() is None:
            # a child of ours killed a moment ago (kill -9) whose death is not visible yet, or one no longer
            # recognisable as the service (e.g. a zombie has no command line): it is still our child, so its
            # pid cannot have been reused; end it and reap it (its Popen is never left "running")
            with contextlib.suppress(ProcessLookupError):
                previous.kill()
            previous.wait(timeout=10)
        grpc_health = record.kind not in ("web", "gateway", "evaluator")
        return self.start(
            record.name, record.kind, record.argv, port=record.port, timeout=timeout, grpc_health=grpc_health
        )

    def stop_one(self, record: ServiceRecord, grace: float = 10.0) -> bool:
        """SIGTERM (drain), then SIGKILL after ``grace`` seconds. True if it had been running."""
        return bool(self.stop_many([record], grace))

    def stop_many(self, records: Sequence[ServiceRecord], grace: float = 10.0) -> list[str]:
        """SIGTERM every one of ``records`` that is still the process that was started (each drains in
        parallel), wait for them, SIGKILL those still alive after ``grace`` seconds; the names of those that
        had been running."""
        waiting: dict[str, ServiceRecord] = {}
        for record in records:
            if not self.owns(record):
                if _alive(record.pid):
                    logger.warning(
                        "pid %d is no longer %s (another process has it): not signalled",
                        record.pid,
                        record.name,
                    )
                continue
            try:
                os.kill(record.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            waiting[record.name] = record
        stopped = list(waiting)
        deadline = time.monotonic() + grace
        while waiting and time.monotonic() < deadline:
            for name, record in list(waiting.items()):
                proc = self._procs.get(name)
                if (proc.poll() is not None) if proc is not None else not _alive(record.pid):
                    del waiting[name]
            if waiting:
                time.sleep(0.02)
        for name, record in waiting.items():
            logger.warning("%s did not stop within %.0fs: killing", name, grace)
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGKILL)
            proc = self._procs.get(name)
            if proc is not None:
                proc.wait()
        return stopped

    def down(self, grace: float = 10.0) -> list[str]:
        """Stop every service in three waves, each in parallel: robots (they flush their last batch to the
        engines), then everything but the directory, then the directory (engines deregister from it); then
        any other process still running for this state folder (one the state file no longer lists)."""
        stopped = []
        for records in (self.services, Cluster.recover(self.state_dir).services):
            newest_first = list(reversed(records))
            waves = [
                [r for r in newest_first if r.kind == "robot"],
                [r for r in newest_first if r.kind not in ("robot", "directory")],
                [r for r in newest_first if r.kind == "directory"],
            ]
            for wave in waves:
                stopped += self.stop_many(wave, grace)
        self.state_path.unlink(missing_ok=True)
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        return stopped


def bring_up(
    config: ClusterConfig,
    state_dir: Path,
    *,
    robots: bool = True,
    timeout: float = 60.0,
    log_level: str = "INFO",
) -> Cluster:
    """Start directory, engines, broker, the HTTP gateway and (when the config has a web and ``robots``) the
    replayed web and one robot per topic. On any failure, everything started so far is stopped again."""
    if config.nodes:
        raise LaunchError(
            "this cluster file describes [[node]]s: start each with `oasis up --config FILE --node NAME` "
            f"({', '.join(n.name for n in config.nodes)})"
        )
    cluster = _new_cluster(state_dir)
    lvl = ["--log-level", log_level, "--log-format", config.log_format]
    try:
        directory = cluster.start("directory", "directory", directory_argv(config, lvl), timeout=timeout)
        wave: list[Callable[[], object]] = []
        for topic in config.topics:
            argv = engine_argv(config, topic.name, cluster.state_dir, directory.address, lvl)
            wave.append(functools.partial(cluster.start, topic.name, "engine", argv, timeout=timeout))
        argv = broker_argv(config, directory.address, lvl)
        wave.append(functools.partial(cluster.start, "broker", "broker", argv, timeout=timeout))
        with_web = robots and config.web_corpus is not None
        if with_web:
            wave.append(functools.partial(start_web, cluster, config, timeout=timeout, log_level=log_level))
        in_parallel(wave)  # engines, broker and the web start together (they need only the directory)
        wave = [
            functools.partial(
                cluster.start,
                "gateway",
                "gateway",
                gateway_argv(cluster.get("broker").address, directory.address, cluster.state_dir, lvl),
                port=config.gateway_port,
                timeout=timeout,
                grpc_health=False,  # HTTP: it serves once it has written its address file
            )
        ]
        if with_web:
            robots_up = functools.partial(start_robots, cluster, config, timeout=timeout, log_level=log_level)
            wave.append(robots_up)
        in_parallel(wave)  # the gateway (needs the broker) and the robots (need the engines and the web)
        planned = ["directory", *(t.name for t in config.topics), "broker", "replayed-web", "gateway"]
        planned += [f"{ROBOT_PREFIX}{t.name}" for t in config.topics]
        cluster.services.sort(key=lambda r: planned.index(r.name) if r.name in planned else len(planned))
        cluster.save()  # (a disk that fills now stops the cluster too: no services without their record)
    except BaseException:
        cluster.down(grace=5.0)
        raise
    return cluster


def in_parallel(calls: Sequence[Callable[[], object]]) -> None:
    """Run ``calls`` in threads, wait for all of them, then raise the first failure (if any)."""
    if not calls:
        return
    with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="launch") as pool:
        futures = [pool.submit(call) for call in calls]
    for future in futures:
        future.result()


def _new_cluster(state_dir: Path) -> Cluster:
    cluster = Cluster(state_dir)
    lock = StateDirLock(cluster.state_dir)  # one `oasis up` at a time per folder
    running = processes_of(cluster.state_dir)
    if running:
        lock.release()
        raise LaunchError(
            f"a cluster is already running in {cluster.state_dir} (pids {', '.join(map(str, running))}): "
            f"`oasis down --state-dir {cluster.state_dir}` first"
        )
    cluster.lock = lock
    if cluster.state_path.exists():
        try:
            Cluster.load(cluster.state_dir)
        except NoCluster as exc:  # nothing of it runs: keep the unreadable file aside, never just delete it
            aside = cluster.state_path.with_name(f"{STATE_FILE}.unreadable")
            logger.warning("%s; kept as %s", exc, aside)
            os.replace(cluster.state_path, aside)
    cluster.state_dir.mkdir(parents=True, exist_ok=True)
    return cluster


def directory_argv(config: ClusterConfig, extra: Sequence[str] = ()) -> list[str]:
    """``python -m oasis.directory`` arguments (without --port / --address-file)."""
    return ["-m", "oasis.directory", "--lease-seconds", str(config.lease_seconds), *extra]


def engine_argv(
    config: ClusterConfig, topic: str, state_dir: Path, directory: str, extra: Sequence[str] = ()
) -> list[str]:
    """``python -m oasis.engine`` arguments of ``topic``'s engine, its index under ``state_dir``."""
    t = next(t for t in config.topics if t.name == topic)
    return [
        "-m", "oasis.engine",
        "--name", t.name,
        "--topic", t.name,
        "--description", t.description,
        "--keywords", ",".join(t.keywords),
        "--index-dir", str(state_dir / "index" / t.name),
        "--directory", directory,
        "--heartbeat-seconds", str(config.heartbeat_seconds),
        *extra,
    ]  # fmt: skip


def broker_argv(config: ClusterConfig, directory: str, extra: Sequence[str] = ()) -> list[str]:
    """``python -m oasis.broker`` arguments (without --port / --address-file)."""
    return [
        "-m", "oasis.broker",
        "--directory", directory,
        "--route-cache-seconds", str(config.route_cache_seconds),
        "--default-deadline-ms", str(config.default_deadline_ms),
        "--max-concurrent-queries", str(config.max_concurrent_queries),
        *extra,
    ]  # fmt: skip


def gateway_argv(broker: str, directory: str, state_dir: Path, extra: Sequence[str] = ()) -> list[str]:
    """``python -m oasis.gateway`` arguments (without --port / --address-file): the HTTP front door, which
    reads the cluster state and the live quality series under ``state_dir``."""
    return [
        "-m", "oasis.gateway",
        "--broker", broker,
        "--directory", directory,
        "--cluster-state", str(state_dir / STATE_FILE),
        "--quality", str(state_dir / QUALITY_FILE),
        *extra,
    ]  # fmt: skip


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def node_command(config: Path | str, node: str, state_dir: Path | str) -> list[str]:
    """The command that starts one node of a multi-host cluster: what deploy/Dockerfile's ENTRYPOINT + CMD
    run in a container, and tests/test_multihost_netns.py in each network namespace."""
    return ["oasis", "up", "--config", str(config), "--state-dir", str(state_dir), "--node", node]


def bring_up_node(
    config: ClusterConfig,
    node_name: str,
    state_dir: Path,
    *,
    robots: bool = True,
    timeout: float = 60.0,
    log_level: str = "INFO",
) -> Cluster:
    """Start the services of one ``[[node]]`` of a multi-host cluster, each bound to the node's ``bind``
    address and advertising its ``address``; engines register with ``[cluster] directory``. The directory
    and the broker listen on the ports of ``[cluster] directory`` / ``broker``, other services on the
    node's ``ports`` or ephemeral ones. On any failure, everything started so far is stopped again."""
    node: NodeConfig = config.node(node_name)
    assert config.directory is not None and config.broker is not None  # checked with the nodes
    cluster = _new_cluster(state_dir)
    cluster.remote = {"node": node.name, "directory": config.directory, "broker": config.broker}
    lvl = ["--log-level", log_level, "--log-format", config.log_format]
    addr = ["--host", node.bind, "--advertise", node.address]
    try:
        if "directory" in node.services:
            argv = directory_argv(config, ["--host", node.bind, "--advertise", config.directory, *lvl])
            cluster.start("directory", "directory", argv, port=_port(config.directory), timeout=timeout)
        for topic in node.topics("engine"):
            argv = engine_argv(config, topic, cluster.state_dir, config.directory, [*addr, *lvl])
            port = node.ports.get(f"engine:{topic}", 0)
            cluster.start(topic, "engine", argv, port=port, timeout=timeout)
        if "broker" in node.services:
            argv = broker_argv(
                config, config.directory, ["--host", node.bind, "--advertise", config.broker, *lvl]
            )
            cluster.start("broker", "broker", argv, port=_port(config.broker), timeout=timeout)
        if robots and node.topics("robot"):
            seeds = start_web(cluster, config, timeout=timeout, log_level=log_level)
            for topic in node.topics("robot"):
                engine = config.engine_address(topic, node) or cluster.get(topic).address
                argv = robot_argv(
                    config,
                    topic,
                    engine,
                    state_dir=cluster.state_dir / "robots" / topic,
                    seeds=seeds,
                    log_level=log_level,
                    extra=addr,
                )
                port = node.ports.get(f"robot:{topic}", 0)
                cluster.start(f"{ROBOT_PREFIX}{topic}", "robot", argv, port=port, timeout=timeout)
        elif "web" in node.services:
            start_web(cluster, config, timeout=timeout, log_level=log_level)
        if "gateway" in node.services:
            port = node.ports.get("gateway", 0)
            argv = gateway_argv(config.broker, config.directory, cluster.state_dir, [*addr, *lvl])
            cluster.start("gateway", "gateway", argv, port=port, timeout=timeout, grpc_health=False)
    except BaseException:
        cluster.down(grace=5.0)
        raise
    return cluster


def start_web(cluster: Cluster, config: ClusterConfig, *, timeout: float, log_level: str) -> list[str]:
    """The replayed web (``python -m oasis.web``, on loopback); its seed URLs."""
    assert config.web_corpus is not None
    web_argv = ["-m", "oasis.web", "--corpus", config.web_corpus, "--log-level", log_level]
    web = cluster.start(
        "replayed-web",
        "web",
        [*web_argv, "--log-format", config.log_format, *web_change_args(config)],
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
        with cluster._lock:
            cluster.save()
    return seeds


def start_robots(cluster: Cluster, config: ClusterConfig, *, timeout: float, log_level: str) -> None:
    """One robot per topic engine, seeded from the replayed web (already started), started in parallel."""
    web = cluster.get("replayed-web")
    seeds = [str(s) for s in web.extra.get("seeds", [])]
    if not seeds:
        raise LaunchError("the replayed web reported no seed URLs")
    calls: list[Callable[[], object]] = []
    for engine in cluster.of_kind("engine"):
        argv = robot_argv(
            config,
            engine.name,
            engine.address,
            state_dir=cluster.state_dir / "robots" / engine.name,
            seeds=seeds,
            log_level=log_level,
        )
        calls.append(
            functools.partial(cluster.start, f"{ROBOT_PREFIX}{engine.name}", "robot", argv, timeout=timeout)
        )
    in_parallel(calls)
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
    extra: Sequence[str] = (),
) -> list[str]:
    """``python -m oasis.robot`` arguments of ``topic``'s robot (without --port / --address-file);
    ``extra`` (e.g. ``--host``/``--advertise``) goes before the seeds."""
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
        *([] if rs.last_modified else ["--ignore-last-modified"]),
        "--allow-private",
        "--autostart",
        "--log-level", log_level,
        "--log-format", config.log_format,
        "--progress-seconds", str(rs.progress_seconds),
        *learning,
        *extra,
        "--seeds", *seeds,
    ]  # fmt: skip
