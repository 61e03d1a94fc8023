"""``oasis bench merge-quality``: the broker's merged ranking against one central Whoosh index.

A corpus is split across three topic engines by topic (PostgreSQL, Python, Django documentation); one central
index holds every document. For each query, the central top 10 is the reference; the broker's merged top 10
is scored by overlap@10 (shared URLs / 10) and nDCG@10 with graded gains from the central ranking (the
central rank-r hit, r = 0..9, has gain 10 - r; anything else 0). Also reported: engines queried per query
and how often CORI's best engine is the query's source topic. Configurations vary the score
normalisation (``max``, ``cori``, ``global``), the fan-out (all engines sharing a query term, or the top 1-2
by CORI) and the summary size engines send the directory (the engine default of 500 terms, or the full
vocabulary).
"""

from __future__ import annotations

import argparse
import logging
import math
import statistics
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from oasis.bench._cluster import Cluster, enter_cluster, open_central_copy
from oasis.broker.clients import EngineClientPool, GrpcDirectoryClient
from oasis.broker.merge import NORMALISATIONS, Normalisation
from oasis.broker.service import Broker, BrokerConfig
from oasis.engine.index import InvalidQuery
from oasis.replay.figures import write_figure
from oasis.runtime.files import write_json_atomic

logger = logging.getLogger(__name__)

K = 10
FULL_SUMMARY = 100_000


def overlap_at_k(ranking: list[str], reference: list[str], k: int = K) -> float:
    """|top-k of ranking ∩ top-k of reference| / |top-k of reference|."""
    ref = reference[:k]
    return len(set(ranking[:k]) & set(ref)) / len(ref) if ref else 0.0


def ndcg_at_k(ranking: list[str], reference: list[str], k: int = K) -> float:
    """nDCG@k with gains from the reference ranking: the reference's rank-r document (r from 0) has gain
    k - r, others 0; DCG = sum gain_i / log2(i + 2) (Järvelin & Kekäläinen 2002)."""
    gain = {url: float(k - r) for r, url in enumerate(reference[:k])}
    dcg = sum(gain.get(url, 0.0) / math.log2(i + 2) for i, url in enumerate(ranking[:k]))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gain.values(), reverse=True)))
    return dcg / ideal if ideal > 0 else 0.0


@dataclass(frozen=True, kw_only=True)
class Row:
    normalisation: str
    fan_out: str
    summary_terms: int
    queries: int
    overlap_at_10: float
    ndcg_at_10: float
    engines_queried: float
    source_engine_first: float


def evaluate(
    cluster: Cluster,
    reference: dict[str, list[str]],
    *,
    normalisation: Normalisation,
    max_engines: int,
    summary_terms: int,
) -> Row:
    directory = GrpcDirectoryClient(cluster.directory.address)
    engines = EngineClientPool()
    broker = Broker(
        BrokerConfig(route_cache_seconds=0.0, default_deadline_ms=10_000, normalisation=normalisation),
        directory=directory,
        engines=engines,
        clock=time.monotonic,
    )
    overlaps, ndcgs, queried, first = [], [], [], []
    try:
        for topic, query in cluster.queries:
            if query not in reference:
                continue
            outcome = broker.search(query, k=K, max_engines=max_engines)
            urls = [h.url for h in outcome.hits]
            overlaps.append(overlap_at_k(urls, reference[query]))
            ndcgs.append(ndcg_at_k(urls, reference[query]))
            called = [s for s in outcome.engines if s.state in ("ok", "timeout", "error")]
            queried.append(len(called))
            first.append(1.0 if called and called[0].name == topic else 0.0)
            bad = [s for s in called if s.state != "ok"]
            if bad:
                logger.warning("query %r: %s", query, bad)
    finally:
        directory.close()
        engines.close()
    return Row(
        normalisation=normalisation,
        fan_out="all matching" if max_engines == 0 else f"top {max_engines}",
        summary_terms=summary_terms,
        queries=len(overlaps),
        overlap_at_10=statistics.fmean(overlaps),
        ndcg_at_10=statistics.fmean(ndcgs),
        engines_queried=statistics.fmean(queried),
        source_engine_first=statistics.fmean(first),
    )


