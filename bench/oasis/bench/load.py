"""``oasis bench load``: N concurrent clients against the broker over 3 engines (a real local cluster).

For each concurrency level a fixed number of queries is sent; the table gives throughput, p50/p99 latency of
answered queries and errors by status code. Up to the broker's concurrency limit every query must be
answered; beyond it the broker sheds load with RESOURCE_EXHAUSTED at once instead of queueing until
deadlines pass (graceful, not collapse).

The cluster is started and stopped with the ``oasis`` command itself (``oasis up --detach``, ``oasis status
--json``, ``oasis down``), as an operator would: benchmarks sit below the cluster launcher in the layers
(docs/architecture.md) and drive it from outside.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from oasis.bench._stats import percentile
from oasis.runtime.clients import (
    BULK_FLUSH_EVERY,
    BULK_INDEX_TIMEOUT,
    BrokerClient,
    EngineClient,
    IndexDocument,
    ServiceError,
)
from oasis.runtime.files import write_json_atomic

logger = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("load", help="concurrent clients against the broker over 3 engines")
    p.add_argument("--pages", type=int, default=3000, help="synthetic pages split over the 3 engines")
    p.add_argument("--levels", default="1,4,16,64", help="client concurrency levels")
    p.add_argument("--queries", type=int, default=400, help="queries per level")
    p.add_argument("--limit", type=int, default=16, help="broker's max concurrent queries")
    p.add_argument("--deadline-ms", type=int, default=2000)
    p.add_argument("--json-out", type=Path, default=Path("out/bench_load.json"))
    p.set_defaults(func=run)


TOPICS = ("databases", "python", "web")


def cluster_toml(limit: int, deadline_ms: int) -> str:
    """The benchmark's cluster: directory, broker and one engine per topic (no web, no robots)."""
    lines = ["[cluster]", f"default_deadline_ms = {deadline_ms}", f"max_concurrent_queries = {limit}", ""]
    for name in TOPICS:
        lines += ["[[topic]]", f'name = "{name}"', f'description = "{name}"', f'keywords = ["{name}"]', ""]
    return "\n".join(lines)


def oasis(*args: str) -> str:
    """Run ``python -m oasis.cli ARGS``; its stdout, or RuntimeError with its stderr."""
    run = subprocess.run(
        [sys.executable, "-m", "oasis.cli", *args], capture_output=True, text=True, timeout=300
    )
    if run.returncode != 0:
        raise RuntimeError(f"oasis {' '.join(args)} failed ({run.returncode}): {run.stderr[-2000:]}")
    return run.stdout


def _load_documents(addresses: dict[str, str], pages: int) -> list[str]:
    """Index a synthetic web split by topic into the three engines; return query words per topic."""
    import numpy as np

    from oasis.web.synthetic import SyntheticSpec, SyntheticWeb

    web = SyntheticWeb(SyntheticSpec(pages=pages, hosts=3, topics=3, seed=11))
    by_topic: dict[str, list[IndexDocument]] = {name: [] for name in web.topic_names}
    for i in range(web.spec.hosts, web.n):
        name = web.topic_names[int(np.argmax([web.relevance_to(k)[i] for k in range(3)]))]
        by_topic[name].append(IndexDocument(url=web.url(i), title=web.title(i), text=web.text(i)))
    for name, docs in by_topic.items():
        client = EngineClient(addresses[name])
        try:
            client.index(docs, flush_every=BULK_FLUSH_EVERY, timeout=BULK_INDEX_TIMEOUT)
        finally:
            client.close()
    return [w for vocab in web.vocabularies for w in vocab[:20]]


def _one_level(address: str, clients: int, queries: list[str], deadline_ms: int) -> dict[str, Any]:
    broker = BrokerClient(address)
    latencies: list[float] = []
    codes: Counter[str] = Counter()

    def ask(query: str) -> None:
        start = time.perf_counter()
        try:
            broker.search(query, k=10, deadline_ms=deadline_ms)
        except ServiceError as exc:
            codes[exc.code] += 1
            return
        latencies.append((time.perf_counter() - start) * 1000)
        codes["OK"] += 1

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        list(pool.map(ask, queries))
    wall = time.perf_counter() - started
    broker.close()
    return {
        "clients": clients,
        "queries": len(queries),
        "answered": codes["OK"],
        "qps": codes["OK"] / wall,
        "p50_ms": percentile(latencies, 50) if latencies else None,
        "p99_ms": percentile(latencies, 99) if latencies else None,
        "errors": {k: v for k, v in codes.items() if k != "OK"},
    }


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    levels = [int(x) for x in args.levels.split(",")]
    rng = random.Random(5)
    with tempfile.TemporaryDirectory(prefix="oasis-load-") as tmp:
        config, state = Path(tmp) / "cluster.toml", Path(tmp) / "state"
        config.write_text(cluster_toml(args.limit, args.deadline_ms), encoding="utf-8")
        oasis("up", "--config", str(config), "--no-robots", "--detach", "--state-dir", str(state))
        try:
            services = json.loads(oasis("status", "--json", "--state-dir", str(state)))["services"]
            addresses = {s["name"]: s["address"] for s in services}
            words = _load_documents(addresses, args.pages)
            rows = []
            for clients in tqdm(levels, desc="load levels", file=sys.stderr):
                queries = [" ".join(rng.sample(words, 2)) for _ in range(args.queries)]
                rows.append(_one_level(addresses["broker"], clients, queries, args.deadline_ms))
        finally:
            oasis("down", "--state-dir", str(state))
    print(f"broker over 3 engines, {args.pages} pages, broker limit {args.limit} concurrent queries")
    print(f"{'clients':>8} {'answered':>9} {'qps':>8} {'p50 ms':>8} {'p99 ms':>8}  errors")
    for r in rows:
        p50 = "-" if r["p50_ms"] is None else f"{r['p50_ms']:.1f}"
        p99 = "-" if r["p99_ms"] is None else f"{r['p99_ms']:.1f}"
        print(f"{r['clients']:>8} {r['answered']:>9} {r['qps']:>8.1f} {p50:>8} {p99:>8}  {r['errors'] or ''}")
    write_json_atomic(args.json_out, {"limit": args.limit, "pages": args.pages, "levels": rows}, indent=2)
    print(f"wrote {args.json_out}")
    return 0
