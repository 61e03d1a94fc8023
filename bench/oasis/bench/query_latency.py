"""``oasis bench query-latency``: query latency p50/p99 and queries/s of four ways to search.

* ``bare``: Whoosh's own search of a copy of the central index in this process, top 10 with their stored
  fields, no snippets (the baseline);
* ``direct``: the same index through ``TopicIndex.search`` in this process (exact total, snippets);
* ``engine``: the same central index served by one ``python -m oasis.engine`` over gRPC;
* ``broker``: ``python -m oasis.broker`` over the three topic engines (route, fan-out, merge);
* ``engines-serial``: the three topic engines asked one after another (the CPU the broker's fan-out needs);
* ``broker-typo``: the broker, each query with one typo (the second and third letters of its longest word
  swapped): the "did you mean" path (a second search of the engines that lack the word beside hits), and
  how often its suggestion is the query as it was before the typo.

Latency is measured one query at a time, the modes interleaved (each query in every mode in turn);
throughput with ``--clients`` concurrent client threads. Results are also given as ratios to ``bare``
measured in the same run (absolute times drift on a shared machine).

``--metrics-overhead N``: also the cost of the Prometheus RPC interceptor (:mod:`oasis.runtime.metrics`):
the central engine (metrics on, the default) against a second engine on a copy of its index started with
``--metrics-port off``, measured alternately N times; the median of the per-round ratios is reported.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm
from whoosh import index as windex
from whoosh import scoring

from oasis.bench._cluster import enter_cluster, open_central_copy, start_engine
from oasis.bench._stats import percentile
from oasis.broker.servicer import ROUTE_SOURCE_METADATA
from oasis.engine.index import InvalidQuery
from oasis.runtime.files import write_json_atomic
from oasis.runtime.service import open_channel
from oasis.runtime.spawn import ServiceProcess, spawn_service
from oasis.v1 import broker_pb2, broker_pb2_grpc, engine_pb2, engine_pb2_grpc

logger = logging.getLogger(__name__)

Search = Callable[[str], int]


def typo(query: str) -> str:
    """``query`` with one typo: the second and third letters of its longest word of five or more letters
    swapped (the commonest typing error; ``extensibility`` -> ``etxensibility``), or ``query`` unchanged when
    it has no such word."""
    words = [(len(w), -i, w) for i, w in enumerate(query.split()) if len(w) >= 5 and w.isalpha()]
    if not words:
        return query
    _, at, word = max(words)
    if word[1] == word[2]:
        return query
    parts = query.split()
    parts[-at] = word[0] + word[2] + word[1] + word[3:]
    return " ".join(parts)


@dataclass(frozen=True, kw_only=True)
class Row:
    mode: str
    queries: int
    p50_ms: float
    p99_ms: float
    qps: float
    p50_ratio: float = 1.0  # to bare
    qps_ratio: float = 1.0


def latencies(searches: Mapping[str, Search], queries: list[str], repeats: int) -> dict[str, list[float]]:
    """Milliseconds per query of each mode, interleaved (each query runs in every mode in turn), so that
    the load of a shared machine falls on all modes alike."""
    for search in searches.values():  # warm caches and channels
        for q in queries:
            search(q)
    out: dict[str, list[float]] = {mode: [] for mode in searches}
    for _ in tqdm(range(repeats), desc="latency", unit="pass", leave=False):
        for q in queries:
            for mode, search in searches.items():
                start = time.perf_counter()
                search(q)
                out[mode].append((time.perf_counter() - start) * 1000.0)
    return out


def throughput(search: Search, queries: list[str], repeats: int, clients: int) -> float:
    """Queries per second with ``clients`` threads sharing the query list ``repeats`` times."""
    work = queries * repeats
    lock = threading.Lock()
    position = [0]

    def worker() -> None:
        while True:
            with lock:
                i = position[0]
                position[0] += 1
            if i >= len(work):
                return
            search(work[i])

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for f in [pool.submit(worker) for _ in range(clients)]:
            f.result()
    return len(work) / (time.perf_counter() - start)


def start_broker(directory: str, workdir: Path) -> ServiceProcess:
    return spawn_service(
        [sys.executable, "-m", "oasis.broker", "--directory", directory, "--log-level", "WARNING"],
        workdir / "broker.address.json",
        timeout=60,
        name="broker",
        cwd=workdir,
    )


def run(args: argparse.Namespace) -> int:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="oasis-query-latency-") as tmp, ExitStack() as stack:
        workdir = Path(tmp)
        cluster = enter_cluster(stack, workdir, args)
        if cluster is None:
            return 0
        broker_process: ServiceProcess | None = None
        try:
            cluster.register(500)  # the engines' default summary size
            index = open_central_copy(cluster.central_dir, workdir / "central-direct")
            queries = []
            for _, q in cluster.queries:
                try:
                    index.parse_query(q)
                    queries.append(q)
                except InvalidQuery:
                    continue

            raw = windex.open_dir(str(workdir / "central-direct"))
            searcher = raw.searcher(weighting=scoring.BM25F(B=0.75, K1=1.2))
            broker_process = start_broker(cluster.directory.address, workdir)
            partial = [0]
            route_sources: dict[str, int] = {}  # where the broker's routes came from (cache, directory)
            engine_channel = stack.enter_context(open_channel(cluster.central_engine.address))
            broker_channel = stack.enter_context(open_channel(broker_process.address))
            engine = engine_pb2_grpc.EngineStub(engine_channel)
            broker = broker_pb2_grpc.BrokerStub(broker_channel)

            def bare(q: str) -> int:
                return len([hit["url"] for hit in searcher.search(index.parse_query(q), limit=10)])

            def direct(q: str) -> int:
                return len(index.search(q, limit=10).hits)

            def one_engine(q: str) -> int:
                return len(engine.Search(engine_pb2.SearchRequest(query=q, limit=10), timeout=10).hits)

            def brokered(q: str) -> int:
                reply, call = broker.Search.with_call(
                    broker_pb2.BrokerSearchRequest(query=q, k=10, deadline_ms=5000), timeout=10
                )
                partial[0] += reply.partial
                for key, value in call.trailing_metadata() or ():
                    if key == ROUTE_SOURCE_METADATA:
                        route_sources[str(value)] = route_sources.get(str(value), 0) + 1
                return len(reply.hits)

            topic_engines = [
                engine_pb2_grpc.EngineStub(stack.enter_context(open_channel(e.address)))
                for e in cluster.engines.values()
            ]

            def serial(q: str) -> int:  # what the broker's fan-out costs in CPU: every topic engine's search
                return sum(
                    len(e.Search(engine_pb2.SearchRequest(query=q, limit=10), timeout=10).hits)
                    for e in topic_engines
                )

            corrected: dict[str, str] = {}  # misspelt query -> the broker's suggestion

            def brokered_typo(q: str) -> int:
                wrong = typo(q)
                reply = broker.Search(
                    broker_pb2.BrokerSearchRequest(query=wrong, k=10, deadline_ms=5000), timeout=10
                )
                corrected[wrong] = reply.suggestion
                return len(reply.hits)

            searches: dict[str, Search] = {"bare": bare, "direct": direct, "engine": one_engine}
            searches.update({"broker": brokered, "engines-serial": serial, "broker-typo": brokered_typo})
            measured = latencies(searches, queries, args.repeats)
            for mode, search in tqdm(searches.items(), desc="throughput", unit="mode", leave=False):
                ms = measured[mode]
                rows.append(
                    Row(
                        mode=mode,
                        queries=len(ms),
                        p50_ms=statistics.median(ms),
                        p99_ms=percentile(ms, 99),
                        qps=throughput(search, queries, args.repeats, args.clients),
                    )
                )
            for q in queries[: args.examples]:  # snippet quality: matched terms in context
                for hit in index.search(q, limit=2).hits:
                    print(f"[{q}] {hit.url}\n    {hit.snippet}")
            searcher.close()
            raw.close()
            index.close()
            if partial[0]:
                logger.warning("%d broker replies were partial", partial[0])
            print("broker routes: " + ", ".join(f"{k} {v}" for k, v in sorted(route_sources.items())))
            if args.metrics_overhead:
                overhead = metrics_overhead(cluster, workdir, stack, queries, args)
        finally:
            if broker_process is not None:
                broker_process.stop(grace=20)
    base = rows[0]
    rows = [
        Row(**{**asdict(r), "p50_ratio": r.p50_ms / base.p50_ms, "qps_ratio": r.qps / base.qps}) for r in rows
    ]
    print(f"{len(queries)} queries x {args.repeats} passes; throughput with {args.clients} client threads")
    print(
        "{:>7} {:>8} {:>8} {:>8} {:>8} {:>10} {:>10}".format(
            "mode", "queries", "p50 ms", "p99 ms", "q/s", "p50/bare", "qps/bare"
        )
    )
    for r in rows:
        print(
            f"{r.mode:>7} {r.queries:>8} {r.p50_ms:>8.2f} {r.p99_ms:>8.2f} {r.qps:>8.1f} "
            f"{r.p50_ratio:>10.2f} {r.qps_ratio:>10.2f}"
        )
    by_mode = {r.mode: r for r in rows}
    print(
        f"p50 direct/bare {by_mode['direct'].p50_ms / base.p50_ms:.2f}x, "
        f"engine/bare {by_mode['engine'].p50_ms / base.p50_ms:.2f}x, "
        f"broker/engine {by_mode['broker'].p50_ms / by_mode['engine'].p50_ms:.2f}x, "
        f"engines-serial/engine {by_mode['engines-serial'].p50_ms / by_mode['engine'].p50_ms:.2f}x"
    )
    misspelt = [q for q in queries if typo(q) != q]
    right = sum(corrected.get(typo(q), "").lower() == q.lower() for q in misspelt)
    offered = sum(bool(corrected.get(typo(q))) for q in misspelt)
    typo_ratio = by_mode["broker-typo"].p50_ms / by_mode["broker"].p50_ms
    print(
        f"did you mean: {len(misspelt)} queries with one typo (broker-typo): a suggestion on {offered}, "
        f"the query as it was on {right}; p50 broker-typo/broker {typo_ratio:.2f}x"
    )
    if args.metrics_overhead:
        print(
            f"metrics interceptor, {args.metrics_overhead} alternated rounds: p50 with/without "
            f"{overhead['p50_ratio']:.3f} (rounds {', '.join(f'{r:.3f}' for r in overhead['p50_rounds'])}), "
            f"q/s with/without {overhead['qps_ratio']:.3f}"
        )
    if args.json_out:
        out: dict[str, Any] = {"benchmark": "query-latency", "clients": args.clients}
        out["rows"] = [asdict(r) for r in rows]
        out["typos"] = {"queries": len(misspelt), "suggested": offered, "as_before": right}
        out["corrections"] = {typo(q): corrected.get(typo(q), "") for q in misspelt}
        if args.metrics_overhead:
            out["metrics_overhead"] = overhead
        write_json_atomic(args.json_out, out, indent=2)
    return 0


def metrics_overhead(
    cluster: Any, workdir: Path, stack: ExitStack, queries: list[str], args: argparse.Namespace
) -> dict[str, Any]:
    """p50 latency and q/s of the central engine (metrics on) over a copy of it with ``--metrics-port off``,
    measured alternately ``args.metrics_overhead`` times: the median ratio (with / without) and the rounds."""
    open_central_copy(cluster.central_dir, workdir / "central-nometrics").close()
    plain = start_engine(
        "central-nometrics", None, workdir / "central-nometrics", workdir, ["--metrics-port", "off"]
    )
    stack.callback(plain.stop, 20)
    p50: list[float] = []
    qps: list[float] = []
    with open_channel(cluster.central_engine.address) as ch_on, open_channel(plain.address) as ch_off:
        on, off = engine_pb2_grpc.EngineStub(ch_on), engine_pb2_grpc.EngineStub(ch_off)

        def searcher(stub: Any) -> Search:
            return lambda q: len(stub.Search(engine_pb2.SearchRequest(query=q, limit=10), timeout=10).hits)

        for i in range(args.metrics_overhead):
            order = [("on", on), ("off", off)] if i % 2 == 0 else [("off", off), ("on", on)]
            searches = {name: searcher(stub) for name, stub in order}
            ms = latencies(searches, queries, args.repeats)  # interleaved query by query
            rate = {name: throughput(f, queries, args.repeats, args.clients) for name, f in searches.items()}
            p50.append(statistics.median(ms["on"]) / statistics.median(ms["off"]))
            qps.append(rate["on"] / rate["off"])
    return {
        "p50_ratio": statistics.median(p50),
        "qps_ratio": statistics.median(qps),
        "p50_rounds": p50,
        "qps_rounds": qps,
    }


def register(sub: Any) -> None:
    p = sub.add_parser("query-latency", help="p50/p99 and q/s: bare Whoosh vs direct vs one engine vs broker")
    p.add_argument("--docs-per-topic", type=int, default=300)
    p.add_argument("--queries-per-topic", type=int, default=12)
    p.add_argument("--repeats", type=int, default=5, help="passes over the query set for latency")
    p.add_argument("--clients", type=int, default=4, help="concurrent client threads for throughput")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--examples", type=int, default=3, help="print the top snippets of this many queries")
    p.add_argument("--json-out", default=None)
    p.add_argument(
        "--metrics-overhead",
        type=int,
        default=0,
        metavar="N",
        help="also measure the metrics interceptor: engine with/without metrics, N alternated rounds",
    )
    p.set_defaults(func=run)
