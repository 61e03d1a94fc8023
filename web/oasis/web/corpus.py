"""Corpus loaders: a folder of HTML files, several folders as several hosts, a WARC file, a graph file, the
synthetic web, and :func:`load_corpus`, which picks one from a spec string or a path.

Every loader returns a :class:`oasis.web.model.Corpus` whose pages and links carry canonical URLs (the
same :func:`oasis.runtime.urls.canonicalize` the robot and the engine use) and whose links come from the one
HTML parser, :func:`oasis.runtime.html.parse_html`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import pickle
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard
from urllib.parse import quote, urljoin

from tqdm import tqdm

from oasis.runtime.files import write_bytes_atomic
from oasis.runtime.html import decode_html, parse_html
from oasis.runtime.urls import InvalidURL, canonicalize
from oasis.web import model
from oasis.web.model import Corpus, Link, Page
from oasis.web.synthetic import SPEC_PREFIX, synthetic_web

logger = logging.getLogger(__name__)

HTML_SUFFIXES = (".html", ".htm")
WARC_SUFFIXES = (".warc", ".warc.gz")
GRAPH_SUFFIXES = (".graphml", ".edgelist", ".edges")
LOADER_MAX_BYTES = 64 * 1024 * 1024  # corpora are trusted local files: parse whole pages (up to 64 MiB)
DEFAULT_BASE_URL = "http://docs.local/"


class CorpusError(ValueError):
    """A corpus cannot be loaded: missing, unreadable or of an unknown kind."""


def _base(url: str) -> str:
    try:
        base = canonicalize(url)
    except InvalidURL as exc:
        raise CorpusError(f"base URL must be an absolute http(s) URL: {url!r}") from exc
    return base if base.endswith("/") else base + "/"


def path_rewrites(base_url: str, path_map: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """URL rewrites for absolute filesystem paths in hrefs: a page at ``base_url`` linking to
    ``/usr/share/doc/python3-doc/html/x.html`` resolves to ``{origin}/usr/share/doc/python3-doc/html/x.html``,
    which ``path_map = {"/usr/share/doc/python3-doc/html": "http://python.docs.local/"}`` maps to
    ``http://python.docs.local/x.html``. Longer prefixes come first."""
    origin = urljoin(_base(base_url), "/")
    rules = []
    for prefix, target in path_map.items():
        clean = "/".join(quote(part) for part in Path(prefix).as_posix().strip("/").split("/") if part)
        if clean:
            rules.append((origin + clean + "/", _base(target)))
    return tuple(sorted(rules, key=lambda r: -len(r[0])))


def _remap(url: str, rewrites: Sequence[tuple[str, str]]) -> str:
    for old, new in rewrites:
        if url.startswith(old):
            try:
                return canonicalize(new + url[len(old) :])
            except InvalidURL:
                return url
    return url


def _html_files(root: Path) -> list[Path]:
    """Every .html/.htm file under root (following symlinked folders, each real folder once), sorted."""
    found: list[Path] = []
    seen_dirs: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen_dirs:
            dirnames[:] = []
            continue
        seen_dirs.add(real)
        dirnames.sort()
        found.extend(Path(dirpath, f) for f in filenames if f.lower().endswith(HTML_SUFFIXES))
    return sorted(found)


def _fix_directory_links(pages: dict[str, Page]) -> dict[str, Page]:
    """A link to ``dir/`` means ``dir/index.html`` when the corpus has that page (as a web server would)."""
    fixed: dict[str, Page] = {}
    for url, page in pages.items():
        if any(link.url.endswith("/") and link.url not in pages for link in page.links):
            links: dict[str, Link] = {}
            for link in page.links:
                target = link.url
                if target.endswith("/") and target not in pages and target + "index.html" in pages:
                    target = target + "index.html"
                links.setdefault(target, Link(target, link.anchor))
            page = Page(page.url, page.title, page.text, tuple(links.values()), page.relevance, page.html)
        fixed[url] = page
    return fixed


