"""A three-topic Oasis cluster over real documentation corpora, shared by the directory/broker benchmarks.

Pages are sampled from three Debian documentation packages (PostgreSQL, Python, Django), parsed with
``oasis.runtime.html.parse_html``, and indexed into three topic engines (one per corpus) and one central
Whoosh index over all of them (the same ``TopicIndex`` code, so the only difference is distribution). Engines
run as ``python -m oasis.engine`` processes; the bench registers them with an in-process directory using the
engines' own ``Summary`` RPC (so the summary size can be varied)."""

from __future__ import annotations

import argparse
import logging
import random
import re
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from oasis.directory.__main__ import add_directory
from oasis.directory.registry import Registry
from oasis.engine.index import TopicIndex, Upsert, make_upsert
from oasis.engine.topic import Topic
from oasis.runtime.html import parse_html
from oasis.runtime.service import RunningServer, ServerConfig, build_server, open_channel
from oasis.runtime.spawn import ServiceProcess, spawn_service
from oasis.v1 import directory_pb2, directory_pb2_grpc, engine_pb2, engine_pb2_grpc

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class TopicCorpus:
    name: str
    root: Path
    base_url: str
    keywords: tuple[str, ...]
    title_prefixes: tuple[str, ...] = ()


TOPICS = (
    TopicCorpus(
        name="postgresql",
        root=Path("/usr/share/doc/postgresql-doc-15/html"),
        base_url="http://postgresql.docs.local/",
        keywords=("postgresql", "sql", "database", "table", "query", "index"),
    ),
    TopicCorpus(
        name="python",
        root=Path("/usr/share/doc/python3.11-doc/html"),
        base_url="http://python.docs.local/",
        keywords=("python", "module", "function", "class", "library", "interpreter"),
    ),
    TopicCorpus(
        name="django",
        root=Path("/usr/share/doc/python-django-doc/html"),
        base_url="http://django.docs.local/",
        keywords=("django", "model", "view", "template", "form", "admin"),
    ),
)
SKIP_PARTS = {
    "_static",
    "_modules",
    "_sources",
    "_images",
    "genindex.html",
    "search.html",
    "py-modindex.html",
}
CENTRAL_TOPIC = Topic(name="all", keywords=("search",))
MAX_TEXT_CHARS = 50_000
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")


class CorpusMissing(RuntimeError):
    pass


@dataclass(frozen=True, kw_only=True)
class Doc:
    topic: str
    url: str
    title: str
    text: str


def sample_docs(topic: TopicCorpus, n: int, rng: random.Random) -> list[Doc]:
    """``n`` pages of the topic's corpus, sampled reproducibly, parsed to title and visible text."""
    if not topic.root.is_dir():
        raise CorpusMissing(f"{topic.root} not found (apt-get install the Debian documentation package)")
    files = sorted(
        p for p in topic.root.rglob("*.html") if not SKIP_PARTS & set(p.relative_to(topic.root).parts)
    )
    rng.shuffle(files)
    docs: list[Doc] = []
    for path in files:
        if len(docs) >= n:
            break
        url = topic.base_url + path.relative_to(topic.root).as_posix()
        page = parse_html(path.read_bytes(), url)
        if len(page.text) < 300 or not page.title:
            continue
        docs.append(Doc(topic=topic.name, url=url, title=page.title, text=page.text[:MAX_TEXT_CHARS]))
    return docs


def title_query(title: str, rng: random.Random) -> str:
    """2-3 content words of a page title (section numbers, punctuation and product names dropped)."""
    words = [
        w
        for w in _WORD.findall(title)
        if w.lower() not in {"postgresql", "documentation", "python", "django"}
    ]
    words = [
        w for w in words if w.lower() not in {"the", "and", "for", "with", "from", "into", "using", "about"}
    ]
    if len(words) > 3:
        start = rng.randrange(len(words) - 2)
        words = words[start : start + 3]
    return " ".join(words).lower()


def make_queries(
    docs_by_topic: dict[str, list[Doc]], per_topic: int, rng: random.Random
) -> list[tuple[str, str]]:
    """(topic, query) pairs: queries drawn from page titles of each corpus, distinct, >= 1 word."""
    queries: list[tuple[str, str]] = []
    seen: set[str] = set()
    for topic, docs in docs_by_topic.items():
        pool = list(docs)
        rng.shuffle(pool)
        count = 0
        for doc in pool:
            q = title_query(doc.title, rng)
            if len(q) < 4 or q in seen:
                continue
            seen.add(q)
            queries.append((topic, q))
            count += 1
            if count == per_topic:
                break
    return queries


