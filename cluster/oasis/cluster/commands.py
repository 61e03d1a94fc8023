"""Cluster commands: ``oasis up | down | restart | status | search | index | demo``.

Imported by ``oasis`` only when one of these commands runs; the module itself loads only the standard library
(the launcher, gRPC and the clients are imported inside the commands), so ``oasis status`` stays quick.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oasis.cluster.launcher import Cluster
    from oasis.runtime.clients import IndexDocument, SearchResult

logger = logging.getLogger(__name__)

DEMO_QUERIES = ("sql query index", "python module function", "http template view")


def _state_dir(args: argparse.Namespace) -> Path:
    from oasis.cluster.launcher import DEFAULT_STATE_DIR

    return Path(args.state_dir or os.environ.get("OASIS_STATE_DIR") or DEFAULT_STATE_DIR)


def _add_state_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir", default=None, help="cluster state directory (default $OASIS_STATE_DIR or ./.oasis)"
    )


def register(sub: argparse._SubParsersAction[Any]) -> None:
    up = sub.add_parser("up", help="start a local cluster (Ctrl-C or `oasis down` stops it)")
    _add_state_dir(up)
    up.add_argument("--config", type=Path, default=None, help="cluster TOML (default: built-in)")
    up.add_argument("--no-robots", action="store_true", help="engines only: no replayed web, no robots")
    up.add_argument("--detach", action="store_true", help="return once everything is SERVING")
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each service")
    up.set_defaults(func=cmd_up)

    down = sub.add_parser("down", help="stop the cluster")
    _add_state_dir(down)
    down.set_defaults(func=cmd_down)

    restart = sub.add_parser("restart", help="restart one service (same command line and port)")
    _add_state_dir(restart)
    restart.add_argument("name")
    restart.set_defaults(func=cmd_restart)

    status = sub.add_parser("status", help="services, addresses, health, document counts")
    _add_state_dir(status)
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_status)

    search = sub.add_parser("search", help="query the cluster through the broker")
    _add_state_dir(search)
    search.add_argument("query")
    search.add_argument("-k", type=int, default=10)
    search.add_argument("--deadline-ms", type=int, default=1000)
    search.add_argument("--json", action="store_true")
    search.set_defaults(func=cmd_search)

    index = sub.add_parser("index", help="bulk-load local HTML files or folders into one engine")
    _add_state_dir(index)
    index.add_argument("--engine", required=True, help="engine (topic) name")
    index.add_argument("--base-url", default="http://files.local/", help="URL prefix for file paths")
    index.add_argument("paths", nargs="+", type=Path)
    index.set_defaults(func=cmd_index)

    demo = sub.add_parser("demo", help="the main job: cluster + robots crawl the built-in web + queries")
    _add_state_dir(demo)
    demo.add_argument("--config", type=Path, default=None)
    demo.add_argument("--pages", type=int, default=150, help="wait until robots have indexed this many")
    demo.add_argument("--wait", type=float, default=120.0, help="at most this many seconds of crawling")
    demo.add_argument("--exit", action="store_true", help="stop the cluster after the queries")
    demo.add_argument("--query", action="append", default=None, help="query to run (repeatable)")
    demo.set_defaults(func=cmd_demo)


# ---------------------------------------------------------------------------------------------- up / down
def _print_endpoints(cluster: Cluster) -> None:
    for s in cluster.services:
        print(f"  {s.kind:<9} {s.name:<20} {s.address}")
    print(f"state: {cluster.state_path}")


def _wait_for_signal() -> None:
    stop = threading.Event()

    def handler(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    while not stop.wait(0.5):
        pass


def _bring_up(args: argparse.Namespace, robots: bool) -> Cluster | None:
    from oasis.cluster.config import ConfigError, load_config
    from oasis.cluster.launcher import LaunchError, bring_up

    try:
        config = load_config(args.config)
        return bring_up(config, _state_dir(args), robots=robots, timeout=getattr(args, "timeout", 60.0))
    except (ConfigError, LaunchError) as exc:
        print(f"oasis up: {exc}", file=sys.stderr)
        return None


def cmd_up(args: argparse.Namespace) -> int:
    cluster = _bring_up(args, robots=not args.no_robots)
    if cluster is None:
        return 1
    print("Oasis cluster is up:")
    _print_endpoints(cluster)
    sys.stdout.flush()
    if args.detach:
        cluster.release()
        return 0
    print("Ctrl-C stops the cluster.")
    sys.stdout.flush()
    try:
        _wait_for_signal()
    finally:
        stopped = cluster.down()
        print(f"stopped {len(stopped)} services")
    return 0


def _load(args: argparse.Namespace) -> Cluster | None:
    from oasis.cluster.launcher import Cluster, NoCluster

    try:
        return Cluster.load(_state_dir(args))
    except NoCluster as exc:
        print(f"oasis: {exc}", file=sys.stderr)
        return None


def cmd_down(args: argparse.Namespace) -> int:
    cluster = _load(args)
    if cluster is None:
        return 1
    stopped = cluster.down()
    print(f"stopped {len(stopped)} services: {', '.join(stopped) or '-'}")
    return 0


def cmd_restart(args: argparse.Namespace) -> int:
    from oasis.cluster.launcher import LaunchError

    cluster = _load(args)
    if cluster is None:
        return 1
    try:
        record = cluster.restart(args.name)
    except (KeyError, LaunchError) as exc:
        print(f"oasis restart: {exc}", file=sys.stderr)
        return 1
    cluster.release()
    print(f"{record.name} restarted on {record.address} (pid {record.pid})")
    return 0


# ---------------------------------------------------------------------------------------------- status
def web_health(address: str, path: str = "/robots.txt") -> str:
    """The replayed web and the gateway speak HTTP, not gRPC: SERVING when ``path`` answers 200."""
    import requests

    try:
        ok = requests.get(f"http://{address}{path}", timeout=2).status_code == 200
    except requests.RequestException:
        return "UNREACHABLE"
    return "SERVING" if ok else "NOT_SERVING"


def service_table(cluster: Cluster) -> list[dict[str, Any]]:
    from oasis.cluster.launcher import health_status
    from oasis.runtime.clients import RobotClient, ServiceError, documents_by_engine

    engines = [(s.name, s.address) for s in cluster.of_kind("engine")]
    counts = documents_by_engine(engines)
    rows: list[dict[str, Any]] = []
    for s in cluster.services:
        if s.kind in ("web", "gateway"):
            health = web_health(s.address, "/healthz" if s.kind == "gateway" else "/robots.txt")
        else:
            health = health_status(s.address)
        row: dict[str, Any] = {
            "name": s.name,
            "kind": s.kind,
            "address": s.address,
            "health": health,
            "documents": counts.get(s.name) if s.kind == "engine" else None,
        }
        if s.kind == "robot" and health == "SERVING":
            client = RobotClient(s.address)
            try:
                st = client.status()
                row["robot"] = {
                    "state": st.state,
                    "pages_fetched": st.pages_fetched,
                    "pages_indexed": st.pages_indexed,
                    "frontier": st.frontier_size,
                    "harvest_rate": round(st.harvest_rate, 4),
                }
            except ServiceError as exc:
                row["robot"] = {"error": str(exc)}
            finally:
                client.close()
        rows.append(row)
    return rows


def cmd_status(args: argparse.Namespace) -> int:
    cluster = _load(args)
    if cluster is None:
        return 1
    rows = service_table(cluster)
    if args.json:
        print(json.dumps({"services": rows}))
        return 0
    print(f"{'service':<20} {'kind':<9} {'address':<22} {'health':<12} documents")
    for r in rows:
        docs = "" if r["documents"] is None else str(r["documents"])
        extra = ""
        if "robot" in r and "state" in r["robot"]:
            rb = r["robot"]
            extra = f"{rb['state']}: fetched {rb['pages_fetched']}, frontier {rb['frontier']}"
        print(f"{r['name']:<20} {r['kind']:<9} {r['address']:<22} {r['health']:<12} {docs}{extra}")
    return 0


# ---------------------------------------------------------------------------------------------- search
def _broker_address(cluster: Cluster) -> str:
    from oasis.cluster.launcher import NoCluster

    brokers = cluster.of_kind("broker")
    if not brokers:
        raise NoCluster("the cluster has no broker")
    return brokers[0].address


def search_json(result: SearchResult) -> dict[str, Any]:
    return {
        "hits": [
            {"url": h.url, "title": h.title, "snippet": h.snippet, "score": h.score, "engine": h.engine}
            for h in result.hits
        ],
        "engines": result.engines,
    }


def print_results(query: str, result: SearchResult) -> None:
    answered = ", ".join(f"{n}={s}" for n, s in sorted(result.engines.items())) or "none"
    print(f'"{query}": {len(result.hits)} hits in {result.took_ms:.0f} ms; engines: {answered}')
    if result.partial:
        print("  (partial results: some engines did not answer)")
    for name, message in sorted(result.messages.items()):
        print(f"  {name}: {message}")
    for i, h in enumerate(result.hits, start=1):
        print(f"{i:>3}. {h.title or '(untitled)'}  [{h.engine}, {h.score:.3f}]")
        print(f"     {h.url}")
        if h.snippet:
            print(f"     {h.snippet}")


def cmd_search(args: argparse.Namespace) -> int:
    from oasis.runtime.clients import BrokerClient, ServiceError

    cluster = _load(args)
    if cluster is None:
        return 1
    if args.k < 1:
        print("oasis search: -k must be >= 1", file=sys.stderr)
        return 2
    client = BrokerClient(_broker_address(cluster))
    try:
        result = client.search(args.query, k=args.k, deadline_ms=args.deadline_ms)
    except ServiceError as exc:
        print(f"oasis search: {exc}", file=sys.stderr)
        return 2 if exc.code == "INVALID_ARGUMENT" else 1
    finally:
        client.close()
    if args.json:
        print(json.dumps(search_json(result)))
    else:
        print_results(args.query, result)
    return 0


# ---------------------------------------------------------------------------------------------- index
def html_files(paths: list[Path]) -> Iterator[tuple[Path, Path]]:
    """(file, root) for every .html/.htm file named or under a named folder, in a stable order.

    A folder is its files' root; files named one by one share one root, the deepest folder that holds them
    all, so that ``a/index.html`` and ``b/index.html`` keep distinct URLs.
    """
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"no such file or folder: {missing[0]}")
    files = [p.resolve() for p in paths if p.is_file()]
    common = Path(os.path.commonpath([f.parent for f in files])) if files else None
    for path in paths:
        if path.is_dir():
            for f in sorted(path.rglob("*")):
                if f.suffix.lower() in {".html", ".htm"} and f.is_file():
                    yield f, path
        elif common is not None:
            yield path.resolve(), common


def documents_from_files(paths: list[Path], base_url: str) -> Iterator[IndexDocument]:
    from oasis.runtime.clients import IndexDocument
    from oasis.runtime.html import parse_html

    base = base_url if base_url.endswith("/") else base_url + "/"
    for f, root in html_files(paths):
        url = base + f.relative_to(root).as_posix()
        try:
            page = parse_html(f.read_bytes(), url)
        except OSError as exc:
            logger.warning("skipping %s: %s", f, exc)
            continue
        yield IndexDocument(url=url, title=page.title, text=page.text, fetch_time=f.stat().st_mtime)


def cmd_index(args: argparse.Namespace) -> int:
    from oasis.runtime.clients import BULK_FLUSH_EVERY, BULK_INDEX_TIMEOUT, EngineClient, ServiceError

    cluster = _load(args)
    if cluster is None:
        return 1
    try:
        engine = cluster.get(args.engine)
    except KeyError as exc:
        print(f"oasis index: {exc.args[0]}", file=sys.stderr)
        return 2
    if engine.kind != "engine":
        print(f"oasis index: {args.engine} is a {engine.kind}, not an engine", file=sys.stderr)
        return 2
    from tqdm import tqdm

    try:
        files = list(html_files(args.paths))
    except FileNotFoundError as exc:
        print(f"oasis index: {exc}", file=sys.stderr)
        return 2
    docs = tqdm(
        documents_from_files(args.paths, args.base_url), total=len(files), unit="page", file=sys.stderr
    )
    client = EngineClient(engine.address)
    try:
        report = client.index(docs, flush_every=BULK_FLUSH_EVERY, timeout=BULK_INDEX_TIMEOUT)
    except (ServiceError, FileNotFoundError) as exc:
        print(f"oasis index: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
    print(
        f"{args.engine}: {report.acknowledged} acknowledged ({report.added} added, "
        f"{report.replaced} replaced, {len(report.rejected)} rejected)"
    )
    for url, reason in report.rejected[:10]:
        print(f"  rejected {url}: {reason}")
    return 0


# ---------------------------------------------------------------------------------------------- demo
def _indexed_total(cluster: Cluster) -> int:
    from oasis.runtime.clients import documents_by_engine

    return sum(
        n or 0 for n in documents_by_engine([(s.name, s.address) for s in cluster.of_kind("engine")]).values()
    )


def cmd_demo(args: argparse.Namespace) -> int:
    from oasis.runtime.clients import BrokerClient, ServiceError

    cluster = _bring_up(args, robots=True)
    if cluster is None:
        return 1
    try:
        print("Oasis cluster is up:")
        _print_endpoints(cluster)
        from tqdm import tqdm

        deadline = time.monotonic() + args.wait
        with tqdm(total=args.pages, desc="crawling", unit="page", file=sys.stderr) as bar:
            done = 0
            while time.monotonic() < deadline and done < args.pages:
                done = min(args.pages, _indexed_total(cluster))
                bar.update(done - bar.n)
                time.sleep(0.5)
        print(f"robots have indexed {_indexed_total(cluster)} pages")
        client = BrokerClient(_broker_address(cluster))
        try:
            for query in args.query or DEMO_QUERIES:
                print_results(query, client.search(query, k=5))
        finally:
            client.close()
        if args.exit:
            return 0
        print('The cluster keeps running: try `oasis search "..."` in another shell; Ctrl-C stops it.')
        sys.stdout.flush()
        _wait_for_signal()
        return 0
    except ServiceError as exc:
        print(f"oasis demo: {exc}", file=sys.stderr)
        return 1
    finally:
        stopped = cluster.down()
        print(f"stopped {len(stopped)} services")
