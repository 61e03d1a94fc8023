"""A generated topical web: the built-in corpus for demos, tests and large-scale replay.

``synthetic_web("synthetic:pages=2000,hosts=4,topics=3,seed=1")`` builds a web graph with

* ``hosts`` hosts, each with a home page (the seeds) linking to one section page per topic on that host
  and to the other hosts' home pages (capped);
* ``topics`` topics, each with its own vocabulary (the first three are ``databases``, ``python`` and
  ``web``, matching the default cluster's engines), so a TF-IDF topic model finds the relevant pages;
* pages assigned to a topic and a host (hosts lean towards one topic), arranged under their section page
  as a random recursive tree whose ``depth_bias`` < 1 makes it deeper; a page's purity (the share of its
  words drawn from its topic) grows with depth, so the most relevant pages are deep;
* breadcrumb links up the tree, and ``out_degree`` extra links per page (Poisson), each staying in the
  page's topic with probability ``homophily`` (else to another topic), to a page drawn with a bias for
  shallow pages (hubs).

The ground-truth relevance of page i to topic k is the expected share of its words drawn from topic k's
vocabulary: ``q_i [topic_i = k] + 0.3 (1 - q_i) [second_topic_i = k]`` (home pages: ``0.5 / topics``).

Scale: the graph is numpy arrays (CSR adjacency, per-node topic/host/depth/purity); a page's URL, title,
anchors, text and HTML are generated on demand from the seed and the page id, deterministically. Nothing
per page is kept as a Python object, so 10^6 pages take about ``30 MB + 12 bytes x links`` and generate
in seconds; :meth:`SyntheticWeb.graph` hands the arrays to the replay harness without copying.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from oasis.web.model import Corpus, Link, Page, WebGraph, render_html

logger = logging.getLogger(__name__)

SPEC_PREFIX = "synthetic:"
DOMAIN = "synthetic.test"
SECOND_TOPIC_SHARE = 0.3  # share of a page's non-topic words drawn from its second topic
GENERIC_ANCHORS = ("read more", "next", "see also", "details", "link", "here", "more")

# fmt: off
TOPIC_VOCABULARIES: dict[str, tuple[str, ...]] = {
    "databases": (
        "database", "sql", "query", "index", "transaction", "table", "postgresql", "row", "column",
        "schema", "join", "select", "insert", "update", "delete", "primary", "key", "foreign",
        "constraint", "vacuum", "btree", "planner", "optimizer", "replication", "wal", "commit",
        "rollback", "isolation", "lock", "tuple", "relation", "view", "trigger", "cursor", "aggregate",
        "partition", "backup", "restore", "sequence", "catalog",
    ),
    "python": (
        "python", "module", "function", "class", "interpreter", "library", "import", "package",
        "decorator", "generator", "iterator", "exception", "list", "dict", "tuple", "string", "bytes",
        "lambda", "async", "await", "coroutine", "pip", "virtualenv", "typing", "dataclass", "method",
        "attribute", "namespace", "builtin", "pickle", "json", "asyncio", "threading", "subprocess",
        "pathlib", "unittest", "pytest", "bytecode", "gil", "cpython",
    ),
    "web": (
        "django", "http", "template", "view", "url", "form", "request", "response", "html", "css",
        "browser", "server", "cookie", "session", "middleware", "routing", "endpoint", "rest", "api",
        "json", "header", "status", "redirect", "cache", "static", "javascript", "websocket", "csrf",
        "authentication", "login", "admin", "orm", "queryset", "serializer", "proxy", "nginx", "wsgi",
        "asgi", "frontend", "backend",
    ),
    "astronomy": (
        "star", "galaxy", "planet", "telescope", "orbit", "nebula", "comet", "asteroid", "supernova",
        "cosmos", "redshift", "quasar", "pulsar", "eclipse", "moon", "solar", "lunar", "spectrum",
        "parallax", "gravity", "exoplanet", "constellation", "meteor", "observatory", "light", "universe",
        "dwarf", "giant", "cluster", "blackhole",
    ),
    "cooking": (
        "recipe", "oven", "bake", "flour", "sugar", "butter", "salt", "pepper", "garlic", "onion",
        "simmer", "boil", "roast", "grill", "sauce", "dough", "bread", "cake", "pasta", "rice", "spice",
        "herb", "stew", "soup", "knife", "pan", "skillet", "dessert", "chef", "kitchen",
    ),
    "music": (
        "guitar", "piano", "melody", "harmony", "rhythm", "chord", "scale", "tempo", "orchestra",
        "symphony", "concerto", "violin", "drum", "bass", "song", "album", "lyrics", "composer", "opera",
        "jazz", "blues", "sonata", "note", "octave", "choir", "band", "concert", "studio", "vinyl", "tune",
    ),
}

BACKGROUND = (
    "the", "of", "and", "to", "in", "is", "for", "on", "with", "as", "this", "that", "by", "are", "from",
    "be", "at", "or", "an", "it", "page", "information", "about", "more", "new", "also", "can", "see",
    "use", "used", "example", "section", "following", "other", "first", "which", "when", "each", "all",
    "may", "some", "time", "number", "part", "over", "such", "only", "these", "into", "most", "two", "way",
    "work", "general", "case", "set", "value", "default", "note", "chapter", "overview", "introduction",
    "details", "guide", "system", "data", "level", "point", "order", "simple", "common", "small", "large",
    "different", "based", "support",
)
# fmt: on

_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "so", "du", "fa", "gi", "ho", "ju", "be")


def topic_names(count: int) -> list[str]:
    builtin = list(TOPIC_VOCABULARIES)
    return builtin[:count] + [f"topic{k}" for k in range(len(builtin), count)]


def topic_vocabulary(name: str, index: int) -> tuple[str, ...]:
    """Built-in vocabulary, or 30 made-up words unique to the topic for topics past the built-in ones."""
    if name in TOPIC_VOCABULARIES:
        return TOPIC_VOCABULARIES[name]
    words = []
    for k in range(30):  # two syllables spell k in base 16 (unique), a third varies with the topic
        words.append(f"{_SYLLABLES[k // 16]}{_SYLLABLES[k % 16]}{_SYLLABLES[(index * 5 + k) % 16]}{index}")
    return tuple(words)


@dataclass(frozen=True, kw_only=True)
class SyntheticSpec:
    pages: int = 2000
    hosts: int = 4
    topics: int = 3
    seed: int = 1
    target: int = 0  # the topic whose relevance Page.relevance carries
    out_degree: float = 6.0  # mean extra (non-tree) links per page
    homophily: float = 0.85  # probability an extra link stays in the page's topic
    words: int = 120  # mean words of text per page
    depth_bias: float = 0.7  # parent rank ~ k * U**depth_bias: < 1 gives deeper trees
    home_links: int = 20  # cap on home -> other homes links

    def __post_init__(self) -> None:
        if self.hosts < 1 or self.topics < 1:
            raise ValueError("synthetic web needs hosts >= 1 and topics >= 1")
        if self.pages < self.hosts * (self.topics + 1):
            raise ValueError(
                f"pages={self.pages} is too few: need at least hosts * (topics + 1) = "
                f"{self.hosts * (self.topics + 1)} (home and section pages)"
            )
        if self.pages > 50_000_000:
            raise ValueError("pages must be <= 50,000,000")
        if not 0 <= self.target < self.topics:
            raise ValueError(f"target topic must be in [0, {self.topics}), got {self.target}")
        if self.out_degree < 0 or not 0.0 <= self.homophily <= 1.0:
            raise ValueError("out_degree must be >= 0 and homophily in [0, 1]")
        if self.words < 1 or not 0.0 < self.depth_bias <= 4.0 or self.home_links < 0:
            raise ValueError("words must be >= 1, depth_bias in (0, 4], home_links >= 0")

    def spec_string(self) -> str:
        defaults = SyntheticSpec()
        parts = [
            f"{f.name}={getattr(self, f.name)}"
            for f in fields(self)
            if f.name in ("pages", "hosts", "topics", "seed")
            or getattr(self, f.name) != getattr(defaults, f.name)
        ]
        return SPEC_PREFIX + ",".join(parts)


def parse_synthetic_spec(spec: str) -> SyntheticSpec:
    """``"synthetic:pages=2000,hosts=4,topics=3,seed=1"`` -> :class:`SyntheticSpec` (omitted keys default).

    ``target`` may be a topic index or a built-in topic name.
    """
    if not spec.startswith(SPEC_PREFIX):
        raise ValueError(f"a synthetic spec starts with {SPEC_PREFIX!r}: {spec!r}")
    known = {f.name: f.type for f in fields(SyntheticSpec)}
    values: dict[str, int | float] = {}
    target_name: str | None = None
    body = spec[len(SPEC_PREFIX) :].strip()
    for item in filter(None, (p.strip() for p in body.split(","))):
        key, sep, raw = item.partition("=")
        key, raw = key.strip(), raw.strip()
        if not sep or key not in known:
            raise ValueError(f"bad synthetic spec item {item!r}; keys are {', '.join(known)}")
        if key == "target" and not re.fullmatch(r"-?\d+", raw):
            target_name = raw
            continue
        try:
            values[key] = float(raw) if known[key] == "float" else int(raw.replace("_", ""))
        except ValueError as exc:
            raise ValueError(f"bad value for {key!r} in synthetic spec: {raw!r}") from exc
    if target_name is not None:
        names = topic_names(int(values.get("topics", SyntheticSpec.topics)))
        if target_name not in names:
            raise ValueError(f"unknown target topic {target_name!r}; topics are {names}")
        values["target"] = names.index(target_name)
    return SyntheticSpec(**values)  # type: ignore[arg-type]


def _mix(*values: int) -> int:
    """A cheap deterministic 32-bit hash of small integers (for titles and anchors)."""
    h = 2166136261
    for v in values:
        h = ((h ^ (v & 0xFFFFFFFF)) * 16777619) & 0xFFFFFFFF
        h ^= h >> 13
    return h


class SyntheticWeb:
    """The generated graph as arrays, with pages rendered on demand. See the module docstring."""

    def __init__(self, spec: SyntheticSpec) -> None:
        self.spec = spec
        self.topic_names = topic_names(spec.topics)
        self.vocabularies = [topic_vocabulary(n, k) for k, n in enumerate(self.topic_names)]
        self._url_re = re.compile(
            rf"^http://host(\d+)\.{re.escape(DOMAIN)}/(?:([a-z0-9]+)/(?:p(\d+)\.html)?)?$"
        )
        _generate(self)

    # --- layout: ids 0..H-1 are home pages, then H*T section pages (host h, topic t), then the rest ---
    n: int
    host: npt.NDArray[np.int32]
    topic: npt.NDArray[np.int16]  # -1 for home pages
    second: npt.NDArray[np.int16]
    purity: npt.NDArray[np.float32]
    depth: npt.NDArray[np.int32]
    indptr: npt.NDArray[np.int64]
    indices: npt.NDArray[np.int32]

    @property
    def num_hosts(self) -> int:
        return self.spec.hosts

    def is_home(self, i: int) -> bool:
        return i < self.spec.hosts

    def section_id(self, host: int, topic: int) -> int:
        return self.spec.hosts + host * self.spec.topics + topic

    def origin(self, host: int) -> str:
        return f"http://host{host}.{DOMAIN}"

    def url(self, i: int) -> str:
        h = int(self.host[i])
        if i < self.spec.hosts:
            return f"{self.origin(h)}/"
        name = self.topic_names[int(self.topic[i])]
        if i < self.spec.hosts * (self.spec.topics + 1):
            return f"{self.origin(h)}/{name}/"
        return f"{self.origin(h)}/{name}/p{i}.html"

    def index(self, url: str) -> int | None:
        """The page id of a URL of this web, or None."""
        m = self._url_re.match(url)
        if m is None:
            return None
        h = int(m.group(1))
        if h >= self.spec.hosts:
            return None
        if m.group(2) is None:
            i = h
        elif m.group(3) is None:
            if m.group(2) not in self.topic_names:
                return None
            i = self.section_id(h, self.topic_names.index(m.group(2)))
        else:
            i = int(m.group(3))
            if not self.spec.hosts * (self.spec.topics + 1) <= i < self.n:
                return None
        return i if self.url(i) == url else None

    def out(self, i: int) -> npt.NDArray[np.int32]:
        return self.indices[self.indptr[i] : self.indptr[i + 1]]

    def relevance_to(self, k: int) -> npt.NDArray[np.float64]:
        """Ground-truth relevance of every page to topic k (see the module docstring)."""
        q = self.purity.astype(np.float64)
        rel = np.where(self.topic == k, q, 0.0) + np.where(
            self.second == k, SECOND_TOPIC_SHARE * (1 - q), 0.0
        )
        rel[: self.spec.hosts] = 0.5 / self.spec.topics
        return rel

    def title(self, i: int) -> str:
        if i < self.spec.hosts:
            return f"Host {i} home"
        t = int(self.topic[i])
        name = self.topic_names[t]
        if i < self.spec.hosts * (self.spec.topics + 1):
            return f"{name.capitalize()} section on host {int(self.host[i])}"
        vocab = self.vocabularies[t]
        h = _mix(self.spec.seed, i)
        first, second = vocab[h % len(vocab)], vocab[(h >> 8) % len(vocab)]
        filler = BACKGROUND[(h >> 16) % 40]
        return f"{first.capitalize()} {second} {filler} {i}"

    def anchor(self, i: int, j: int) -> str:
        h = _mix(self.spec.seed, i, j, 7)
        if h % 10 < 2:
            return GENERIC_ANCHORS[(h >> 4) % len(GENERIC_ANCHORS)]
        return self.title(j)

    def links(self, i: int) -> tuple[Link, ...]:
        return tuple(Link(self.url(int(j)), self.anchor(i, int(j))) for j in self.out(i))

    def text(self, i: int) -> str:
        rng = np.random.default_rng([self.spec.seed, 1, i])
        length = max(5, int(rng.poisson(self.spec.words)))
        t, t2, q = int(self.topic[i]), int(self.second[i]), float(self.purity[i])
        sources = [BACKGROUND, *self.vocabularies]
        if t < 0:  # home page: half background, the rest spread over all topics
            probs = np.full(self.spec.topics + 1, 0.5 / self.spec.topics)
            probs[0] = 0.5
        else:
            probs = np.zeros(self.spec.topics + 1)
            probs[1 + t] += q
            probs[1 + t2] += SECOND_TOPIC_SHARE * (1 - q)
            probs[0] += 1.0 - probs.sum()
        which = rng.choice(len(sources), size=length, p=probs / probs.sum())
        pos = rng.random(length) ** 2  # Zipf-like: words early in a vocabulary are frequent
        return " ".join(
            sources[w][min(int(p * len(sources[w])), len(sources[w]) - 1)]
            for w, p in zip(which, pos, strict=True)
        )

    def relevance(self, i: int) -> float:
        q = float(self.purity[i])
        if i < self.spec.hosts:
            return 0.5 / self.spec.topics
        k = self.spec.target
        return (q if int(self.topic[i]) == k else 0.0) + (
            SECOND_TOPIC_SHARE * (1 - q) if int(self.second[i]) == k else 0.0
        )

    def page(self, i: int) -> Page:
        return Page(
            url=self.url(i),
            title=self.title(i),
            text=self.text(i),
            links=self.links(i),
            relevance=self.relevance(i),
        )

    def corpus(self) -> SyntheticCorpus:
        return SyntheticCorpus(self)


def _generate(web: SyntheticWeb) -> None:
    spec = web.spec
    rng = np.random.default_rng(spec.seed)
    H, T, N = spec.hosts, spec.topics, spec.pages
    first = H * (T + 1)  # first regular page id
    R = N - first

    host = np.empty(N, dtype=np.int32)
    topic = np.empty(N, dtype=np.int16)
    host[:H] = np.arange(H)
    topic[:H] = -1
    host[H:first] = np.repeat(np.arange(H), T)
    topic[H:first] = np.tile(np.arange(T), H)
    # regular pages: a topic, then a host that leans to that topic (host h's main topic is h % T)
    reg_topic = rng.integers(0, T, size=R)
    reg_host = rng.integers(0, H, size=R)
    if H >= T:  # host h's main topic is h % T, so the hosts leaning to topic t are t, t + T, t + 2T, ...
        counts = (H - np.arange(T) + T - 1) // T
        lean = rng.random(R) < 0.6
        pick = (rng.random(int(lean.sum())) * counts[reg_topic[lean]]).astype(np.int64)
        reg_host[lean] = reg_topic[lean] + T * pick
    host[first:] = reg_host
    topic[first:] = reg_topic

    # random recursive tree under each (host, topic) section page
    group = reg_host.astype(np.int64) * T + reg_topic
    order = np.argsort(group, kind="stable")  # regular offsets sorted by group, ids ascending within a group
    sorted_group = group[order]
    starts = np.searchsorted(sorted_group, np.arange(H * T))
    rank = np.arange(R) - starts[sorted_group]
    parent_rank = np.floor((rank + 1) * rng.random(R) ** spec.depth_bias).astype(np.int64) - 1
    parent_rank = np.minimum(parent_rank, rank - 1)
    parent_sorted = np.where(
        parent_rank < 0, H + sorted_group, first + order[np.clip(starts[sorted_group] + parent_rank, 0, None)]
    )
    parent = np.empty(N, dtype=np.int64)
    parent[:H] = -1
    parent[H:first] = host[H:first]
    parent[first + order] = parent_sorted
    # depth = depth(parent) + 1, by Jacobi sweeps: exact after (max depth) sweeps, each one vectorised
    depth = np.zeros(N, dtype=np.int32)
    depth[H:first] = 1
    reg_parent = parent[first:]
    while True:
        new = depth[reg_parent] + 1
        if np.array_equal(new, depth[first:]):
            break
        depth[first:] = new
    second = np.empty(N, dtype=np.int16)
    if T > 1:
        shift = rng.integers(1, T, size=N)
        second[:] = (np.maximum(topic, 0) + shift) % T
    else:
        second[:] = 0
    purity = np.zeros(N, dtype=np.float32)
    purity[H:first] = 0.6
    d = depth[first:].astype(np.float64)
    purity[first:] = np.clip(0.35 + 0.6 * (1 - np.exp(-(d - 1) / 3)) + rng.normal(0, 0.08, R), 0.2, 0.98)

    src: list[npt.NDArray[np.integer[Any]]] = []
    dst: list[npt.NDArray[np.integer[Any]]] = []
    # home -> its sections, home -> other homes (capped)
    src.append(np.repeat(np.arange(H), T))
    dst.append(np.arange(H, first))
    for h in range(H):
        others = np.array([o for o in range(H) if o != h], dtype=np.int64)
        if len(others) > spec.home_links:
            others = rng.choice(others, size=spec.home_links, replace=False)
        src.append(np.full(len(others), h, dtype=np.int64))
        dst.append(others)
    # section -> same topic's sections on other hosts (capped), section -> home
    for h in range(H):
        for t in range(T):
            s = web.section_id(h, t)
            peers = np.array(
                [web.section_id(o, t) for o in range(H) if o != h][: spec.home_links], dtype=np.int64
            )
            src.append(np.full(len(peers) + 1, s, dtype=np.int64))
            dst.append(np.append(peers, h))
    reg = np.arange(first, N, dtype=np.int64)
    # tree links down, breadcrumbs up
    src.append(parent[first:])
    dst.append(reg)
    for prob, target in (
        (0.3, parent[first:]),
        (0.2, H + host[first:] * T + topic[first:]),
        (0.2, host[first:]),
    ):
        keep = rng.random(R) < prob
        src.append(reg[keep])
        dst.append(np.asarray(target, dtype=np.int64)[keep])
    # extra links: homophily, preferring shallow pages (hubs) of the chosen topic (int32/float32: memory)
    m = rng.poisson(spec.out_degree, size=R)
    e_src = np.repeat(reg.astype(np.int32), m)
    e_topic = np.repeat(reg_topic.astype(np.int32), m)
    del m
    if T > 1:
        cross = rng.random(len(e_src), dtype=np.float32) >= spec.homophily
        e_topic[cross] = (e_topic[cross] + rng.integers(1, T, size=int(cross.sum()), dtype=np.int32)) % T
        del cross
    pool = (np.lexsort((np.arange(R), depth[first:], reg_topic)) + first).astype(np.int32)  # topic, depth
    pool_counts = np.bincount(reg_topic, minlength=T)
    pool_starts = np.concatenate(([0], np.cumsum(pool_counts)[:-1]))
    nonempty = pool_counts[e_topic] > 0
    if not nonempty.all():
        e_src, e_topic = e_src[nonempty], e_topic[nonempty]
    del nonempty
    u = rng.random(len(e_src), dtype=np.float32)
    u *= u
    u *= pool_counts[e_topic]
    pick = np.minimum(u.astype(np.int64), pool_counts[e_topic] - 1)
    del u
    pick += pool_starts[e_topic]
    del e_topic
    src.append(e_src)
    dst.append(pool[pick])
    del pick

    # dedupe (source, target) pairs through one sorted int64 key array, built in place to bound memory
    keys = np.concatenate([a.astype(np.int32) for a in src]).astype(np.int64)
    del src
    keys *= N
    keys += np.concatenate([a.astype(np.int32) for a in dst])
    del dst
    keys.sort()
    keep = np.empty(len(keys), dtype=bool)
    keep[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=keep[1:])
    keep &= keys // N != keys % N  # no self-loops
    keys = keys[keep]
    del keep
    indices = (keys % N).astype(np.int32)
    indptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys // N, minlength=N), out=indptr[1:])
    del keys

    web.n = N
    web.host, web.topic, web.second = host, topic, second
    web.purity, web.depth = purity, depth
    web.indptr, web.indices = indptr, indices
    logger.info("synthetic web: %d pages, %d links, max depth %d", N, len(indices), int(depth.max()))


class _SyntheticUrls(Sequence[str]):
    def __init__(self, web: SyntheticWeb) -> None:
        self._web = web

    def __len__(self) -> int:
        return self._web.n

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            return [self._web.url(k) for k in range(*i.indices(self._web.n))]
        if not -self._web.n <= i < self._web.n:
            raise IndexError(i)
        return self._web.url(i % self._web.n)


class SyntheticPages(Mapping[str, Page]):
    """URL -> Page, generated on access (nothing cached)."""

    def __init__(self, web: SyntheticWeb) -> None:
        self._web = web

    def __getitem__(self, url: str) -> Page:
        i = self._web.index(url)
        if i is None:
            raise KeyError(url)
        return self._web.page(i)

    def __contains__(self, url: object) -> bool:
        return isinstance(url, str) and self._web.index(url) is not None

    def __iter__(self) -> Iterator[str]:
        return (self._web.url(i) for i in range(self._web.n))

    def __len__(self) -> int:
        return self._web.n


class SyntheticCorpus(Corpus):
    """A :class:`Corpus` over a :class:`SyntheticWeb`; link and relevance queries skip text generation."""

    def __init__(self, web: SyntheticWeb) -> None:
        self.web = web
        super().__init__(
            pages=SyntheticPages(web),
            seeds=[web.url(h) for h in range(web.spec.hosts)],
            name=web.spec.spec_string(),
            meta={
                "synthetic": web.spec.spec_string(),
                "topics": list(web.topic_names),
                "target": web.topic_names[web.spec.target],
                "links": len(web.indices),
            },
        )

    def out_links(self, url: str) -> tuple[Link, ...]:
        i = self.web.index(url)
        return self.web.links(i) if i is not None else ()

    def reachable(self, seeds: list[str] | None = None) -> set[str]:
        ids = [self.web.index(s) for s in (seeds if seeds is not None else self.seeds)]
        start = np.array([i for i in ids if i is not None], dtype=np.int64)
        return {
            self.web.url(int(i))
            for i in np.flatnonzero(reachable_mask(self.web.indptr, self.web.indices, start))
        }

    def relevances(self) -> dict[str, float]:
        rel = self.web.relevance_to(self.web.spec.target)
        return {self.web.url(i): float(r) for i, r in enumerate(rel.tolist())}

    def html_of(self, url: str) -> str | None:
        i = self.web.index(url)
        return render_html(self.web.page(i)) if i is not None else None

    def graph(self) -> WebGraph:
        w = self.web
        return WebGraph(
            _SyntheticUrls(w), w.indptr, w.indices, w.relevance_to(w.spec.target), np.arange(w.spec.hosts)
        )


def reachable_mask(
    indptr: npt.NDArray[np.int64], indices: npt.NDArray[np.int32], start: npt.NDArray[np.int64]
) -> npt.NDArray[np.bool_]:
    """Breadth-first reachability over a CSR graph, a frontier at a time (vectorised)."""
    n = len(indptr) - 1
    seen = np.zeros(n, dtype=bool)
    frontier = np.unique(start)
    seen[frontier] = True
    while len(frontier):
        lo, hi = indptr[frontier], indptr[frontier + 1]
        lengths = hi - lo
        total = int(lengths.sum())
        if total == 0:
            break
        offsets = np.repeat(lo - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        nxt = np.unique(indices[np.arange(total) + offsets])
        frontier = nxt[~seen[nxt]]
        seen[frontier] = True
    return seen


def link_distances(
    indptr: npt.NDArray[np.int64], indices: npt.NDArray[np.int32], start: npt.NDArray[np.int64]
) -> npt.NDArray[np.int32]:
    """Fewest links from any start node to each node (-1: unreachable), breadth-first a frontier at a time."""
    n = len(indptr) - 1
    dist = np.full(n, -1, dtype=np.int32)
    frontier = np.unique(start)
    dist[frontier] = 0
    level = 0
    while len(frontier):
        level += 1
        lo, hi = indptr[frontier], indptr[frontier + 1]
        lengths = hi - lo
        total = int(lengths.sum())
        if total == 0:
            break
        offsets = np.repeat(lo - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        nxt = np.unique(indices[np.arange(total) + offsets])
        frontier = nxt[dist[nxt] < 0]
        dist[frontier] = level
    return dist


def synthetic_web(spec: str | SyntheticSpec) -> SyntheticCorpus:
    """Generate the synthetic web for a spec string (``"synthetic:pages=...,seed=..."``) or spec object."""
    parsed = parse_synthetic_spec(spec) if isinstance(spec, str) else spec
    return SyntheticWeb(parsed).corpus()
