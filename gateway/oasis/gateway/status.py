"""What the ``/status`` dashboard shows: the cluster's services and their health, engine sizes, robot
progress, and each topic's recall, freshness and M over time.

Sources, each optional and each failing soft (a dead service is a row that says so, never an error page):

* the cluster state file (``--cluster-state``, the launcher's ``cluster.json``: ``{"services": [{"name",
  "kind", "address"}, ...]}``), read on every request so restarted services and late robots show up;
* the directory (``ListEngines``): the engines holding a lease, and so the engines the broker can route to;
* each service: gRPC health (HTTP for the replayed web and the gateway), engine ``Stats``, robot ``Status``;
* quality series (``--quality``, a JSON-lines file or a folder of them): one record per line,
  ``{"t": seconds, "topic": name, "recall": R, "freshness": F, "M": M}`` (also read: ``time`` /
  ``elapsed`` for ``t``, ``R`` / ``F`` / ``quality`` for the three values; a file's name is the topic when a
  record has none). R, F and M = min(R, F) are papers/004 Eqs. 1-3.

The plots are inline SVG built from numbers only (the page's template escapes every name), so the page needs
neither JavaScript nor a plotting library.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from oasis.runtime.clients import DirectoryClient, EngineClient, RobotClient
from oasis.runtime.errors import ServiceError
from oasis.runtime.rpc import health_status

logger = logging.getLogger(__name__)

HEALTH_TIMEOUT = 1.0
HTTP_KINDS = {"web": "/robots.txt", "gateway": "/healthz"}  # services that speak HTTP: the path to probe
MAX_POINTS = 2000  # per topic: the newest points are plotted
MAX_QUALITY_BYTES = 8 * 1024 * 1024  # of each series file, its tail is read
SERIES = (("recall", "R"), ("freshness", "F"), ("M", "M"))
_KEYS = {
    "t": ("t", "time", "elapsed", "timestamp"),
    "recall": ("recall", "R"),
    "freshness": ("freshness", "F"),
    "M": ("M", "quality", "m"),
}


@dataclass(frozen=True, kw_only=True)
class ServiceRow:
    name: str
    kind: str
    address: str
    health: str
    documents: int | None = None
    robot: dict[str, Any] | None = None
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class QualityPoint:
    t: float
    recall: float | None
    freshness: float | None
    M: float | None


@dataclass(frozen=True, kw_only=True)
class Plot:
    """An SVG line plot of one topic: polylines in pixel coordinates, axis ticks, the latest values."""

    topic: str
    width: int
    height: int
    lines: tuple[tuple[str, str, str], ...]  # (series key, label, "x,y x,y ...")
    x_ticks: tuple[tuple[float, str], ...]
    y_ticks: tuple[tuple[float, str], ...]
    latest: dict[str, float | None]
    points: int


@dataclass(frozen=True, kw_only=True)
class ClusterStatus:
    services: tuple[ServiceRow, ...]
    plots: tuple[Plot, ...]
    errors: tuple[str, ...] = ()  # sources that could not be read (shown on the page)
    quality_source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "services": [
                {
                    k: v
                    for k, v in {
                        "name": s.name,
                        "kind": s.kind,
                        "address": s.address,
                        "health": s.health,
                        "documents": s.documents,
                        "robot": s.robot,
                        "note": s.note or None,
                    }.items()
                    if v is not None
                }
                for s in self.services
            ],
            "quality": {p.topic: {"points": p.points, "latest": p.latest} for p in self.plots},
            "errors": list(self.errors),
        }


@dataclass(frozen=True, kw_only=True)
class StatusSources:
    broker: str
    directory: str | None = None
    cluster_state: Path | None = None
    quality: Path | None = None
    self_address: str = ""  # this gateway's own address (its row is SERVING without probing itself)


@dataclass
class _Found:
    rows: list[dict[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def read_cluster_state(path: Path) -> list[dict[str, str]]:
    """(name, kind, address) of each service in the launcher's state file; ValueError when unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cluster state {path}: {exc}") from exc
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, list):
        raise ValueError(f"cluster state {path}: no services list")
    return [
        {"name": str(s["name"]), "kind": str(s["kind"]), "address": str(s["address"])}
        for s in services
        if isinstance(s, dict) and {"name", "kind", "address"} <= s.keys()
    ]


