"""``oasis bench engine-index`` and ``oasis bench engine-query``: one engine over gRPC vs raw Whoosh.

Both runs use the same documents in the same invocation, so the ratios are meaningful on a shared machine:

* engine-index: documents/s through ``Engine.Index`` (a real ``python -m oasis.engine`` process, a bidi
  stream, batched durable commits) vs raw Whoosh in this process (one writer, one commit, same schema).
* engine-query: latency p50/p99 and queries/s of ``Engine.Search`` over gRPC (one client, sequential) vs
  the same parse + search + snippets on the raw Whoosh index in-process.

Documents: the reStructuredText sources of the Python 3.11 documentation (python3.11-doc), cut into
paragraph chunks of about ``--chunk-chars`` characters; a seeded synthetic Zipf text if that is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from oasis.bench._stats import percentile, process_cpu_seconds
from oasis.replay.figures import write_figure
from oasis.runtime.files import write_json_atomic

logger = logging.getLogger(__name__)

PY_DOC_SOURCES = Path("/usr/share/doc/python3.11-doc/html/_sources")
TOPIC_ARGS = [
    "--topic",
    "python",
    "--description",
    "Python programming language documentation",
    "--keywords",
    "python,module,function,class",
]


@dataclass(frozen=True)
class BenchDoc:
    url: str
    title: str
    text: str


def load_documents(n: int, chunk_chars: int, seed: int) -> tuple[list[BenchDoc], str]:
    """``n`` documents of about ``chunk_chars`` characters; returns (documents, source description)."""
    docs: list[BenchDoc] = []
    if PY_DOC_SOURCES.is_dir():
        for path in sorted(PY_DOC_SOURCES.rglob("*.txt")):
            rel = path.relative_to(PY_DOC_SOURCES).as_posix()
            buf: list[str] = []
            size = 0
            part = 0
            for para in path.read_text(errors="replace").split("\n\n"):
                buf.append(para)
                size += len(para)
                if size >= chunk_chars:
                    docs.append(
                        BenchDoc(
                            f"http://python.docs.local/{rel}?part={part}", f"{rel} {part}", "\n\n".join(buf)
                        )
                    )
                    buf, size, part = [], 0, part + 1
                    if len(docs) >= n:
                        return docs, f"python3.11-doc rst sources ({chunk_chars}-char chunks)"
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20_000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    source = "synthetic Zipf text" if not docs else "python3.11-doc rst sources + synthetic Zipf text"
    while len(docs) < n:
        words = rng.choices(vocab, weights, k=chunk_chars // 6)
        i = len(docs)
        docs.append(BenchDoc(f"http://synthetic.local/{i}", f"doc {i}", " ".join(words)))
    return docs, source


# --- raw Whoosh -------------------------------------------------------------------------------------------


def raw_whoosh_index(
    docs: Sequence[BenchDoc], folder: Path, relevance: Sequence[float], limitmb: int
) -> tuple[float, float]:
    """(wall seconds, CPU seconds) to index ``docs`` with plain Whoosh: one writer, one commit, the
    engine's schema."""
    from whoosh.filedb.filestore import FileStorage

    from oasis.engine.index import make_schema

    storage = FileStorage(str(folder)).create()
    ix = storage.create_index(make_schema())
    start, cpu = time.perf_counter(), time.process_time()
    writer = ix.writer(limitmb=limitmb, procs=1)
    for d, r in zip(tqdm(docs, desc="raw whoosh", unit="doc", disable=None), relevance, strict=True):
        writer.add_document(url=d.url, title=d.title, text=d.text, fetch_time=0.0, relevance=r)
    writer.commit()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    ix.close()
    return elapsed, cpu


# --- the engine process -----------------------------------------------------------------------------------


