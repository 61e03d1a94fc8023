"""Cluster commands: ``oasis up | down | restart | status | search | index | demo``.

Imported by ``oasis`` only when one of these commands runs; the module itself loads only the standard library
(the launcher, gRPC and the clients are imported inside the commands), so ``oasis status`` stays quick.
"""

from __future__ import annotations

import argparse
import itertools
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

from oasis.runtime.addresses import address_arg

if TYPE_CHECKING:
    from oasis.cluster.launcher import Cluster, ServiceRecord
    from oasis.runtime.clients import IndexDocument, SearchResult

logger = logging.getLogger(__name__)

DEMO_QUERIES = ("tcp socket connection", "regular expression pattern", "thread lock queue")


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
    up.add_argument(
        "--node", default=None, help="start only this [[node]] of the cluster TOML (one host of several)"
    )
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
    status.add_argument(
        "--directory",
        default=None,
        type=address_arg,
        help="HOST:PORT: ask this directory for the engines (no state file)",
    )
    status.add_argument(
        "--broker", default=None, type=address_arg, help="HOST:PORT: with --directory, also this broker"
    )
    status.add_argument("--json", action="store_true")
    status.add_argument("--follow", action="store_true", help="refresh in the terminal (as `oasis watch`)")
    status.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes (--follow)")
    status.set_defaults(func=cmd_status)

    watch = sub.add_parser("watch", help="live status: R/F/M per topic, robots' progress (Ctrl-C stops)")
    _add_state_dir(watch)
    watch.add_argument("--interval", type=float, default=2.0, help="seconds between refreshes")
    watch.set_defaults(func=cmd_watch)

    search = sub.add_parser("search", help="query the cluster through the broker")
    _add_state_dir(search)
    search.add_argument(
        "--broker", default=None, type=address_arg, help="HOST:PORT of a broker (no state file needed)"
    )
    search.add_argument(
        "query",
        nargs="+",
        help="the query; its words may be given unquoted (oasis search tcp socket), a -word excludes the "
        "word (oasis search socket -tcp); a -word that is also an option of this command (-k...) goes "
        "after -- (oasis search -- socket -kafka)",
    )
    search.add_argument("-k", type=int, default=10, help="hits wanted (default 10)")
    search.add_argument(
        "--deadline-ms", type=int, default=1000, help="the whole query's deadline (default 1000 ms)"
    )
    search.add_argument("--json", action="store_true", help="print the result as one JSON object")
    search.set_defaults(func=cmd_search)

    index = sub.add_parser("index", help="bulk-load local HTML files or folders into one engine")
    _add_state_dir(index)
    index.add_argument("--engine", required=True, help="engine (topic) name")
    index.add_argument(
        "--base-url",
        default=None,
        help="URL prefix for the paths relative to each named folder (default: http://files.local followed "
        "by each file's absolute path, so that two trees never share a URL)",
    )
    index.add_argument("paths", nargs="+", type=Path)
    index.set_defaults(func=cmd_index)

    demo = sub.add_parser("demo", help="the main job: cluster + robots crawl the built-in web + queries")
    _add_state_dir(demo)
    demo.add_argument("--config", type=Path, default=None)
    demo.add_argument("--pages", type=int, default=15, help="wait until robots have indexed this many")
    demo.add_argument("--wait", type=float, default=120.0, help="at most this many seconds of crawling")
    demo.add_argument(
        "--maintain", type=float, default=60.0, help="then watch R/F/M this many seconds as the web changes"
    )
    demo.add_argument("--exit", action="store_true", help="stop the cluster after the queries")
    demo.add_argument("--query", action="append", default=None, help="query to run (repeatable)")
    demo.set_defaults(func=cmd_demo)