def cache_dir() -> Path | None:
    """Where parsed HTML trees are cached: ``$OASIS_CACHE_DIR`` (empty disables), else ~/.cache/oasis."""
    configured = os.environ.get("OASIS_CACHE_DIR")
    if configured is not None:
        return Path(configured) if configured else None
    return Path.home() / ".cache" / "oasis"


def _cache_key(root: Path, files: Sequence[Path], base: str, rewrites: Sequence[tuple[str, str]]) -> str:
    """Changes when any file, the base URL, the rewrites or the parsing code change."""
    digest = hashlib.sha256()
    for module in (Path(__file__), Path(parse_html.__code__.co_filename), Path(model.__file__)):
        digest.update(module.read_bytes())
    digest.update(repr((str(root), base, tuple(rewrites))).encode())
    for path in files:
        st = path.stat()
        digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def _is_tree(loaded: object) -> TypeGuard[tuple[dict[str, Page], dict[str, Path]]]:
    """Is an unpickled cache what :func:`_parse_tree` returns: (URL -> Page, URL -> source path)?"""
    if not (isinstance(loaded, tuple) and len(loaded) == 2):
        return False
    pages, sources = loaded
    return (
        isinstance(pages, dict)
        and isinstance(sources, dict)
        and all(isinstance(u, str) and isinstance(p, Page) for u, p in pages.items())
        and all(isinstance(u, str) and isinstance(p, Path) for u, p in sources.items())
    )