@contextlib.contextmanager
def engine_process(folder: Path, batch_size: int, limitmb: int) -> Iterator[tuple[str, int]]:
    address_file = folder / "engine.json"
    log = folder / "engine.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "oasis.engine",
                "--name",
                "bench",
                *TOPIC_ARGS,
                "--index-dir",
                str(folder / "ix"),
                "--address-file",
                str(address_file),
                "--batch-size",
                str(batch_size),
                "--limitmb",
                str(limitmb),
                "--log-level",
                "WARNING",
            ],
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 60
        while not address_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"engine did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        yield json.loads(address_file.read_text())["address"], proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def engine_index(
    stub: Any, docs: Sequence[BenchDoc], relevance: Sequence[float] | None, pid: int | None = None
) -> tuple[float, float, int]:
    """Stream ``docs`` to the engine; returns (wall seconds from the first request to the last ack, CPU
    seconds of the engine process plus this client, documents acknowledged)."""
    from oasis.v1 import engine_pb2

    requests = [
        engine_pb2.IndexRequest(
            seq=i + 1,
            upsert=engine_pb2.Document(
                url=d.url,
                title=d.title,
                text=d.text,
                fetch_time=0.0,
                has_relevance=relevance is not None,
                relevance=relevance[i] if relevance is not None else 0.0,
            ),
        )
        for i, d in enumerate(docs)
    ]
    added = 0
    engine_cpu = process_cpu_seconds(pid) if pid is not None else 0.0
    start, cpu = time.perf_counter(), time.process_time()
    bar = tqdm(total=len(docs), desc="engine gRPC", unit="doc", disable=None)
    for ack in stub.Index(iter(requests), timeout=3600):
        bar.update(ack.added + ack.replaced + len(ack.rejected) + ack.deleted)
        added += ack.added + ack.replaced
        if ack.rejected:
            raise RuntimeError(f"engine rejected documents: {ack.rejected[0].reason}")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    if pid is not None:
        cpu += process_cpu_seconds(pid) - engine_cpu
    bar.close()
    return elapsed, cpu, added


# --- queries ----------------------------------------------------------------------------------------------