def central_reference(
    central_dir: Path, queries: list[tuple[str, str]], workdir: Path
) -> dict[str, list[str]]:
    index = open_central_copy(central_dir, workdir / "central-reference")
    try:
        out: dict[str, list[str]] = {}
        for _, q in queries:
            try:
                hits = index.search(q, limit=K).hits
            except InvalidQuery:
                continue
            if hits:
                out[q] = [h.url for h in hits]
        return out
    finally:
        index.close()


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="oasis-merge-quality-") as tmp, ExitStack() as stack:
        workdir = Path(tmp)
        cluster = enter_cluster(stack, workdir, args)
        if cluster is None:
            return 0
        reference = central_reference(cluster.central_dir, cluster.queries, workdir)
        rows: list[Row] = []
        configs = [
            (terms, fan, norm)
            for terms in (500, FULL_SUMMARY)
            for fan in (0, 2, 1)
            for norm in NORMALISATIONS
        ]
        registered = None
        for terms, fan, norm in tqdm(configs, desc="configurations", unit="config"):
            if registered != terms:
                cluster.register(terms)
                registered = terms
            rows.append(
                evaluate(cluster, reference, normalisation=norm, max_engines=fan, summary_terms=terms)
            )
    print_table(rows, cluster, len(reference))
    result: dict[str, Any] = {
        "benchmark": "merge-quality",
        "documents": cluster.documents,
        "queries": [q for _, q in cluster.queries],
        "queries_with_central_hits": len(reference),
        "seed": args.seed,
        "rows": [asdict(r) for r in rows],
    }
    if args.json_out:
        write_json_atomic(args.json_out, result, indent=2)
    if args.plot:
        plot(rows, Path(args.plot))
    return 0


def print_table(rows: list[Row], cluster: Cluster, n_queries: int) -> None:
    docs = ", ".join(f"{k} {v}" for k, v in cluster.documents.items())
    print(f"documents: {docs}; queries: {n_queries} (central top 10 is the reference)")
    head = ("summary", "fan-out", "normalise", "overlap@10", "nDCG@10", "engines/q", "src 1st")
    print("{:>8} {:>13} {:>9} {:>10} {:>8} {:>9} {:>7}".format(*head))
    for r in rows:
        print(
            f"{r.summary_terms:>8} {r.fan_out:>13} {r.normalisation:>9} {r.overlap_at_10:>10.3f} "
            f"{r.ndcg_at_10:>8.3f} {r.engines_queried:>9.2f} {r.source_engine_first:>7.2f}"
        )


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    markers = {"max": "o", "cori": "s", "global": "x"}
    for terms, color in ((500, "tab:orange"), (FULL_SUMMARY, "tab:blue")):
        for norm in NORMALISATIONS:
            sel = [r for r in rows if r.summary_terms == terms and r.normalisation == norm]
            label = f"{norm}, summary {'500' if terms == 500 else 'full'}"
            ax.plot(
                [r.engines_queried for r in sel],
                [r.ndcg_at_10 for r in sel],
                marker=markers[norm],
                color=color,
                linestyle="-" if norm != "global" else ":",
                label=label,
            )
    ax.set_xlabel("engines queried per query")
    ax.set_ylabel("nDCG@10 vs central index")
    ax.set_title("Broker merge quality (3 topic engines)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_figure(fig, path, dpi=110)


def register(sub: Any) -> None:
    p = sub.add_parser("merge-quality", help="broker merged ranking vs one central Whoosh index")
    p.add_argument("--docs-per-topic", type=int, default=300)
    p.add_argument("--queries-per-topic", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json-out", default=None)
    p.add_argument("--plot", default=None, help="PNG of nDCG@10 vs engines queried")
    p.set_defaults(func=run)