# ---------------------------------------------------------------------------------------------- up / down
def _print_endpoints(cluster: Cluster) -> None:
    for s in cluster.services:
        print(f"  {s.kind:<9} {s.name:<20} {s.address}")
    for s in cluster.of_kind("gateway"):
        print(f"search page: http://{s.address}/  dashboard: http://{s.address}/status")
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
    from oasis.cluster.launcher import LaunchError, bring_up, bring_up_node
    from oasis.runtime.files import FileWriteError

    try:
        config = load_config(args.config)
        timeout = getattr(args, "timeout", 60.0)
        if getattr(args, "node", None):
            return bring_up_node(config, args.node, _state_dir(args), robots=robots, timeout=timeout)
        return bring_up(config, _state_dir(args), robots=robots, timeout=timeout)
    except (ConfigError, LaunchError, FileWriteError) as exc:  # FileWriteError: its record (cluster stopped)
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
    from oasis.cluster.launcher import Cluster, NoCluster

    try:
        cluster = Cluster.load(_state_dir(args))
    except NoCluster as exc:  # lost or truncated state: stop what can be found by command line in /proc
        cluster = Cluster.recover(_state_dir(args))
        if not cluster.services:
            print(f"oasis: {exc}", file=sys.stderr)
            return 1
        print(f"oasis down: {exc}; found {len(cluster.services)} running services by their command lines")
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
    from oasis.cluster.quality import QUALITY_FILE, last_row
    from oasis.runtime.clients import RobotClient, ServiceError, documents_by_engine

    engines = [(s.name, s.address) for s in cluster.of_kind("engine")]
    counts = documents_by_engine(engines)
    latest = last_row(cluster.state_dir / QUALITY_FILE)
    topics: dict[str, Any] = latest.get("topics", {}) if latest is not None else {}
    rows: list[dict[str, Any]] = []
    for s in cluster.services:
        if s.kind == "evaluator":
            health = "SERVING" if _pid_alive(s.pid) else "UNREACHABLE"
        elif s.kind in ("web", "gateway"):
            health = web_health(s.address, "/healthz" if s.kind == "gateway" else "/robots.txt")
        else:
            health = health_status(s.address)
        row: dict[str, Any] = {
            "name": s.name,
            "kind": s.kind,
            "address": s.address,
            "health": health,
            "documents": counts.get(s.name) if s.kind == "engine" else None,
            "metrics": s.extra.get("metrics"),  # HOST:PORT of its Prometheus /metrics (None: no metrics)
        }
        if s.kind == "engine" and s.name in topics:
            t = topics[s.name]
            row["quality"] = {k: t[k] for k in ("recall", "freshness", "M")}
        if s.kind == "web" and (s.extra.get("truth") or latest is not None):
            row["web"] = web_counts(cluster, latest)
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
                    "recrawls": st.recrawls,
                    "changes_seen": st.changes_seen,
                    "not_modified": st.not_modified,
                    "pages_per_second": round(st.pages_per_second, 3),
                    "recall_estimate": round(st.recall_estimate, 4),
                    "freshness_estimate": round(st.freshness_estimate, 4),
                    "errors": st.errors,
                    "links_skipped": st.links_skipped,
                }
            except ServiceError as exc:
                row["robot"] = {"error": str(exc)}
            finally:
                client.close()
        rows.append(row)
    return rows


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def web_counts(cluster: Cluster, latest: dict[str, Any] | None) -> dict[str, int]:
    """Changes of the living web so far: asked of its ground truth (token from the state file), else the
    evaluator's last sample."""
    from oasis.cluster.evaluator import truth_client

    keys = ("modified", "deleted", "created")
    api = truth_client(cluster)
    if api is not None:
        try:
            counts = api.get("/stats")["counts"]
            return {k: int(counts.get(k, 0)) for k in keys}
        except Exception:  # the web is down: fall back to the last sample
            logger.debug("living web unreachable", exc_info=True)
        finally:
            api.close()
    web = (latest or {}).get("web", {})
    return {k: int(web.get(k, 0)) for k in keys}