def make_queries(docs: Sequence[BenchDoc], n: int, seed: int) -> list[str]:
    """1-3 word queries drawn from mid-frequency words of the documents (seeded); words the analyzer
    would drop entirely (stop words) are left out."""
    import re

    from oasis.runtime.text import tokenize

    df: Counter[str] = Counter()
    for d in docs[:2000]:
        df.update(set(re.findall(r"[a-z]{4,}", d.text.lower())))
    ranked = [t for t, _ in df.most_common()]
    pool = [w for w in ranked[len(ranked) // 50 : len(ranked) // 5] if tokenize(w)] or ranked
    rng = random.Random(seed)
    return [" ".join(rng.sample(pool, k=rng.randint(1, 3))) for _ in range(n)]


def raw_whoosh_queries(folder: Path, queries: Sequence[str], limit: int) -> list[float]:
    """Per-query seconds: parse, search, snippets for the hits (the work Engine.Search does), in-process."""
    from whoosh import highlight, qparser, scoring
    from whoosh.filedb.filestore import FileStorage

    ix = FileStorage(str(folder)).open_index()
    parser = qparser.MultifieldParser(["title", "text"], ix.schema, group=qparser.OrGroup)
    times = []
    with ix.searcher(weighting=scoring.BM25F(B=0.75, K1=1.2)) as searcher:
        for q in tqdm(queries, desc="raw whoosh queries", disable=None):
            start = time.perf_counter()
            results = searcher.search(parser.parse(q), limit=limit)
            results.fragmenter = highlight.ContextFragmenter(maxchars=240, surround=60)
            _ = len(results)
            for hit in results:
                hit.highlights("text", top=2)
            times.append(time.perf_counter() - start)
    ix.close()
    return times


def engine_queries(stub: Any, queries: Sequence[str], limit: int) -> list[float]:
    from oasis.v1 import engine_pb2

    times = []
    for q in tqdm(queries, desc="engine gRPC queries", disable=None):
        start = time.perf_counter()
        stub.Search(engine_pb2.SearchRequest(query=q, limit=limit), timeout=30)
        times.append(time.perf_counter() - start)
    return times


def latency_row(name: str, times: Sequence[float]) -> dict[str, float | str]:
    return {
        "system": name,
        "queries": len(times),
        "p50_ms": 1000 * percentile(times, 50),
        "p99_ms": 1000 * percentile(times, 99),
        "mean_ms": 1000 * statistics.fmean(times),
        "qps": len(times) / sum(times),
    }


# --- commands ---------------------------------------------------------------------------------------------


def _prepare(args: argparse.Namespace) -> tuple[list[BenchDoc], str, list[float]]:
    from oasis.engine.relevance import RelevanceModel
    from oasis.engine.topic import Topic

    docs, source = load_documents(args.docs, args.chunk_chars, args.seed)
    topic = Topic(name="python", description=TOPIC_ARGS[3], keywords=tuple(TOPIC_ARGS[5].split(",")))
    model = RelevanceModel.from_topic(topic)
    relevance = [model.score(d.title, d.text) for d in docs]  # what a robot would send along (r(i))
    return docs, source, relevance


def _connect(address: str) -> tuple[Any, Any]:
    from oasis.runtime.service import open_channel
    from oasis.v1 import engine_pb2_grpc

    channel = open_channel(address)
    return channel, engine_pb2_grpc.EngineStub(channel)


def run_index(args: argparse.Namespace) -> dict[str, Any]:
    """Interleave ``--repeat`` runs of each system on the same documents; report the best (least disturbed
    by other load on a shared machine) and the median, by wall clock and by CPU time."""
    docs, source, relevance = _prepare(args)
    mb = sum(len(d.text) for d in docs) / 1e6
    systems: list[tuple[str, Sequence[float] | None]] = [("raw Whoosh in-process (1 commit)", None)]
    systems.append((f"engine over gRPC, batch {args.batch_size}, robot-supplied r(i)", relevance))
    if args.engine_scores:
        systems.append((f"engine over gRPC, batch {args.batch_size}, engine computes r(i)", None))
    walls: dict[str, list[float]] = {name: [] for name, _ in systems}
    cpus: dict[str, list[float]] = {name: [] for name, _ in systems}
    with tempfile.TemporaryDirectory(prefix="oasis-bench-") as tmp:
        root = Path(tmp)
        for rep in range(args.repeat):
            for k, (name, rel) in enumerate(systems):
                folder = root / f"{rep}-{k}"
                folder.mkdir()
                if k == 0:
                    wall, cpu = raw_whoosh_index(docs, folder / "raw", relevance, args.limitmb)
                else:
                    with engine_process(folder, args.batch_size, args.limitmb) as (address, pid):
                        channel, stub = _connect(address)
                        try:
                            wall, cpu, acked = engine_index(stub, docs, rel, pid)
                        finally:
                            channel.close()
                    if acked != len(docs):
                        raise RuntimeError(f"engine acknowledged {acked} of {len(docs)} documents")
                walls[name].append(wall)
                cpus[name].append(cpu)
                shutil.rmtree(folder, ignore_errors=True)
    raw = systems[0][0]
    rows: list[dict[str, Any]] = []
    for name, _ in systems:
        best = min(walls[name])
        rows.append(
            {
                "system": name,
                "best_s": best,
                "median_s": statistics.median(walls[name]),
                "docs_per_s": len(docs) / best,
                "ratio_vs_raw": min(walls[raw]) / best,
                "cpu_s": min(cpus[name]),
                "cpu_ratio_vs_raw": min(cpus[raw]) / min(cpus[name]),
            }
        )
    return {
        "benchmark": "engine-index",
        "documents": len(docs),
        "megabytes": mb,
        "source": source,
        "batch_size": args.batch_size,
        "limitmb": args.limitmb,
        "repeat": args.repeat,
        "rows": rows,
        "runs": {"wall_s": walls, "cpu_s": cpus},
    }


def run_query(args: argparse.Namespace) -> dict[str, Any]:
    docs, source, relevance = _prepare(args)
    queries = make_queries(docs, args.queries, args.seed)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="oasis-bench-") as tmp:
        root = Path(tmp)
        raw_whoosh_index(docs, root / "raw", relevance, args.limitmb)
        folder = root / "engine"
        folder.mkdir()
        with engine_process(folder, args.batch_size, args.limitmb) as (address, _pid):
            channel, stub = _connect(address)
            try:
                engine_index(stub, docs, relevance)
                warm = queries[: min(20, len(queries))]
                engine_queries(stub, warm, args.limit)
                raw_whoosh_queries(root / "raw", warm, args.limit)
                rows.append(
                    latency_row(
                        "raw Whoosh in-process", raw_whoosh_queries(root / "raw", queries, args.limit)
                    )
                )
                rows.append(latency_row("engine over gRPC", engine_queries(stub, queries, args.limit)))
            finally:
                channel.close()
    rows[1]["qps_ratio_vs_raw"] = rows[1]["qps"] / rows[0]["qps"]
    rows[0]["qps_ratio_vs_raw"] = 1.0
    return {
        "benchmark": "engine-query",
        "documents": len(docs),
        "source": source,
        "limit": args.limit,
        "rows": rows,
    }


def print_table(result: dict[str, Any]) -> None:
    rows = result["rows"]
    columns = [c for c in rows[0] if c != "system"]
    head = f"{'system':<58}" + "".join(f"{c:>18}" for c in columns)
    print(f"{result['benchmark']}: {result['documents']} documents ({result['source']})")
    print(head)
    print("-" * len(head))
    for row in rows:
        cells = "".join(f"{row[c]:>18.3f}" if isinstance(row[c], float) else f"{row[c]:>18}" for c in columns)
        print(f"{row['system']:<58}{cells}")


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    key = "docs_per_s" if result["benchmark"] == "engine-index" else "qps"
    fig, ax = plt.subplots(figsize=(7, 2.2 + 0.4 * len(rows)))
    ax.barh([r["system"] for r in rows], [r[key] for r in rows], color="#4477aa")
    ax.set_xlabel("documents / s" if key == "docs_per_s" else "queries / s")
    ax.set_title(f"{result['benchmark']}: {result['documents']} documents")
    ax.invert_yaxis()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_figure(fig, path, dpi=90)


def _run(args: argparse.Namespace) -> int:
    result = run_index(args) if args.bench == "engine-index" else run_query(args)
    result["command"] = (
        "oasis bench " + " ".join(sys.argv[sys.argv.index("bench") + 1 :]) if "bench" in sys.argv else None
    )
    print_table(result)
    if args.json_out:
        write_json_atomic(args.json_out, result, indent=2)
        print(f"wrote {args.json_out}")
    if args.plot:
        plot(result, Path(args.plot))
        print(f"wrote {args.plot}")
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    for name, help_text in (
        ("engine-index", "engine indexing docs/s over gRPC vs raw Whoosh on the same documents"),
        ("engine-query", "engine query latency p50/p99 and queries/s over gRPC vs raw Whoosh in-process"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--docs", type=int, default=5000, help="number of documents (default 5000)")
        p.add_argument("--chunk-chars", type=int, default=2000, help="characters per document (default 2000)")
        p.add_argument("--batch-size", type=int, default=1000, help="engine commit batch (default 1000)")
        p.add_argument("--limitmb", type=int, default=256, help="Whoosh writer memory (MB), both systems")
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--repeat", type=int, default=3, help="interleaved runs per system; best and median")
        p.add_argument("--json-out", type=Path, default=None)
        p.add_argument("--plot", type=Path, default=None, help="write a bar chart PNG")
        if name == "engine-index":
            p.add_argument(
                "--engine-scores",
                action="store_true",
                help="also run with has_relevance=false (the engine computes r(i))",
            )
        else:
            p.add_argument("--queries", type=int, default=500)
            p.add_argument("--limit", type=int, default=10)
        p.set_defaults(func=_run)