def http_health(address: str, path: str) -> str:
    try:
        ok = requests.get(f"http://{address}{path}", timeout=HEALTH_TIMEOUT).status_code == 200
    except requests.RequestException:
        return "UNREACHABLE"
    return "SERVING" if ok else "NOT_SERVING"


def _probe(row: dict[str, str], self_address: str) -> ServiceRow:
    kind, address = row["kind"], row["address"]
    if kind == "gateway" and address == self_address:
        return ServiceRow(name=row["name"], kind=kind, address=address, health="SERVING", note="this page")
    if kind in HTTP_KINDS:
        health = http_health(address, HTTP_KINDS[kind]) if address else "UNKNOWN"
    else:
        health = health_status(address, timeout=HEALTH_TIMEOUT)
    documents: int | None = None
    robot: dict[str, Any] | None = None
    note = row.get("note", "")
    if kind == "engine" and health == "SERVING":
        engine = EngineClient(address)
        try:
            documents = engine.document_count(timeout=HEALTH_TIMEOUT)
        except ServiceError as exc:
            note = str(exc)
        finally:
            engine.close()
    if kind == "robot" and health == "SERVING":
        client = RobotClient(address)
        try:
            st = client.status(timeout=HEALTH_TIMEOUT)
            robot = {
                "state": st.state,
                "pages_fetched": st.pages_fetched,
                "pages_indexed": st.pages_indexed,
                "frontier": st.frontier_size,
                "harvest_rate": round(st.harvest_rate, 4),
            }
        except ServiceError as exc:
            note = str(exc)
        finally:
            client.close()
    return ServiceRow(
        name=row["name"], kind=kind, address=address, health=health, documents=documents, robot=robot,
        note=note,
    )  # fmt: skip


def _services(sources: StatusSources) -> _Found:
    found = _Found()
    if sources.cluster_state is not None:
        try:
            found.rows = read_cluster_state(sources.cluster_state)
        except ValueError as exc:
            found.errors.append(str(exc))
    if not found.rows:  # no launcher state: what the gateway itself knows
        found.rows = [{"name": "broker", "kind": "broker", "address": sources.broker}]
        if sources.directory:
            found.rows.insert(0, {"name": "directory", "kind": "directory", "address": sources.directory})
    if sources.directory:
        directory = DirectoryClient(sources.directory, timeout=HEALTH_TIMEOUT)
        try:
            registered = dict(directory.list_engines())
        except ServiceError as exc:
            found.errors.append(f"directory: {exc}")
        else:
            known = {r["name"] for r in found.rows if r["kind"] == "engine"}
            for r in found.rows:
                if r["kind"] == "engine" and r["name"] not in registered:
                    r["note"] = "not registered with the directory (the broker cannot route to it)"
            found.rows.extend(
                {"name": name, "kind": "engine", "address": address}
                for name, address in sorted(registered.items())
                if name not in known
            )
        finally:
            directory.close()
    return found


def collect_status(sources: StatusSources) -> ClusterStatus:
    """Everything the dashboard shows, probing the services in parallel (about one health timeout)."""
    found = _services(sources)
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(found.rows)))) as pool:
        services = tuple(pool.map(lambda r: _probe(r, sources.self_address), found.rows))
    plots: tuple[Plot, ...] = ()
    if sources.quality is not None:
        try:
            plots = tuple(plot(topic, pts) for topic, pts in sorted(read_quality(sources.quality).items()))
        except ValueError as exc:
            found.errors.append(str(exc))
    return ClusterStatus(
        services=services,
        plots=plots,
        errors=tuple(found.errors),
        quality_source=None if sources.quality is None else str(sources.quality),
    )


# ------------------------------------------------------------------------------------------ quality
def _number(record: dict[str, Any], key: str) -> float | None:
    for alias in _KEYS[key]:
        value = record.get(alias)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    return None


