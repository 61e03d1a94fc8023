"""``oasis bench web``: the web layer's costs, each as a ratio against a baseline in the same process.

* parse: :func:`oasis.runtime.html.parse_html` on real pages (postgresql-doc-15, else synthetic HTML) vs
  building the BeautifulSoup tree alone (the floor any bs4-based parser pays).
* synthetic: generating the synthetic web at growing sizes, each in a fresh interpreter (seconds, links,
  peak RSS); the ratio is seconds per page against the smallest size (1.0 = linear scaling).
* pages: rendering lazily generated pages (``SyntheticWeb.page``) per second.
* serve: pages/s fetched over HTTP from the replayed web (one keep-alive session, sequential) vs the same
  pages produced in-process (``html_of`` + link rewriting), i.e. the HTTP overhead.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from oasis.replay.figures import write_figure
from oasis.runtime.files import write_json_atomic

logger = logging.getLogger(__name__)

PG_HTML = Path("/usr/share/doc/postgresql-doc-15/html")


def _parse_bench(n: int) -> dict[str, Any]:
    from bs4 import BeautifulSoup

    from oasis.runtime.html import parse_html
    from oasis.web.synthetic import synthetic_web

    if PG_HTML.is_dir():
        files = sorted(PG_HTML.glob("*.html"))[:n]
        docs = [f.read_bytes() for f in files]
        source = f"postgresql-doc-15 ({len(docs)} pages)"
    else:
        corpus = synthetic_web(f"synthetic:pages={max(n, 50)},hosts=2,topics=3,seed=1")
        docs = [(corpus.html_of(corpus.web.url(i)) or "").encode() for i in range(n)]
        source = f"synthetic HTML ({len(docs)} pages)"
    mb = sum(map(len, docs)) / 1e6
    t0 = time.perf_counter()
    for d in docs:
        BeautifulSoup(d.decode("utf-8", errors="replace"), "html.parser")
    soup_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    links = sum(len(parse_html(d, "http://postgresql.docs.local/x.html").links) for d in docs)
    parse_s = time.perf_counter() - t0
    return {
        "source": source,
        "megabytes": round(mb, 2),
        "links": links,
        "soup_only_mb_per_s": round(mb / soup_s, 2),
        "parse_html_mb_per_s": round(mb / parse_s, 2),
        "parse_over_soup": round(parse_s / soup_s, 2),
    }


_GEN_CHILD = """
import json, resource, sys, time
from oasis.web.synthetic import synthetic_web
n = int(sys.argv[1])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
web = synthetic_web(f"synthetic:pages={n},hosts=8,topics=3,seed=1").web
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sample = min(n, 2000)
step = max(1, n // sample)
t0 = time.perf_counter()
for i in range(0, step * sample, step):
    web.page(i)
per_page = (time.perf_counter() - t0) / sample
print(json.dumps({"pages": n, "links": int(len(web.indices)), "max_depth": int(web.depth.max()),
                  "mean_depth": round(float(web.depth.mean()), 2), "seconds": round(seconds, 2),
                  "peak_rss_mib": round(peak / 1024, 1), "rss_before_mib": round(base / 1024, 1),
                  "pages_rendered_per_s": round(1 / per_page)}))
"""


def _synthetic_bench(sizes: list[int]) -> list[dict[str, Any]]:
    """Each size in a fresh interpreter, so the peak RSS is that size's own."""
    rows = []
    for n in sizes:
        out = subprocess.run(
            [sys.executable, "-c", _GEN_CHILD, str(n)],
            capture_output=True,
            text=True,
            check=True,
            timeout=1800,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = rows[0]["seconds"] / rows[0]["pages"]
    for row in rows:
        row["sec_per_page_vs_smallest"] = round(row["seconds"] / row["pages"] / base, 2) if base else None
    return rows


def _serve_bench(n: int) -> dict[str, Any]:
    import requests

    from oasis.web.server import ReplayedWeb
    from oasis.web.synthetic import synthetic_web

    corpus = synthetic_web(f"synthetic:pages={n},hosts=4,topics=3,seed=1")
    urls = [corpus.web.url(i) for i in range(n)]
    with ReplayedWeb(corpus) as web:
        t0 = time.perf_counter()
        for u in urls:
            web.rewrite_links(corpus.html_of(u) or "", u)
        local_s = time.perf_counter() - t0
        with requests.Session() as session:
            t0 = time.perf_counter()
            for u in urls:
                session.get(web.url_for(u), timeout=10).raise_for_status()
            http_s = time.perf_counter() - t0
    return {
        "pages": n,
        "in_process_pages_per_s": round(n / local_s),
        "http_pages_per_s": round(n / http_s),
        "http_over_in_process": round(http_s / local_s, 2),
    }


def plot_synthetic(spec: str, path: Path) -> None:
    """Pages per depth split by relevance band, for one synthetic web (the shape the robot must learn)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from oasis.web.synthetic import link_distances, synthetic_web

    web = synthetic_web(spec).web
    rel = web.relevance_to(web.spec.target)
    depth = link_distances(web.indptr, web.indices, np.arange(web.spec.hosts))
    bins = np.arange(int(depth.max()) + 2)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bands = [
        (0.0, 0.05, "r < 0.05"),
        (0.05, 0.5, "0.05 <= r < 0.5"),
        (0.5, 0.8, "0.5 <= r < 0.8"),
        (0.8, 1.01, "r >= 0.8"),
    ]
    bottom = np.zeros(len(bins) - 1)
    for lo, hi, label in bands:
        counts, _ = np.histogram(depth[(rel >= lo) & (rel < hi)], bins=bins)
        ax.bar(bins[:-1], counts, bottom=bottom, label=label, width=0.85)
        bottom += counts
    ax.set_xlabel("fewest links from a seed (home page)")
    ax.set_ylabel("pages")
    ax.set_title(f"{spec}: relevance r(i) to '{web.topic_names[web.spec.target]}' by depth", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_figure(fig, path, dpi=110)


def run(args: argparse.Namespace) -> int:
    if args.plot:
        plot_synthetic(args.plot_spec, args.plot)
    sizes = [int(s) for s in args.sizes.split(",")]
    result: dict[str, Any] = {
        "parse": _parse_bench(args.parse_pages),
        "synthetic": _synthetic_bench(sizes),
        "serve": _serve_bench(args.serve_pages),
    }
    p = result["parse"]
    print(f"parse ({p['source']}, {p['megabytes']} MB): parse_html {p['parse_html_mb_per_s']} MB/s, "
          f"soup only {p['soup_only_mb_per_s']} MB/s, ratio {p['parse_over_soup']}")  # fmt: skip
    print(f"{'pages':>9} {'links':>10} {'depth max/mean':>15} {'seconds':>8} {'peak RSS MiB':>13} "
          f"{'s/page vs smallest':>19} {'pages rendered/s':>17}")  # fmt: skip
    for r in result["synthetic"]:
        depth = f"{r['max_depth']}/{r['mean_depth']}"
        print(f"{r['pages']:>9} {r['links']:>10} {depth:>15} {r['seconds']:>8} {r['peak_rss_mib']:>13} "
              f"{r['sec_per_page_vs_smallest']:>19} {r['pages_rendered_per_s']:>17}")  # fmt: skip
    s = result["serve"]
    print(f"serve ({s['pages']} pages): HTTP {s['http_pages_per_s']} pages/s, in-process "
          f"{s['in_process_pages_per_s']} pages/s, ratio {s['http_over_in_process']}")  # fmt: skip
    if args.json_out:
        write_json_atomic(args.json_out, result, indent=1)
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    parser = sub.add_parser("web", help="HTML parsing, synthetic web generation, replayed-web serving")
    parser.add_argument("--sizes", default="10000,100000,1000000", help="synthetic web sizes (comma list)")
    parser.add_argument("--parse-pages", type=int, default=200, help="pages for the parse benchmark")
    parser.add_argument("--serve-pages", type=int, default=500, help="pages for the serving benchmark")
    parser.add_argument("--json-out", type=Path, help="write the results as JSON here")
    parser.add_argument("--plot", type=Path, help="also plot a synthetic web's depth/relevance here (PNG)")
    parser.add_argument("--plot-spec", default="synthetic:pages=100000,hosts=8,topics=3,seed=1")
    parser.set_defaults(func=run)
