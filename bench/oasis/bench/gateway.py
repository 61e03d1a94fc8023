"""``oasis bench gateway``: what the HTTP gateway adds to a search, against a direct broker call (same run).

One cluster (:mod:`oasis.bench._cluster`: three topic engines over real documentation pages, a directory, a
``python -m oasis.broker``) and one ``python -m oasis.gateway`` in front of the broker. Each query is sent
both ways, alternately, one at a time:

* ``broker``: the gateway's own broker client (:class:`oasis.runtime.clients.BrokerClient`) called directly
  over gRPC, with the same k the gateway asks for (page 1 and one hit beyond it);
* ``gateway``: ``GET /search?q=...&format=json`` over HTTP/1.1 keep-alive (a ``requests`` session), which
  adds parsing and checking the request, the thread hop, the JSON body and HTTP itself.

Reported: p50/p99 latency of each, and the gateway's p50 and p99 as ratios to the broker's and the added
milliseconds at p50. Alternating the two modes query by query keeps machine drift out of the ratio.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import requests
from tqdm import tqdm

from oasis.bench._cluster import enter_cluster
from oasis.bench._stats import percentile
from oasis.bench.query_latency import start_broker
from oasis.gateway.search import broker_k
from oasis.runtime.clients import BrokerClient
from oasis.runtime.files import write_json_atomic
from oasis.runtime.spawn import ServiceProcess, spawn_service

logger = logging.getLogger(__name__)

PAGE_SIZE = 10


@dataclass(frozen=True, kw_only=True)
class Row:
    mode: str
    queries: int
    p50_ms: float
    p99_ms: float
    mean_ms: float
    p50_ratio: float = 1.0  # to broker
    p99_ratio: float = 1.0


def start_gateway(broker: str, workdir: Path) -> ServiceProcess:
    return spawn_service(
        [sys.executable, "-m", "oasis.gateway", "--broker", broker, "--log-level", "WARNING",
         "--deadline-ms", "5000"],
        workdir / "gateway.address.json",
        timeout=60,
        name="gateway",
        cwd=workdir,
    )  # fmt: skip


def row(mode: str, ms: list[float]) -> Row:
    return Row(
        mode=mode,
        queries=len(ms),
        p50_ms=statistics.median(ms),
        p99_ms=percentile(ms, 99),
        mean_ms=statistics.fmean(ms),
    )


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="oasis-gateway-bench-") as tmp, ExitStack() as stack:
        workdir = Path(tmp)
        cluster = enter_cluster(stack, workdir, args)
        if cluster is None:
            return 0
        cluster.register(500)
        queries = [q for _, q in cluster.queries]
        broker_process = start_broker(cluster.directory.address, workdir)
        stack.callback(broker_process.stop, 20)
        gateway_process = start_gateway(broker_process.address, workdir)
        stack.callback(gateway_process.stop, 20)
        client = BrokerClient(broker_process.address)
        stack.callback(client.close)
        session = stack.enter_context(requests.Session())
        url = f"http://{gateway_process.address}/search"
        k = broker_k(1, PAGE_SIZE)

        def direct(q: str) -> int:
            return len(client.search(q, k=k, deadline_ms=5000).hits[:PAGE_SIZE])

        def http(q: str) -> int:
            reply = session.get(url, params={"q": q, "format": "json"}, timeout=10)
            if reply.status_code != 200:
                raise RuntimeError(f"gateway answered {reply.status_code} to {q!r}: {reply.text[:200]}")
            return len(reply.json()["results"])

        for q in queries:  # warm channels, connections, caches; both modes must agree
            if direct(q) != http(q):
                raise RuntimeError(f"gateway and broker disagree on {q!r}")
        times: dict[str, list[float]] = {"broker": [], "gateway": []}
        modes = (("broker", direct), ("gateway", http))
        for rep in tqdm(range(args.repeats), desc="gateway vs broker", unit="pass"):
            for i, q in enumerate(queries):
                order = modes if (i + rep) % 2 == 0 else modes[::-1]
                for mode, search in order:
                    start = time.perf_counter()
                    search(q)
                    times[mode].append((time.perf_counter() - start) * 1000.0)
    base = row("broker", times["broker"])
    gw = row("gateway", times["gateway"])
    ratios = {"p50_ratio": gw.p50_ms / base.p50_ms, "p99_ratio": gw.p99_ms / base.p99_ms}
    rows = [base, Row(**{**asdict(gw), **ratios})]
    print(f"{len(queries)} queries x {args.repeats} passes, one at a time, the two modes alternated")
    print("{:>8} {:>8} {:>8} {:>8} {:>8} {:>11} {:>11}".format(
        "mode", "queries", "p50 ms", "p99 ms", "mean ms", "p50/broker", "p99/broker"))  # fmt: skip
    for r in rows:
        print(
            f"{r.mode:>8} {r.queries:>8} {r.p50_ms:>8.2f} {r.p99_ms:>8.2f} {r.mean_ms:>8.2f} "
            f"{r.p50_ratio:>11.2f} {r.p99_ratio:>11.2f}"
        )
    added = rows[1].p50_ms - rows[0].p50_ms
    print(f"the gateway adds {added:.2f} ms at p50 ({rows[1].p50_ratio:.2f}x the direct broker call)")
    if args.json_out:
        out: dict[str, Any] = {
            "benchmark": "gateway",
            "queries": len(queries),
            "repeats": args.repeats,
            "rows": [asdict(r) for r in rows],
            "added_p50_ms": added,
        }
        write_json_atomic(args.json_out, out, indent=2)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "gateway", help="GET /search?format=json latency vs a direct broker gRPC call (p50/p99, ratio)"
    )
    p.add_argument("--docs-per-topic", type=int, default=300)
    p.add_argument("--queries-per-topic", type=int, default=12)
    p.add_argument("--repeats", type=int, default=10, help="passes over the query set")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json-out", default=None)
    p.set_defaults(func=run)
