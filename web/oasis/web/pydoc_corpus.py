"""The real default web: the installed Python's standard library documentation, rendered by ``pydoc``.

Every machine that runs Oasis has Python, and ``pydoc.HTMLDoc`` renders any importable module as an HTML
page (its docstring, classes, functions and their documentation) that links to other modules
(``socket.html``, ``builtins.html#object``). So this web needs no download and holds real text about real
subjects (networking, text processing, concurrency, ...), which is what makes the cluster's example queries
answer sensibly.

The corpus (``pydoc:modules=N,reserve=K``):

* one page per module of :data:`MODULES` (a curated list of stdlib modules that import without side
  effects, ordered so that any prefix mixes the default cluster's topics with off-topic modules), at
  ``http://python.stdlib.local/MODULE.html``; ``N`` takes the first N (all by default);
* ``index.html`` (the seed) links every *published* module;
* the last ``K`` modules of the selection are held back (``Corpus.meta["reserve"]``): the living web
  (:mod:`oasis.web.living`) publishes them over time as *created* pages, each linked from an existing page;
* links to modules outside the corpus, ``file:`` links to source files and links to docs.python.org are
  turned into plain text (the replayed web serves one host; a dead link would only cost the robots a 404).
"""

from __future__ import annotations

import html as html_lib
import importlib
import logging
import pydoc
import re
import sys
import warnings
from collections.abc import Sequence

from tqdm import tqdm

from oasis.runtime.html import parse_html
from oasis.web.model import Corpus, Page

logger = logging.getLogger(__name__)

BASE_URL = "http://python.stdlib.local/"
SPEC_PREFIX = "pydoc:"

# Interleaved: networking, text processing, concurrency, and other subjects, so every prefix is a mixed web.
MODULES: tuple[str, ...] = (
    "socket", "re", "threading", "json", "http.client", "string", "multiprocessing", "pathlib",
    "urllib.request", "textwrap", "concurrent.futures", "math", "ssl", "difflib", "queue", "datetime",
    "smtplib", "unicodedata", "asyncio", "collections", "ftplib", "html.parser", "subprocess", "random",
    "http.server", "csv", "sched", "statistics", "socketserver", "shlex", "selectors", "itertools",
    "urllib.parse", "fnmatch", "contextvars", "functools", "email.message", "tokenize", "signal", "sqlite3",
    "imaplib", "stringprep", "multiprocessing.pool", "zipfile", "poplib", "codecs", "asyncio.queues",
    "calendar", "xmlrpc.client", "gettext", "asyncio.locks", "pickle", "ipaddress", "locale",
    "concurrent.futures.thread", "hashlib", "http.cookies", "html", "asyncio.subprocess", "decimal",
    "mimetypes", "email.parser", "multiprocessing.managers", "tarfile", "select", "glob", "asyncio.streams",
    "logging", "wsgiref.simple_server", "quopri", "_thread", "argparse", "uuid", "base64", "heapq",
    "shutil", "netrc", "configparser", "mailbox", "binascii", "weakref", "tempfile", "email.utils", "struct",
    "bisect", "gzip", "webbrowser", "keyword", "copy", "enum", "plistlib", "pprint", "operator", "fractions",
)  # fmt: skip

_MODULE_HREF = re.compile(
    r'<a href="(?P<target>[A-Za-z_][\w.]*)\.html(?P<frag>#[^"]*)?"[^>]*>(?P<text>.*?)</a>', re.S
)
RELATED_STRIDE = 4  # MODULES cycles through 4 subjects: modules STRIDE apart are on the same subject
_DEAD_HREF = re.compile(r'<a href="(?:file:|https?://)[^"]*">(?P<text>.*?)</a>', re.S)


class PydocError(ValueError):
    """A bad ``pydoc:`` spec."""