def status_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The plain-text status table: services, then quality per topic and robots' maintenance."""
    lines = [f"{'service':<20} {'kind':<9} {'address':<22} {'health':<12} documents"]
    for r in rows:
        docs = "" if r["documents"] is None else str(r["documents"])
        extra = ""
        if "robot" in r and "state" in r["robot"]:
            rb = r["robot"]
            extra = (
                f"{rb['state']}: fetched {rb['pages_fetched']} ({rb['pages_per_second']:.1f}/s), "
                f"re-crawls {rb['recrawls']}, changes seen {rb['changes_seen']}, frontier {rb['frontier']}"
            )
        if "quality" in r:
            q = r["quality"]
            extra = f"  R {q['recall']:.3f}  F {q['freshness']:.3f}  M {q['M']:.3f}"
        if "web" in r:
            w = r["web"]
            extra = f"modified {w['modified']}, deleted {w['deleted']}, created {w['created']}"
        lines.append(f"{r['name']:<20} {r['kind']:<9} {r['address']:<22} {r['health']:<12} {docs}{extra}")
    return lines


def cmd_status(args: argparse.Namespace) -> int:
    if args.directory:
        from oasis.cluster.remote import remote_cluster
        from oasis.runtime.errors import ServiceError

        try:
            cluster: Cluster | None = remote_cluster(args.directory, args.broker)
        except ServiceError as exc:
            print(f"oasis status: {exc}", file=sys.stderr)
            return 1
    elif args.broker:
        print("oasis status: --broker goes with --directory", file=sys.stderr)
        return 2
    elif args.follow:
        return cmd_watch(args)
    else:
        cluster = _load(args)
    if cluster is None:
        return 1
    rows = service_table(cluster)
    if args.json:
        print(json.dumps({"services": rows}))
        return 0
    print("\n".join(status_lines(rows)))
    return 0