def _tree_pages(
    root: Path, base: str, rewrites: Sequence[tuple[str, str]], desc: str
) -> tuple[dict[str, Page], dict[str, Path]]:
    files = _html_files(root)
    folder = cache_dir()
    cached = folder / "corpora" / f"{_cache_key(root, files, base, rewrites)}.pickle" if folder else None
    if cached is not None and cached.is_file():
        try:
            with cached.open("rb") as f:
                loaded = pickle.load(f)
            if not _is_tree(loaded):
                raise TypeError(f"not a parsed tree (a {type(loaded).__name__})")
            logger.info("parsed %s from cache %s", root, cached)
            return loaded
        except Exception as exc:  # a damaged cache (whatever unpickling it raises) is parsed again
            logger.warning("ignoring unreadable corpus cache %s: %s: %s", cached, type(exc).__name__, exc)
    result = _parse_tree(root, files, base, rewrites, desc)
    if cached is not None:
        try:
            write_bytes_atomic(cached, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        except OSError as exc:
            logger.warning("could not write corpus cache %s: %s", cached, exc)
    return result


def _parse_tree(
    root: Path, files: Sequence[Path], base: str, rewrites: Sequence[tuple[str, str]], desc: str
) -> tuple[dict[str, Page], dict[str, Path]]:
    pages: dict[str, Page] = {}
    sources: dict[str, Path] = {}
    for path in tqdm(files, desc=desc, unit="page", disable=None, leave=False):
        rel = path.relative_to(root).as_posix()
        try:
            url = canonicalize(base + quote(rel))
        except InvalidURL:
            logger.warning("skipping %s: no valid URL for it", path)
            continue
        try:
            data = path.read_bytes()
        except OSError as exc:
            logger.warning("skipping unreadable %s: %s", path, exc)
            continue
        parsed = parse_html(data, url, max_bytes=LOADER_MAX_BYTES)
        links: dict[str, Link] = {}
        for link in parsed.links:
            target = _remap(link.url, rewrites)
            if target not in links:
                links[target] = Link(target, link.anchor)
        pages[url] = Page(url=url, title=parsed.title, text=parsed.text, links=tuple(links.values()))
        sources[url] = path
    return pages, sources


def _seed_urls(pages: Mapping[str, Page], base: str, seeds: Iterable[str] | None, default: str) -> list[str]:
    if seeds is None:
        wanted = [base + default] if base + default in pages else sorted(pages)[:1]
    else:
        wanted = []
        for s in seeds:
            try:
                wanted.append(canonicalize(s if "://" in s else base + quote(s.lstrip("/"))))
            except InvalidURL as exc:
                raise CorpusError(f"bad seed {s!r}: {exc}") from exc
    missing = [s for s in wanted if s not in pages]
    if missing:
        raise CorpusError(f"seed pages not in the corpus: {missing[:5]}")
    return wanted


def load_html_tree(
    root: Path | str,
    base_url: str = DEFAULT_BASE_URL,
    seeds: Iterable[str] | None = None,
    *,
    path_map: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Corpus:
    """Every .html/.htm file under ``root`` becomes a page at ``base_url`` + its relative path.

    ``seeds`` are paths relative to root (or absolute URLs); default ``index.html``. ``path_map`` maps
    absolute filesystem prefixes that appear in hrefs to base URLs (``root`` itself, as given and as its
    real path, always maps to ``base_url``). Pages keep no markup: ``Corpus.sources`` points at the files.
    """
    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"HTML tree {root} is not a directory")
    base = _base(base_url)
    mapping = dict(path_map or {})
    mapping.setdefault(str(root), base)
    mapping.setdefault(os.path.realpath(root), base)
    rewrites = path_rewrites(base, mapping)
    pages, sources = _tree_pages(root, base, rewrites, desc=f"parsing {root}")
    if not pages:
        raise CorpusError(f"no .html or .htm files under {root}")
    pages = _fix_directory_links(pages)
    return Corpus(
        pages=pages,
        seeds=_seed_urls(pages, base, seeds, "index.html"),
        name=name or root.name,
        meta={"root": str(root), "base_url": base},
        sources=sources,
        rewrites=rewrites,
    )


def load_multi_host(
    trees: Sequence[tuple[Path | str, str]],
    *,
    path_map: Mapping[str, str] | None = None,
    name: str = "multi-host",
) -> Corpus:
    """Several HTML trees as one web, each tree on its own host: ``[(root, base_url), ...]``.

    Absolute filesystem links from one tree into another (by the root as given or its real path, plus any
    ``path_map`` entries) become links to the other host. Seeds: each tree's ``index.html`` (if present).
    """
    if not trees:
        raise CorpusError("load_multi_host needs at least one (root, base_url) pair")
    mapping = dict(path_map or {})
    for root, base_url in trees:
        mapping.setdefault(str(Path(root)), _base(base_url))
        mapping.setdefault(os.path.realpath(root), _base(base_url))
    pages: dict[str, Page] = {}
    sources: dict[str, Path] = {}
    rewrites: list[tuple[str, str]] = []
    seeds: list[str] = []
    for root, base_url in trees:
        tree = load_html_tree(root, base_url, path_map=mapping)
        overlap = pages.keys() & tree.pages.keys()
        if overlap:
            raise CorpusError(f"trees overlap at {sorted(overlap)[:3]}: give each tree its own base URL")
        pages.update(tree.pages)
        sources.update(tree.sources)
        rewrites.extend(r for r in tree.rewrites if r not in rewrites)
        base = _base(base_url)
        if base + "index.html" in tree.pages:
            seeds.append(base + "index.html")
    if not seeds:
        seeds = sorted(pages)[:1]
    return Corpus(
        pages=pages,
        seeds=seeds,
        name=name,
        meta={"trees": [[str(r), _base(b)] for r, b in trees]},
        sources=sources,
        rewrites=tuple(sorted(rewrites, key=lambda r: -len(r[0]))),
    )


class WarcNoise(io.TextIOBase):
    """A stderr for warcio's reads (``contextlib.redirect_stderr``): a damaged WARC makes warcio write each
    bad record's remainder to stderr, megabytes of it. This keeps the first message and counts the rest, and
    :meth:`report` logs them as one warning."""

    def __init__(self) -> None:
        self.first = ""
        self.count = 0

    def write(self, text: str) -> int:
        if text.strip():
            self.count += 1
            if self.count == 1:
                self.first = " ".join(text[:1000].split())
        return len(text)

    def report(self, path: Path) -> None:
        if self.count:
            logger.warning("%s: %d warning(s) reading it, the first: %s", path, self.count, cut(self.first))


def cut(text: str, limit: int = 200) -> str:
    """``text``, or its first ``limit`` characters and how many more there were."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more characters)"


def warc_html_response(record: Any) -> tuple[str, str | None] | None:
    """(canonical URL, charset) of a WARC record that is a page: a ``response`` with a 2xx status and an
    HTML content type (``text/html``, ``application/xhtml+xml``). None for any other record: a request, a
    redirect, an image, a URL that is none."""
    if record.rec_type != "response" or record.http_headers is None:
        return None
    status = record.http_headers.get_statuscode()
    ctype = (record.http_headers.get_header("Content-Type") or "").lower()
    if not (status or "").startswith("2") or not ("text/html" in ctype or "application/xhtml+xml" in ctype):
        return None
    try:
        url = canonicalize(record.rec_headers.get_header("WARC-Target-URI") or "")
    except InvalidURL:
        return None
    charset = None
    for part in ctype.split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key == "charset" and value:
            charset = value.strip("\"' ")
    return url, charset


def load_warc(path: Path | str, *, seeds: Iterable[str] | None = None, name: str | None = None) -> Corpus:
    """HTML pages of a WARC file: ``response`` records with a 2xx status and an HTML content type.

    The page's markup is kept (``Page.html``, decoded). Default seed: the first HTML response.
    Redirect and non-HTML records are skipped.
    """
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"WARC file {path} not found")
    pages: dict[str, Page] = {}
    order: list[str] = []
    noise = WarcNoise()
    try:
        with path.open("rb") as stream, contextlib.redirect_stderr(noise):
            for record in ArchiveIterator(stream):
                page = warc_html_response(record)
                if page is None:
                    continue
                url, charset = page
                content = record.content_stream().read()
                parsed = parse_html(content, url, encoding=charset, max_bytes=LOADER_MAX_BYTES)
                markup, _ = decode_html(content[:LOADER_MAX_BYTES], charset)
                if url not in pages:
                    order.append(url)
                pages[url] = parsed.to_page(url, html=markup)
    except ArchiveLoadFailed as exc:
        raise CorpusError(f"{path} is not a readable WARC file: {cut(str(exc))}") from exc
    finally:
        noise.report(path)
    if not pages:
        raise CorpusError(f"no HTML responses in {path}")
    return Corpus(
        pages=pages,
        seeds=_seed_urls(pages, "", seeds, "") if seeds is not None else order[:1],
        name=name or path.name,
        meta={"warc": str(path)},
    )


def _node_url(node: str, attrs: Mapping[str, object], base: str) -> str:
    for candidate in (attrs.get("url"), node):
        if isinstance(candidate, str) and "://" in candidate:
            try:
                return canonicalize(candidate)
            except InvalidURL:
                pass
    return canonicalize(base + "n/" + quote(str(node), safe=""))


def _truthy(value: object) -> bool:
    return (
        value is True
        or (isinstance(value, (int, float)) and value != 0)
        or str(value).lower() in ("true", "1")
    )


def load_graph(
    path: Path | str,
    *,
    seeds: Iterable[str] | None = None,
    base_url: str = "http://graph.local/",
    name: str | None = None,
) -> Corpus:
    """A web graph file: GraphML (``.graphml``; node attributes ``url``, ``title``, ``text``, ``relevance``,
    ``seed``; edge attribute ``anchor``) or an edge list (``.edgelist``/``.edges``: ``source target`` per
    line, ``#`` comments, extra columns ignored). Nodes without a URL get ``{base_url}n/{node}``.

    Seeds: ``seeds`` (node ids or URLs), else nodes with a true ``seed`` attribute, else nodes nobody links
    to, else the first node.
    """
    import networkx as nx

    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"graph file {path} not found")
    base = _base(base_url)
    graph: nx.DiGraph
    if path.suffix == ".graphml":
        try:
            loaded = nx.read_graphml(path)
        except Exception as exc:  # networkx raises several parser errors
            raise CorpusError(f"{path} is not readable GraphML: {exc}") from exc
        graph = loaded if loaded.is_directed() else loaded.to_directed()
    else:
        graph = nx.DiGraph()
        with path.open(encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, 1):
                fields = line.split("#", 1)[0].split()
                if not fields:
                    continue
                if len(fields) < 2:
                    raise CorpusError(f"{path}:{number}: expected 'source target', got {line.strip()!r}")
                graph.add_edge(fields[0], fields[1])
    if graph.number_of_nodes() == 0:
        raise CorpusError(f"graph {path} has no nodes")
    urls = {node: _node_url(str(node), graph.nodes[node], base) for node in graph.nodes}
    pages: dict[str, Page] = {}
    for node, attrs in graph.nodes(data=True):
        links = tuple(
            Link(urls[target], str(graph.edges[node, target].get("anchor", "")))
            for target in graph.successors(node)
        )
        relevance = attrs.get("relevance")
        pages[urls[node]] = Page(
            url=urls[node],
            title=str(attrs.get("title", node)),
            text=str(attrs.get("text", "")),
            links=links,
            relevance=float(relevance) if relevance is not None else None,
        )
    if seeds is not None:
        by_id = {str(node): url for node, url in urls.items()}
        seed_urls = [by_id.get(s) or _seed_urls(pages, base, [s], "")[0] for s in seeds]
    else:
        marked = [urls[n] for n, a in graph.nodes(data=True) if _truthy(a.get("seed", False))]
        roots = [urls[n] for n in graph.nodes if graph.in_degree(n) == 0]
        seed_urls = marked or roots or [urls[next(iter(graph.nodes))]]
    return Corpus(pages=pages, seeds=seed_urls, name=name or path.name, meta={"graph": str(path)})


def load_corpus(spec_or_path: str | Path, *, base_url: str = DEFAULT_BASE_URL) -> Corpus:
    """One entry point: ``synthetic:...`` (generated web), ``debian:NAME`` (installed documentation, see
    :mod:`oasis.web.corpora`), ``pydoc:modules=N,reserve=K`` (the stdlib rendered by pydoc, see
    :mod:`oasis.web.pydoc_corpus`), a ``.warc``/``.warc.gz`` file, a ``.graphml``/``.edgelist`` file, or a
    folder of HTML files (served at ``base_url``)."""
    spec = str(spec_or_path)
    if spec.startswith(SPEC_PREFIX):
        return synthetic_web(spec)
    if spec.startswith("debian:"):
        from oasis.web.corpora import debian_corpus

        return debian_corpus(spec.removeprefix("debian:"))
    if spec.startswith("pydoc:"):
        from oasis.web.pydoc_corpus import PydocError, pydoc_corpus

        try:
            return pydoc_corpus(spec)
        except PydocError as exc:
            raise CorpusError(str(exc)) from exc
    path = Path(spec)
    if not path.exists():
        raise CorpusError(
            f"corpus {spec!r} not found: give synthetic:KEY=VALUE,..., debian:NAME, a WARC or graph file, "
            "or a folder of HTML files"
        )
    lower = path.name.lower()
    if path.is_dir():
        return load_html_tree(path, base_url)
    if lower.endswith(WARC_SUFFIXES):
        return load_warc(path)
    if lower.endswith(GRAPH_SUFFIXES):
        return load_graph(path)
    raise CorpusError(
        f"unknown corpus file type {path.name!r}: "
        f"expected {', '.join(WARC_SUFFIXES + GRAPH_SUFFIXES)} or a folder"
    )