def _tail_lines(path: Path) -> list[str]:
    with path.open("rb") as f:
        size = f.seek(0, 2)
        f.seek(max(0, size - MAX_QUALITY_BYTES))
        data = f.read()
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[1:] if size > MAX_QUALITY_BYTES else lines  # the first line may be cut


def _quality_point(record: dict[str, Any], t: float) -> QualityPoint | None:
    """The point of one topic's values at time ``t``; None without any value."""
    values = {k: _number(record, k) for k in ("recall", "freshness", "M")}
    if all(v is None for v in values.values()):
        return None
    if values["M"] is None and values["recall"] is not None and values["freshness"] is not None:
        values["M"] = min(values["recall"], values["freshness"])  # M = min(R, F), papers/004 Eq. 3
    return QualityPoint(t=t, **values)


def parse_quality_lines(lines: Iterable[str], default_topic: str) -> dict[str, list[QualityPoint]]:
    """Points per topic from JSON lines, either one topic per record or the cluster evaluator's rows (every
    topic at one time under ``topics``); lines that are not a record with a time and a value are skipped."""
    out: dict[str, list[QualityPoint]] = {}
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(record, dict):
            continue
        t = _number(record, "t")  # "t", "time" or "elapsed"
        if t is None:
            continue
        topics = record.get("topics")
        if isinstance(topics, dict):
            per_topic = [(str(k), v) for k, v in topics.items() if isinstance(v, dict)]
        else:
            per_topic = [(str(record.get("topic") or default_topic), record)]
        for topic, values in per_topic:
            point = _quality_point(values, t)
            if point is not None:
                out.setdefault(topic, []).append(point)
    return out


def read_quality(source: Path) -> dict[str, list[QualityPoint]]:
    """Every topic's points (sorted by time, the newest :data:`MAX_POINTS`) from a file or a folder of
    ``*.jsonl`` / ``*.json`` files; an absent source is no data yet, an unreadable one a ValueError."""
    if not source.exists():
        return {}
    files = sorted([*source.glob("*.jsonl"), *source.glob("*.json")]) if source.is_dir() else [source]
    out: dict[str, list[QualityPoint]] = {}
    for f in files:
        try:
            lines = _tail_lines(f)
        except OSError as exc:
            raise ValueError(f"quality series {f}: {exc}") from exc
        for topic, points in parse_quality_lines(lines, default_topic=f.stem).items():
            out.setdefault(topic, []).extend(points)
    return {topic: sorted(pts, key=lambda p: p.t)[-MAX_POINTS:] for topic, pts in out.items()}


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    step = (hi - lo) / n
    return [lo + i * step for i in range(n + 1)]


def plot(topic: str, points: Sequence[QualityPoint], width: int = 520, height: int = 180) -> Plot:
    """Recall, freshness and M of one topic over time in a ``width`` x ``height`` SVG (y in [0, 1])."""
    left, right, top, bottom = 40, 22, 10, 24
    t0 = points[0].t if points else 0.0
    t1 = points[-1].t if points else 1.0
    span = (t1 - t0) or 1.0

    def x(t: float) -> float:
        return left + (t - t0) / span * (width - left - right)

    def y(v: float) -> float:
        return top + (1.0 - min(1.0, max(0.0, v))) * (height - top - bottom)

    lines = []
    for key, label in SERIES:
        coords = [f"{x(p.t):.1f},{y(v):.1f}" for p in points if (v := getattr(p, key)) is not None]
        if coords:
            lines.append((key, label, " ".join(coords)))
    last = points[-1] if points else None
    return Plot(
        topic=topic,
        width=width,
        height=height,
        lines=tuple(lines),
        x_ticks=tuple((x(t), f"{t - t0:.0f}s") for t in _ticks(t0, t1)),
        y_ticks=tuple((y(v), f"{v:.2f}") for v in (0.0, 0.25, 0.5, 0.75, 1.0)),
        latest={k: getattr(last, k) if last else None for k, _ in SERIES},
        points=len(points),
    )