def parse_spec(spec: str) -> tuple[int, int]:
    """``pydoc:modules=N,reserve=K`` -> (N, K); defaults: every module, reserve 10% of them."""
    body = spec.removeprefix(SPEC_PREFIX)
    values: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in body.split(","))):
        key, sep, value = item.partition("=")
        if not sep or key not in ("modules", "reserve"):
            raise PydocError(f"bad pydoc spec item {item!r}: use pydoc:modules=N,reserve=K")
        try:
            values[key] = int(value)
        except ValueError as exc:
            raise PydocError(f"pydoc spec: {key} must be an integer, got {value!r}") from exc
    n = values.get("modules", len(MODULES))
    if not 2 <= n <= len(MODULES):
        raise PydocError(f"pydoc spec: modules must be in [2, {len(MODULES)}], got {n}")
    reserve = values.get("reserve", n // 10)
    if not 0 <= reserve <= n - 1:
        raise PydocError(f"pydoc spec: reserve must be in [0, modules - 1], got {reserve}")
    return n, reserve


def module_url(name: str) -> str:
    return f"{BASE_URL}{name}.html"


def render_module(name: str, known: frozenset[str]) -> str | None:
    """pydoc's HTML page of module ``name``, links to modules outside ``known`` made plain text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module(name)
            doc = pydoc.HTMLDoc()
            markup = doc.page(pydoc.describe(module), doc.docmodule(module))
    except Exception:  # an optional C extension missing on this build: leave the module out
        logger.info("pydoc corpus: module %s not rendered", name, exc_info=True)
        return None

    def module_link(m: re.Match[str]) -> str:
        target = m.group("target")
        if target in known:
            return m.group(0)
        return m.group("text")

    markup = _DEAD_HREF.sub(lambda m: m.group("text"), markup).replace('href="."', 'href="index.html"')
    return _MODULE_HREF.sub(module_link, markup)


def related_block(name: str, published: Sequence[str]) -> str:
    """A "Related modules" list: the published modules RELATED_STRIDE places before and after ``name`` in
    :data:`MODULES` (the same subject, so a topic's pages link each other as on a real topical web)."""
    order = [m for m in MODULES if m in published or m == name]
    i = order.index(name)
    near = [
        order[j]
        for j in (i - RELATED_STRIDE, i + RELATED_STRIDE, i + 2 * RELATED_STRIDE)
        if 0 <= j < len(order)
    ]
    items = " ".join(f'<a href="{m}.html">{html_lib.escape(m)}</a>' for m in near if m != name)
    return f'<p class="related">Related modules: {items} <a href="index.html">index</a></p>\n'


def _with_related(markup: str, block: str) -> str:
    at = markup.rfind("</body>")
    return markup[:at] + block + markup[at:] if at >= 0 else markup + block


def index_html(names: Sequence[str]) -> str:
    items = "\n".join(f'<li><a href="{n}.html">{html_lib.escape(n)}</a></li>' for n in sorted(names))
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Python standard library</title></head>\n'
        f"<body><h1>Python {sys.version_info.major}.{sys.version_info.minor} standard library</h1>\n"
        "<p>Documentation of the modules of the Python standard library, rendered by pydoc.</p>\n"
        f"<ul>\n{items}\n</ul></body></html>\n"
    )


def pydoc_corpus(spec: str = SPEC_PREFIX) -> Corpus:
    """The pydoc web of ``spec`` (see the module docstring)."""
    n, reserve = parse_spec(spec)
    names = list(MODULES[:n])
    held = names[len(names) - reserve :] if reserve else []
    # links go to published modules only: a held-back page appears (is created) later, linked from a parent
    known = frozenset(m for m in names if m not in held)
    rendered: dict[str, str] = {}
    for name in tqdm(names, desc="pydoc web", unit="module", disable=None, file=sys.stderr):
        markup = render_module(name, known)
        if markup is not None:
            rendered[name] = markup
    names = [m for m in names if m in rendered]
    held = [m for m in held if m in rendered]
    published = [m for m in names if m not in held]
    pages: dict[str, Page] = {}
    for name in names:
        rendered[name] = _with_related(rendered[name], related_block(name, published))
        url = module_url(name)
        parsed = parse_html(rendered[name].encode("utf-8"), url, max_bytes=64 * 1024 * 1024)
        pages[url] = Page(url, parsed.title, parsed.text, parsed.links, html=rendered[name])
    index = BASE_URL + "index.html"
    markup = index_html(published)
    parsed = parse_html(markup.encode("utf-8"), index)
    pages[index] = Page(index, parsed.title, parsed.text, parsed.links, html=markup)
    logger.info("pydoc corpus: %d module pages (%d held back for creation)", len(names), len(held))
    return Corpus(
        pages=pages,
        seeds=[index],
        name=f"pydoc:modules={n},reserve={reserve}",
        meta={"reserve": [module_url(m) for m in held], "base_url": BASE_URL},
    )
