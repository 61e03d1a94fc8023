"""``oasis bench whoosh-lines``: Whoosh 2.7.4 (the engine's) against maintained Whoosh lines on PyPI.

Each line is installed with pip into its own folder under ``~/.cache/oasis-bench/whoosh-lines`` (never
into the project: every line imports as ``whoosh``), and a small script runs in a child Python with that
folder first on ``sys.path``. For each line: build an index of the same documentation pages (the three
topic corpora of the cluster benchmarks, 9 commits so that segments merge) and time it; then every line
opens every line's index and runs the same title queries (BM25F, top 10): can it open it, are the top-10
URLs, scores and totals those of Whoosh 2.7.4 reading its own index, and how long does a query take.
Each line also imports under every other installed CPython (``~/.pyenv``) with warnings shown.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from oasis.runtime.files import write_json_atomic

CACHE = Path.home() / ".cache" / "oasis-bench" / "whoosh-lines"
LINES = {
    "whoosh-2.7.4": "whoosh==2.7.4",  # the project's pin, installed the same way as the others
    "whoosh-reloaded": "whoosh-reloaded cached-property",  # its reading.py imports cached_property
    "whoosh3": "whoosh3",
}

SCRIPT = textwrap.dedent(
    """
    import json, os, statistics, sys, time
    import whoosh
    from whoosh import index, qparser, scoring
    from whoosh.analysis import StemmingAnalyzer
    from whoosh.fields import ID, STORED, TEXT, Schema

    data = json.load(open(sys.argv[2]))
    out = {"version": whoosh.versionstring()}
    if sys.argv[1] == "build":
        os.makedirs(sys.argv[3], exist_ok=True)
        schema = Schema(
            url=ID(stored=True, unique=True),
            title=TEXT(stored=True, analyzer=StemmingAnalyzer(), field_boost=2.0),
            text=TEXT(stored=True, analyzer=StemmingAnalyzer()), fetch_time=STORED, relevance=STORED,
        )
        start = time.perf_counter()
        ix = index.create_in(sys.argv[3], schema)
        docs = data["docs"]
        for i in range(0, len(docs), 100):
            w = ix.writer(procs=1, limitmb=256)
            for url, title, text in docs[i : i + 100]:
                w.add_document(url=url, title=title, text=text, fetch_time=0.0, relevance=0.5)
            w.commit()
        out["build_s"] = time.perf_counter() - start
    else:
        ix = index.open_dir(sys.argv[3])
        s = ix.searcher(weighting=scoring.BM25F(B=0.75, K1=1.2))
        p = qparser.MultifieldParser(["title", "text"], ix.schema, group=qparser.OrGroup)
        latencies, results = [], {}
        for _ in range(int(sys.argv[4])):
            for q in data["queries"]:
                start = time.perf_counter()
                r = s.search(p.parse(q), limit=10)
                hits = [(h["url"], h.score) for h in r]
                results[q] = {"hits": hits, "total": len(r)}
                latencies.append((time.perf_counter() - start) * 1000)
        out["search_p50_ms"] = statistics.median(latencies)
        out["results"] = results
    print(json.dumps(out))
    """
)


def _install(line: str, spec: str) -> Path:
    target = CACHE / line
    if not (target / "whoosh").is_dir():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-deps",
                "--target",
                str(target),
                *spec.split(),
            ],
            check=True,
            timeout=600,
        )
    return target


def _run(python: str, path: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(path)}
    done = subprocess.run([python, *args], capture_output=True, text=True, env=env, timeout=1800, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _same(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    urls = sum([u for u, _ in a[q]["hits"]] == [u for u, _ in b[q]["hits"]] for q in a)
    totals = sum(a[q]["total"] == b[q]["total"] for q in a)
    diffs = [
        abs(x[1] - y[1]) / max(abs(x[1]), 1e-12)
        for q in a
        for x, y in zip(a[q]["hits"], b[q]["hits"], strict=False)
    ]
    return {
        "same_top10_urls": f"{urls}/{len(a)}",
        "same_totals": f"{totals}/{len(a)}",
        "max_score_rel_diff": max(diffs, default=0.0),
    }


def run(args: argparse.Namespace) -> int:
    from oasis.bench._cluster import TOPICS, make_queries, sample_docs

    rng = random.Random(args.seed)
    docs = {t.name: sample_docs(t, args.docs_per_topic, rng) for t in TOPICS}
    queries = [q for _, q in make_queries(docs, 12, rng)]
    paths = {line: _install(line, spec) for line, spec in LINES.items()}
    report: dict[str, Any] = {"benchmark": "whoosh-lines", "rows": [], "cross": [], "imports": []}
    with tempfile.TemporaryDirectory(prefix="oasis-whoosh-lines-") as tmp:
        work = Path(tmp)
        (work / "run.py").write_text(SCRIPT)
        corpus = work / "corpus.json"
        corpus.write_text(
            json.dumps(
                {"docs": [[d.url, d.title, d.text] for v in docs.values() for d in v], "queries": queries}
            )
        )
        built: dict[str, list[float]] = {line: [] for line in LINES}
        versions: dict[str, str] = {}
        for r in range(args.repeats):  # alternate the lines
            for line, path in paths.items():
                out = _run(
                    sys.executable, path, str(work / "run.py"), "build", str(corpus), str(work / f"{line}{r}")
                )
                built[line].append(out["build_s"])
                versions[line] = out["version"]
        results: dict[tuple[str, str], dict[str, Any]] = {}
        for reader, rpath in paths.items():
            for writer in LINES:
                results[reader, writer] = _run(
                    sys.executable,
                    rpath,
                    str(work / "run.py"),
                    "search",
                    str(corpus),
                    str(work / f"{writer}0"),
                    str(args.query_repeats),
                )
        reference = results["whoosh-2.7.4", "whoosh-2.7.4"]["results"]
        for line in LINES:
            report["rows"].append(
                {
                    "line": line,
                    "version": versions[line],
                    "build_s_median": sorted(built[line])[len(built[line]) // 2],
                    "search_p50_ms_own_index": results[line, line]["search_p50_ms"],
                }
            )
        for (reader, writer), out in results.items():
            report["cross"].append(
                {
                    "reader": reader,
                    "writer": writer,
                    "opens": True,
                    "search_p50_ms": out["search_p50_ms"],
                    **_same(reference, out["results"]),
                }
            )
        pyenv = Path.home() / ".pyenv" / "versions"
        pythons = sorted(p / "bin" / "python" for p in pyenv.glob("3.1[2-9]*")) if pyenv.is_dir() else []
        for python in pythons:
            for line, path in paths.items():
                code = "import whoosh, whoosh.index, whoosh.qparser, whoosh.searching, whoosh.codec.whoosh3"
                with tempfile.TemporaryDirectory() as clean:  # no cached bytecode: the compiler warns
                    env = {**os.environ, "PYTHONPATH": str(path), "PYTHONPYCACHEPREFIX": clean}
                    done = subprocess.run(
                        [str(python), "-W", "always", "-c", code],
                        capture_output=True,
                        text=True,
                        env=env,
                        timeout=300,
                    )
                report["imports"].append(
                    {
                        "python": python.parent.parent.name,
                        "line": line,
                        "ok": done.returncode == 0,
                        "warnings": done.stderr.count("Warning"),
                    }
                )
    for row in report["rows"]:
        print(
            f"{row['line']:<16} {row['version']:<8} build {row['build_s_median']:6.2f} s  "
            f"search p50 {row['search_p50_ms_own_index']:6.2f} ms"
        )
    for c in report["cross"]:
        print(
            f"reader {c['reader']:<16} writer {c['writer']:<16} opens, top-10 urls {c['same_top10_urls']}, "
            f"totals {c['same_totals']}, max score diff {c['max_score_rel_diff']:.2%}"
        )
    for i in report["imports"]:
        print(f"python {i['python']:<8} {i['line']:<16} import ok={i['ok']} warnings={i['warnings']}")
    if args.json_out:
        write_json_atomic(args.json_out, report, indent=2)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "whoosh-lines", help="Whoosh 2.7.4 vs whoosh-reloaded vs whoosh3: format, results, speed"
    )
    p.add_argument("--docs-per-topic", type=int, default=300)
    p.add_argument("--repeats", type=int, default=2, help="alternated index builds per line")
    p.add_argument("--query-repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json-out", default=None)
    p.set_defaults(func=run)
