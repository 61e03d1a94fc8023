"""``oasis bench parse``: :func:`oasis.runtime.html.parse_html` pages/s with each tree builder, as ratios.

Rows: ``html.parser`` (bs4 + Python's parser, the original path; baseline), ``bs4-lxml`` (bs4 with its lxml
tree builder, same walk) and ``lxml`` (libxml2's tree walked directly: the default). Every parser parses the
same pages (real documentation: postgresql-doc-15 and python3.11-doc) in alternating rounds in this one
process, so load on a shared machine hits all rows alike; the reported rate is the median over rounds and the
ratio is against ``html.parser`` within the same round (median of the per-round ratios). Each pass starts with
a cold URL-canonicalisation cache. The pages are read into memory first: no disk I/O is timed.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from oasis.runtime.files import write_json_atomic

logger = logging.getLogger(__name__)

CORPORA: dict[str, Path] = {
    "postgresql-doc-15": Path("/usr/share/doc/postgresql-doc-15/html"),
    "python3.11-doc": Path("/usr/share/doc/python3.11-doc/html"),
}
BASE_URLS = {
    "postgresql-doc-15": "http://postgresql.docs.local/",
    "python3.11-doc": "http://python.docs.local/",
}


def register(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("parse", help="parse_html pages/s: lxml vs bs4-lxml vs html.parser, on real pages")
    p.add_argument("--pages", type=int, default=300, help="pages per corpus (sorted paths, first N)")
    p.add_argument("--repeats", type=int, default=3, help="alternating rounds; report medians")
    p.add_argument("--json-out", type=Path, default=None, help="write the results as JSON here")
    p.set_defaults(func=run)


def load_pages(pages: int) -> dict[str, list[tuple[str, bytes]]]:
    """``{corpus: [(url, html bytes)]}`` for the installed corpora (empty if none is installed)."""
    out: dict[str, list[tuple[str, bytes]]] = {}
    for name, root in CORPORA.items():
        if not root.is_dir():
            continue
        files = sorted(root.rglob("*.html"))[:pages]
        out[name] = [(BASE_URLS[name] + f.relative_to(root).as_posix(), f.read_bytes()) for f in files]
    return out


def _one_pass(docs: list[tuple[str, bytes]], parser: str) -> tuple[float, int]:
    from oasis.runtime import html

    html._canonical.cache_clear()
    links = 0
    start = time.perf_counter()
    for url, content in docs:
        links += len(html.parse_html(content, url, parser=parser).links)  # type: ignore[arg-type]
    return time.perf_counter() - start, links


def measure(corpora: dict[str, list[tuple[str, bytes]]], repeats: int) -> list[dict[str, Any]]:
    from oasis.runtime.html import PARSERS

    baseline = "html.parser"
    order = [baseline, *(p for p in PARSERS if p != baseline)]
    rows: list[dict[str, Any]] = []
    steps = len(corpora) * repeats * len(order)
    with tqdm(total=steps, desc="parse bench", unit="pass", disable=None) as bar:
        for name, docs in corpora.items():
            megabytes = sum(len(c) for _, c in docs) / 1e6
            seconds: dict[str, list[float]] = {p: [] for p in order}
            links: dict[str, int] = {}
            for _ in range(repeats):
                for parser in order:
                    s, n = _one_pass(docs, parser)
                    seconds[parser].append(s)
                    links[parser] = n
                    bar.update()
            for parser in order:
                ratios = [b / s for b, s in zip(seconds[baseline], seconds[parser], strict=True)]
                median_s = statistics.median(seconds[parser])
                rows.append(
                    {
                        "corpus": name,
                        "parser": parser,
                        "pages": len(docs),
                        "megabytes": round(megabytes, 2),
                        "links": links[parser],
                        "pages_per_s": round(len(docs) / median_s, 1),
                        "mb_per_s": round(megabytes / median_s, 2),
                        "ms_per_page": round(1000 * median_s / len(docs), 2),
                        "speedup_vs_html_parser": round(statistics.median(ratios), 2),
                        "rounds_seconds": [round(s, 3) for s in seconds[parser]],
                    }
                )
    return rows


def run(args: argparse.Namespace) -> int:
    if args.pages < 1 or args.repeats < 1:
        print("--pages and --repeats must be >= 1")
        return 2
    corpora = load_pages(args.pages)
    if not corpora:
        print(
            "skipped: neither /usr/share/doc/postgresql-doc-15/html nor /usr/share/doc/python3.11-doc/html "
            "is installed (apt-get install postgresql-doc-15 python3.11-doc)"
        )
        return 0
    rows = measure(corpora, args.repeats)
    print(
        f"{'corpus':<18} {'parser':<12} {'pages':>5} {'MB':>6} {'pages/s':>8} {'MB/s':>6} "
        f"{'ms/page':>8} {'vs html.parser':>14}"
    )
    for r in rows:
        print(
            f"{r['corpus']:<18} {r['parser']:<12} {r['pages']:>5} {r['megabytes']:>6} {r['pages_per_s']:>8} "
            f"{r['mb_per_s']:>6} {r['ms_per_page']:>8} {r['speedup_vs_html_parser']:>13}x"
        )
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        result = {
            "benchmark": "parse",
            "pages_per_corpus": args.pages,
            "repeats": args.repeats,
            "baseline": "html.parser",
            "rows": rows,
        }
        write_json_atomic(args.json_out, result, indent=2)
        print(f"wrote {args.json_out}")
    return 0