def watch_table(cluster: Cluster) -> Any:
    """A rich renderable: per topic R, F, M, P/t and its robot's progress; the web's changes."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    rows = service_table(cluster)
    robots = {r["name"].removeprefix("robot-"): r.get("robot", {}) for r in rows if r["kind"] == "robot"}
    table = Table(title="Oasis: topics maintained on a living web", expand=False)
    for col in ("topic", "docs", "R", "F", "M", "robot", "fetched", "pages/s", "re-crawls", "changes", "304"):
        table.add_column(col, justify="left" if col in ("topic", "robot") else "right")
    for r in rows:
        if r["kind"] != "engine":
            continue
        q = r.get("quality", {})
        rb = robots.get(r["name"], {})

        def fmt(x: Any, spec: str = "") -> str:
            return "-" if x is None else format(x, spec)

        table.add_row(
            r["name"], fmt(r["documents"]), fmt(q.get("recall"), ".3f"), fmt(q.get("freshness"), ".3f"),
            fmt(q.get("M"), ".3f"), str(rb.get("state", "-")), fmt(rb.get("pages_fetched")),
            fmt(rb.get("pages_per_second"), ".1f"), fmt(rb.get("recrawls")), fmt(rb.get("changes_seen")),
            fmt(rb.get("not_modified")),
        )  # fmt: skip
    web = next((r.get("web") for r in rows if r["kind"] == "web" and "web" in r), None)
    footer = Text(
        f"web: {web['modified']} modified, {web['deleted']} deleted, {web['created']} created"
        if web
        else "web: static (no ground truth)"
    )
    return Group(table, footer, Text(time.strftime("updated %H:%M:%S  (Ctrl-C stops watching)")))


def cmd_watch(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.live import Live

    cluster = _load(args)
    if cluster is None:
        return 1
    interval = max(0.2, float(getattr(args, "interval", 2.0)))
    console = Console()
    try:
        if not console.is_terminal:  # piped or logged: a live table shows nothing until it stops, so print
            # (a reader that closes the pipe, `| head`, ends it quietly: rich exits 1 on a broken pipe)
            console = Console(width=160)  # one snapshot per refresh, each flushed at once (names not cut at
            while True:  # the 80 columns a pipe gets)
                console.print(watch_table(cluster))
                console.file.flush()
                time.sleep(interval)
        with Live(watch_table(cluster), console=console, refresh_per_second=4, screen=False) as live:
            while True:
                time.sleep(interval)
                live.update(watch_table(cluster))
    except KeyboardInterrupt:
        return 0


# ---------------------------------------------------------------------------------------------- search
def _broker_address(cluster: Cluster) -> str:
    from oasis.cluster.launcher import NoCluster

    brokers = cluster.of_kind("broker")
    if brokers:
        return brokers[0].address
    if cluster.remote.get("broker"):  # a node of a multi-host cluster whose broker runs elsewhere
        return cluster.remote["broker"]
    raise NoCluster("the cluster has no broker")


def search_json(result: SearchResult) -> dict[str, Any]:
    """Hits with plain-text snippets and the ``[start, end)`` character spans of their matched terms."""
    from oasis.runtime.highlight import parse_snippet

    hits = []
    for h in result.hits:
        snippet, spans = parse_snippet(h.snippet)
        hits.append(
            {"url": h.url, "title": h.title, "snippet": snippet, "highlights": [list(s) for s in spans],
             "score": h.score, "engine": h.engine}
        )  # fmt: skip
    return {
        "hits": hits,
        "matches": result.matches,
        "suggestion": result.suggestion,
        "engines": result.engines,
        "partial": result.partial,
        "messages": result.messages,
        "took_ms": result.took_ms,
    }


def print_results(query: str, result: SearchResult, bold: bool | None = None) -> None:
    """Matched terms in terminal bold when ``bold`` (default: stdout is a terminal), else plain text."""
    from oasis.runtime.highlight import terminal_safe, terminal_snippet

    bold = sys.stdout.isatty() if bold is None else bold
    answered = ", ".join(f"{n}={s}" for n, s in sorted(result.engines.items())) or "none"
    n = len(result.hits)
    shown = f"{n} of about {result.matches}" if result.matches > n else f"{n}"
    print(f'"{query}": {shown} hits in {result.took_ms:.0f} ms; engines: {answered}')
    if result.partial:
        print("  (partial results: some engines did not answer)")
    if result.suggestion:
        print(f'  did you mean "{terminal_safe(result.suggestion)}"?')
    for name, message in sorted(result.messages.items()):
        print(f"  {name}: {message}")
    for i, h in enumerate(result.hits, start=1):
        print(f"{i:>3}. {terminal_safe(h.title) or '(untitled)'}  [{h.engine}, {h.score:.3f}]")
        print(f"     {terminal_safe(h.url)}")
        if h.snippet:
            print(f"     {terminal_snippet(h.snippet, bold=bold)}")


def cmd_search(args: argparse.Namespace) -> int:
    from oasis.cluster.launcher import NoCluster
    from oasis.runtime.clients import BrokerClient, ServiceError

    if args.k < 1:
        print("oasis search: -k must be >= 1", file=sys.stderr)
        return 2
    address = args.broker
    if address is None:
        cluster = _load(args)
        if cluster is None:
            return 1
        try:
            address = _broker_address(cluster)
        except NoCluster as exc:
            print(f"oasis search: {exc}", file=sys.stderr)
            return 1
    query = " ".join(args.query)
    client = BrokerClient(address)
    try:
        result = client.search(query, k=args.k, deadline_ms=args.deadline_ms)
    except ServiceError as exc:
        if exc.code == "INVALID_ARGUMENT":  # the query: the engine's words, as the search page shows them
            print(f"oasis search: {exc.reason}", file=sys.stderr)
            return 2
        print(f"oasis search: {exc}", file=sys.stderr)
        return 1
    finally:
        client.close()
    if args.json:
        print(json.dumps(search_json(result)))
    else:
        print_results(query, result)
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


DEFAULT_FILES_HOST = "http://files.local"


def documents_from_files(
    paths: list[Path],
    base_url: str | None = None,
    skipped: list[Path] | None = None,
    stubs: list[Path] | None = None,
) -> Iterator[IndexDocument]:
    """One document per HTML file; its URL is ``base_url`` + the path relative to its root, or (no
    ``base_url``) ``http://files.local`` + its absolute path, distinct for every file on this machine. A file
    that cannot be read or holds binary data is skipped with a warning (and added to ``skipped``); a redirect
    stub (a prompt ``<meta http-equiv="refresh">``, which the robot follows and does not index) is skipped
    too (added to ``stubs``)."""
    from urllib.parse import quote

    from oasis.runtime.clients import IndexDocument
    from oasis.runtime.html import MAX_BYTES, looks_binary, parse_html

    base = None if base_url is None else base_url if base_url.endswith("/") else base_url + "/"
    for f, root in html_files(paths):
        if base is None:
            url = DEFAULT_FILES_HOST + quote(f.resolve().as_posix())
        else:
            url = base + f.relative_to(root).as_posix()
        try:
            with f.open("rb") as handle:  # the parser reads no more than MAX_BYTES of a page: nor does this
                content = handle.read(MAX_BYTES + 1)
            mtime = f.stat().st_mtime
        except OSError as exc:
            logger.warning("skipping %s: %s", f, exc)
            if skipped is not None:
                skipped.append(f)
            continue
        if looks_binary(content):
            logger.warning("skipping %s: binary data, not HTML", f)
            if skipped is not None:
                skipped.append(f)
            continue
        page = parse_html(content, url)
        if page.redirect is not None:  # a prompt meta refresh: a stub that sends the reader elsewhere
            logger.info("skipping %s: a redirect (meta refresh) to %s", f, page.redirect)
            if stubs is not None:
                stubs.append(f)
            continue
        yield IndexDocument(url=url, title=page.title, text=page.text, fetch_time=mtime)


def find_engine(args: argparse.Namespace, prog: str) -> ServiceRecord | int:
    """The record of the engine ``args.engine`` of the local cluster, or the exit code after saying why
    there is none (1: no cluster here, 2: no such engine)."""
    cluster = _load(args)
    if cluster is None:
        return 1
    try:
        record = cluster.get(args.engine)
    except KeyError as exc:
        print(f"{prog}: {exc.args[0]}", file=sys.stderr)
        return 2
    if record.kind != "engine":
        print(f"{prog}: {args.engine} is a {record.kind}, not an engine", file=sys.stderr)
        return 2
    return record


def cmd_index(args: argparse.Namespace) -> int:
    from oasis.runtime.clients import BULK_FLUSH_EVERY, BULK_INDEX_TIMEOUT, EngineClient, ServiceError

    engine = find_engine(args, "oasis index")
    if isinstance(engine, int):
        return engine
    from tqdm import tqdm

    from oasis.cluster.export import is_export, read_export

    exports = [p for p in args.paths if p.is_file() and is_export(p)]  # an engine's export read back
    pages = [p for p in args.paths if p not in exports]
    try:
        files = list(html_files(pages))
    except FileNotFoundError as exc:
        print(f"oasis index: {exc}", file=sys.stderr)
        return 2
    skipped: list[Path] = []
    stubs: list[Path] = []
    bad_records: list[str] = []
    bar = tqdm(total=None if exports else len(files), unit="page", file=sys.stderr)

    def counted(documents: Iterator[IndexDocument]) -> Iterator[IndexDocument]:
        """The documents, each counted on the bar with the files skipped before it (so that a folder
        with skipped files still ends at its file count)."""
        passed = 0
        for doc in documents:
            now = len(skipped) + len(stubs)
            bar.update(1 + now - passed)
            passed = now
            yield doc
        bar.update(len(skipped) + len(stubs) - passed)
        bar.close()

    docs = counted(
        itertools.chain(
            *(read_export(p, bad_records) for p in exports),
            documents_from_files(pages, args.base_url, skipped, stubs),
        )
    )
    client = EngineClient(engine.address)
    try:
        report = client.index(docs, flush_every=BULK_FLUSH_EVERY, timeout=BULK_INDEX_TIMEOUT)
        # acknowledged = durable in the engine's write-ahead log; a read waits for the batches' Whoosh commit,
        # so this returns once they are searchable (and `oasis status` right after shows them at once)
        held = client.document_count(timeout=BULK_INDEX_TIMEOUT)
    except (ServiceError, FileNotFoundError) as exc:
        print(f"oasis index: {exc}", file=sys.stderr)
        return 1
    finally:
        bar.close()
        client.close()
    print(
        f"{args.engine}: {report.acknowledged} acknowledged ({report.added} added, "
        f"{report.replaced} replaced, {len(report.rejected)} rejected); {held} documents searchable"
    )
    if skipped:  # each named in a warning as it was met
        print(f"  skipped {len(skipped)} file(s) that could not be read or are not HTML (binary data)")
    if stubs:
        print(f"  skipped {len(stubs)} redirect stub(s): pages whose meta refresh sends the reader elsewhere")
    if bad_records:
        print(
            f"  skipped {len(bad_records)} part(s) of an export: lines or records with no document, "
            "or the rest of a file"
        )
    for url, reason in report.rejected[:10]:
        print(f"  rejected {url}: {reason}")
    if report.rejected:
        print(f"oasis index: the engine rejected {len(report.rejected)} file(s)", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------------------------------- demo
def _indexed_total(cluster: Cluster) -> int:
    from oasis.runtime.clients import documents_by_engine

    return sum(
        n or 0 for n in documents_by_engine([(s.name, s.address) for s in cluster.of_kind("engine")]).values()
    )


def quality_line(row: dict[str, Any], t0: float) -> str:
    """One line of the demo's story: time, the web's changes, R/F/M and re-crawls per topic."""
    w = row.get("web", {})
    changes = f"{w.get('modified', 0)} mod {w.get('deleted', 0)} del {w.get('created', 0)} new"
    parts = [f"t={row['time'] - t0:4.0f}s web {changes}"]
    for topic, q in sorted(row.get("topics", {}).items()):
        recrawls = q.get("robot", {}).get("recrawls", 0)
        rfm = f"R {q['recall']:.2f} F {q['freshness']:.2f} M {q['M']:.2f}"
        parts.append(f"{topic} {rfm} ({recrawls} re-crawls)")
    return " | ".join(parts)


def maintain_story(cluster: Cluster, seconds: float, every: float = 5.0) -> None:
    """Print R/F/M as the web changes; a third of the way in, a site-wide update (half the pages modified)
    shows freshness dropping and the robots bringing it back."""
    from oasis.cluster.evaluator import truth_client
    from oasis.cluster.quality import QUALITY_FILE, last_row

    api = truth_client(cluster)
    if api is None:
        print("(a static web: no ground truth, no live R/F/M)")
        return
    series = cluster.state_dir / QUALITY_FILE
    print(f"Maintaining for {seconds:.0f} s: the web changes, robots re-crawl (R/F/M vs the ground truth)")
    start = time.time()
    burst_done = False
    shown = None
    try:
        while time.time() - start < seconds:
            time.sleep(every)
            if not burst_done and time.time() - start >= seconds / 3:
                burst_done = True
                n = len(api.post("/burst", {"fraction": 0.5})["modified"])
                print(f"-- a site-wide update: {n} pages modified at once; watch F drop and recover --")
            row = last_row(series)
            if row is not None and row.get("time") != shown:
                shown = row.get("time")
                print(quality_line(row, start))
                sys.stdout.flush()
    finally:
        api.close()
    print(f"plots of R/F/M over time: oasis report --state-dir {cluster.state_dir} --out report/")


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
                print_results(query, client.search(query, k=3))
        finally:
            client.close()
        if args.maintain > 0:
            maintain_story(cluster, args.maintain)
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