def build_index(directory: Path, topic: Topic, docs: list[Doc], desc: str) -> None:
    index = TopicIndex.open(directory, topic)
    try:
        ops: list[Upsert] = []
        for seq, d in enumerate(docs):
            op = make_upsert(
                seq=seq,
                url=d.url,
                title=d.title,
                text=d.text,
                fetch_time=0.0,
                relevance=1.0,
                limits=index.limits,
            )
            if isinstance(op, Upsert):
                ops.append(op)
        for start in tqdm(range(0, len(ops), 200), desc=desc, unit="batch", leave=False):
            index.apply(ops[start : start + 200])
    finally:
        index.close()


def start_engine(
    name: str, topic: TopicCorpus | None, index_dir: Path, workdir: Path, extra: Sequence[str] = ()
) -> ServiceProcess:
    keywords = ",".join(topic.keywords) if topic else "search"
    return spawn_service(
        [
            sys.executable, "-m", "oasis.engine", "--name", name, "--topic", topic.name if topic else "all",
            "--keywords", keywords, "--index-dir", str(index_dir), "--log-level", "WARNING", *extra,
        ],
        workdir / f"{name}.address.json",
        timeout=60,
        name=name,
    )  # fmt: skip


@dataclass
class Cluster:
    directory: RunningServer
    engines: dict[str, ServiceProcess]  # topic engines
    central_engine: ServiceProcess
    central_dir: Path
    queries: list[tuple[str, str]]
    documents: dict[str, int]

    def register(self, summary_terms: int) -> None:
        """(Re-)register the topic engines with ``summary_terms``-term summaries from their Summary RPC."""
        with open_channel(self.directory.address) as ch:
            directory = directory_pb2_grpc.DirectoryStub(ch)
            for e in self.engines.values():
                with open_channel(e.address) as ech:
                    summary = engine_pb2_grpc.EngineStub(ech).Summary(
                        engine_pb2.SummaryRequest(max_terms=summary_terms), timeout=30
                    )
                info = directory_pb2.EngineInfo(name=e.name, address=e.address, summary=summary)
                directory.Register(directory_pb2.RegisterRequest(engine=info), timeout=10)


@contextmanager
def three_topic_cluster(
    workdir: Path, *, docs_per_topic: int, queries_per_topic: int, seed: int
) -> Iterator[Cluster]:
    rng = random.Random(seed)
    docs_by_topic: dict[str, list[Doc]] = {}
    for t in tqdm(TOPICS, desc="parsing corpora", unit="topic"):
        docs_by_topic[t.name] = sample_docs(t, docs_per_topic, rng)
    queries = make_queries(docs_by_topic, queries_per_topic, rng)
    all_docs = [d for docs in docs_by_topic.values() for d in docs]
    for t in TOPICS:
        build_index(workdir / t.name, Topic(name=t.name, keywords=t.keywords), docs_by_topic[t.name], t.name)
    central_dir = workdir / "central"
    build_index(central_dir, CENTRAL_TOPIC, all_docs, "central")
    registry = Registry(lease_seconds=24 * 3600.0, clock=time.monotonic)
    directory = build_server(ServerConfig(max_workers=8), lambda s: add_directory(s, registry))
    engines: dict[str, ServiceProcess] = {}
    central: ServiceProcess | None = None
    try:
        for t in TOPICS:
            engines[t.name] = start_engine(t.name, t, workdir / t.name, workdir)
        central = start_engine("central", None, central_dir, workdir)
        yield Cluster(
            directory=directory,
            engines=engines,
            central_engine=central,
            central_dir=central_dir,
            queries=queries,
            documents={k: len(v) for k, v in docs_by_topic.items()},
        )
    finally:
        for e in [*engines.values(), *([central] if central else [])]:
            e.stop(grace=20)
        directory.stop(0)


def enter_cluster(stack: ExitStack, workdir: Path, args: argparse.Namespace) -> Cluster | None:
    """The cluster of the bench's ``--docs-per-topic``, ``--queries-per-topic`` and ``--seed``, stopped when
    ``stack`` closes; None (after printing why) when a documentation corpus is not installed."""
    try:
        return stack.enter_context(
            three_topic_cluster(
                workdir,
                docs_per_topic=args.docs_per_topic,
                queries_per_topic=args.queries_per_topic,
                seed=args.seed,
            )
        )
    except CorpusMissing as exc:
        print(f"skipped: {exc}")
        return None


def open_central_copy(central_dir: Path, copy: Path) -> TopicIndex:
    """A copy of the central index at ``copy``, opened here (its engine process holds the original)."""
    shutil.copytree(central_dir, copy, ignore=shutil.ignore_patterns("*.lock", "*LOCK*"))
    return TopicIndex.open(copy, CENTRAL_TOPIC)
