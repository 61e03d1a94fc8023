"""Corpus loaders (HTML tree, multi-host, WARC, graph), load_corpus dispatch, and the Debian corpora."""

from __future__ import annotations

import io
import logging
import random
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from oasis.runtime.html import parse_html
from oasis.runtime.urls import canonicalize
from oasis.web.corpora import (
    DEBIAN_CORPORA,
    CorpusNotInstalled,
    debian_corpus,
    known_path_map,
    require_installed,
)
from oasis.web.corpus import CorpusError, load_corpus, load_graph, load_html_tree, load_multi_host, load_warc
from oasis.web.model import Corpus, Link, Page, relevance_map


def _write(path: Path, text: str, encoding: str = "utf-8") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding))


@pytest.fixture(autouse=True)
def private_cache(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Throwaway trees cache into tmp_path; the real Debian corpora use the user cache (~/.cache/oasis)."""
    if request.node.get_closest_marker("corpus") is None:
        monkeypatch.setenv("OASIS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    _write(root / "index.html", '<title>Home</title><a href="a.html">A page</a> <a href="sub/">Sub</a>')
    _write(
        root / "a.html",
        '<title>A</title><p>alpha</p><a href="index.html#top">home</a><a href="missing.html">x</a>',
    )
    _write(root / "sub" / "index.html", '<title>Sub</title><a href="../b%20c.htm">BC</a>')
    _write(root / "b c.htm", '<meta charset="latin-1"><title>B\u00e9</title><p>caf\u00e9</p>', "latin-1")
    _write(root / "orphan.html", "<title>Orphan</title>")
    _write(root / "style.css", "body {}")
    return root


def test_html_tree_pages_links_and_seed(tree: Path) -> None:
    corpus = load_html_tree(tree, "http://site.test/docs")
    base = "http://site.test/docs/"
    assert set(corpus.pages) == {
        base + "index.html",
        base + "a.html",
        base + "sub/index.html",
        base + "b%20c.htm",
        base + "orphan.html",
    }
    assert corpus.seeds == [base + "index.html"]
    home = corpus.pages[base + "index.html"]
    # "sub/" resolves to sub/index.html, as a web server would serve it
    assert [link.url for link in home.links] == [base + "a.html", base + "sub/index.html"]
    assert corpus.pages[base + "b%20c.htm"].title == "B\u00e9"
    assert "caf\u00e9" in corpus.pages[base + "b%20c.htm"].text
    assert corpus.reachable() == set(corpus.pages) - {base + "orphan.html"}
    assert corpus.sources[base + "a.html"] == tree / "a.html"
    # markup is read from the file on demand
    html = corpus.html_of(base + "a.html")
    assert html is not None and "alpha" in html


def test_parsed_tree_cache(tree: Path, tmp_path: Path) -> None:
    first = load_html_tree(tree, "http://site.test/")
    cached = list((tmp_path / "cache" / "corpora").glob("*.pickle"))
    assert len(cached) == 1
    assert load_html_tree(tree, "http://site.test/").pages == first.pages  # from the cache
    _write(tree / "a.html", "<title>A2</title><p>changed</p>")  # a changed file invalidates the cache
    assert load_html_tree(tree, "http://site.test/").pages["http://site.test/a.html"].title == "A2"
    assert len(list((tmp_path / "cache" / "corpora").glob("*.pickle"))) == 2
    assert load_html_tree(tree, "http://other.test/").seeds == ["http://other.test/index.html"]  # base in key


def test_html_tree_errors(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="not a directory"):
        load_html_tree(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusError, match=r"no \.html"):
        load_html_tree(tmp_path / "empty")
    _write(tmp_path / "one" / "x.html", "<p>x</p>")
    with pytest.raises(CorpusError, match="seed pages not in the corpus"):
        load_html_tree(tmp_path / "one", seeds=["nothere.html"])
    assert load_html_tree(tmp_path / "one").seeds == ["http://docs.local/x.html"]  # no index.html: first file


def test_multi_host_maps_absolute_filesystem_links(tmp_path: Path) -> None:
    """The Django docs' layout: absolute /usr/share/doc/python3-doc/html/... links into another tree,
    whose folder is a symlink (python3.11-doc/html -> ../python3.11/html)."""
    real_py = tmp_path / "python3.11" / "html"
    _write(real_py / "index.html", '<a href="library/os.html">os</a>')
    _write(real_py / "library" / "os.html", "<title>os</title><p>operating system</p>")
    (tmp_path / "python3.11-doc").mkdir()
    (tmp_path / "python3.11-doc" / "html").symlink_to(real_py)
    dj = tmp_path / "django" / "html"
    _write(
        dj / "index.html",
        '<a href="/usr/share/doc/python3-doc/html/library/os.html#os.walk">os.walk</a>'
        f'<a href="{real_py}/index.html">python (real path)</a>'
        '<a href="/usr/share/doc/python-psycopg2-doc/html/index.html">psycopg2</a>',
    )
    corpus = load_multi_host(
        [
            (dj, "http://django.docs.local/"),
            (tmp_path / "python3.11-doc" / "html", "http://python.docs.local/"),
        ],
        path_map={"/usr/share/doc/python3-doc/html": "http://python.docs.local/"},
    )
    links = [link.url for link in corpus.pages["http://django.docs.local/index.html"].links]
    assert links == [
        "http://python.docs.local/library/os.html",
        "http://python.docs.local/index.html",
        "http://django.docs.local/usr/share/doc/python-psycopg2-doc/html/index.html",  # not mapped: broken
    ]
    assert corpus.seeds == ["http://django.docs.local/index.html", "http://python.docs.local/index.html"]
    assert "http://python.docs.local/library/os.html" in corpus.reachable(
        ["http://django.docs.local/index.html"]
    )
    assert corpus.hosts() == ["http://django.docs.local", "http://python.docs.local"]
    # the same rewrite the server applies to served hrefs
    assert (
        corpus.remap("http://django.docs.local/usr/share/doc/python3-doc/html/x.html")
        == "http://python.docs.local/x.html"
    )


def _warc(path: Path, records: list[tuple[str, str, bytes, str]]) -> None:
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=path.name.endswith(".gz"))
        for url, status, body, ctype in records:
            headers = StatusAndHeaders(status, [("Content-Type", ctype)], protocol="HTTP/1.1")
            writer.write_record(
                writer.create_warc_record(
                    url, "response", payload=io.BytesIO(body), length=len(body), http_headers=headers
                )
            )


@pytest.mark.parametrize("name", ["crawl.warc", "crawl.warc.gz"])
def test_load_warc(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    _warc(
        path,
        [
            (
                "http://A.example/",
                "200 OK",
                b'<title>A</title><a href="/b">to b</a>',
                "text/html; charset=utf-8",
            ),
            (
                "http://a.example/b",
                "200 OK",
                "<p>caf\u00e9</p>".encode("latin-1"),
                "text/html; charset=iso-8859-1",
            ),
            ("http://a.example/img.png", "200 OK", b"\x89PNG", "image/png"),
            ("http://a.example/gone", "404 Not Found", b"<p>nope</p>", "text/html"),
        ],
    )
    corpus = load_corpus(path)
    assert set(corpus.pages) == {"http://a.example/", "http://a.example/b"}
    assert corpus.seeds == ["http://a.example/"]
    assert corpus.pages["http://a.example/"].links == (Link("http://a.example/b", "to b"),)
    assert "caf\u00e9" in corpus.pages["http://a.example/b"].text
    assert corpus.html_of("http://a.example/b") == "<p>caf\u00e9</p>"


def test_load_warc_rejects_junk(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    junk = tmp_path / "junk.warc"
    junk.write_bytes(b"this is not a warc file\n" * 10)
    with pytest.raises(CorpusError):
        load_warc(junk)
    # random bytes: the message is cut (it quoted warcio's whole "first line", escaped: 1,000 characters of
    # binary here)
    noise = tmp_path / "noise.warc"
    noise.write_bytes(random.Random(0).randbytes(500).replace(b"\n", b"") + b"\n")
    with pytest.raises(CorpusError) as info:
        load_warc(noise)
    assert len(str(info.value)) < 400 and "more characters)" in str(info.value)
    # a file warcio half reads (an ARC-like first line, then no record boundary): warcio wrote its warning
    # with the record's remainder, 200 kB of it, straight to stderr; now one warning, cut, and the error
    arcish = tmp_path / "arcish.warc"
    arcish.write_bytes(b"http://x.test/ 1.2.3.4 20200101000000 text/html 5\nabcde" + b"z" * 200_000 + b"\n")
    capfd.readouterr()
    caplog.clear()
    with caplog.at_level(logging.WARNING), pytest.raises(CorpusError, match="no HTML responses"):
        load_warc(arcish)
    assert capfd.readouterr().err == ""
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith(
        f"{arcish}: 1 warning(s) reading it, the first: WARNING: Record not followed by newline"
    )
    assert len(said) < 1500


def test_load_graphml_with_attributes(tmp_path: Path) -> None:
    g = nx.DiGraph()
    g.add_node("home", url="http://g.example/", title="Home", seed=True, relevance=0.1)
    g.add_node("p1", title="Databases", text="sql query index", relevance=0.9)
    g.add_node("p2", url="http://g.example/p2")
    g.add_edge("home", "p1", anchor="db")
    g.add_edge("p1", "p2")
    g.add_edge("p2", "home")
    path = tmp_path / "web.graphml"
    nx.write_graphml(g, path)
    corpus = load_corpus(path)
    p1 = "http://graph.local/n/p1"
    assert corpus.seeds == ["http://g.example/"]
    assert corpus.pages["http://g.example/"].links == (Link(p1, "db"),)
    assert corpus.pages[p1].text == "sql query index"
    assert relevance_map(corpus) == {"http://g.example/": 0.1, p1: 0.9, "http://g.example/p2": 0.0}
    html = corpus.html_of(p1)  # rendered: the parser reads back the same title, text and links
    assert html is not None
    parsed = parse_html(html, p1)
    assert (parsed.title, parsed.text.endswith("sql query index"), parsed.links) == (
        "Databases",
        True,
        (Link("http://g.example/p2", ""),),
    )


def test_load_edgelist(tmp_path: Path) -> None:
    path = tmp_path / "web.edgelist"
    path.write_text("# comment\na b 1.0\nb c\nc a\nd a\n")
    corpus = load_graph(path)
    assert corpus.seeds == ["http://graph.local/n/d"]  # the only node nobody links to
    assert len(corpus) == 4 and corpus.reachable() == set(corpus.pages)
    graph = corpus.graph()
    assert graph.num_edges == 4 and len(graph) == 4
    bad = tmp_path / "bad.edgelist"
    bad.write_text("lonely\n")
    with pytest.raises(CorpusError, match="expected 'source target'"):
        load_graph(bad)


def test_load_corpus_dispatch_errors(tmp_path: Path, tree: Path) -> None:
    assert len(load_corpus(tree)) == 5
    assert len(load_corpus("synthetic:pages=50,hosts=2,topics=2,seed=3")) == 50
    with pytest.raises(CorpusError, match="not found"):
        load_corpus(tmp_path / "missing.warc")
    odd = tmp_path / "x.bin"
    odd.write_bytes(b"")
    with pytest.raises(CorpusError, match="unknown corpus file type"):
        load_corpus(odd)
    with pytest.raises(CorpusError, match="unknown Debian corpus"):
        load_corpus("debian:nope")


def test_corpus_graph_view_matches_links() -> None:
    pages = {
        "http://h/a": Page(
            "http://h/a", "a", "", (Link("http://h/b"), Link("http://h/a"), Link("http://x/out"))
        ),
        "http://h/b": Page("http://h/b", "b", "", (Link("http://h/a"),), relevance=0.5),
    }
    graph = Corpus(pages, ["http://h/a"]).graph()
    assert list(graph.urls) == ["http://h/a", "http://h/b"]
    assert graph.out(0).tolist() == [1] and graph.out(1).tolist() == [0]  # self-loop and outside link dropped
    assert np.allclose(graph.relevance, [0.0, 0.5]) and graph.seeds.tolist() == [0]


def test_debian_corpus_not_installed_message(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from dataclasses import replace

    from oasis.web import corpora

    fake = replace(DEBIAN_CORPORA["postgresql-doc-15"], root=tmp_path / "absent")
    monkeypatch.setitem(corpora.DEBIAN_CORPORA, "postgresql-doc-15", fake)
    with pytest.raises(CorpusNotInstalled, match="apt-get install postgresql-doc-15"):
        debian_corpus("postgresql-doc-15")


def test_experiment_corpora_are_known_but_not_part_of_all(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 10's extra training and holdout corpora (experiment corpora): known by name with their apt-get
    package, never needed by ``debian:all`` (an absent one does not stop it from loading what it needs)."""
    from dataclasses import replace

    from oasis.web import corpora

    experiment = [n for n, c in DEBIAN_CORPORA.items() if c.experiment]
    assert experiment == [
        "python-sqlalchemy-doc",
        "python-celery-doc",
        "python-pytest-doc",
        "python-distributed-doc",
        "python-scrapy-doc",
        "python-tornado-doc",
        "python-kombu-doc",
        "python-pymongo-doc",
        "python-gevent-doc",
        "python-cherrypy3-doc",
        "python-pil-doc",
        "sphinx-doc",
        "python-dask-doc",
        "python-fonttools-doc",
        "python-pygame-doc",
        "python-flask-doc",
        "python-cryptography-doc",
        "python-lxml-doc",
        "python-werkzeug-doc",
        "python-ipython-doc",
        "python-djangorestframework-doc",
        "python-h5py-doc",
        "python-aiohttp-doc",
        "python-tables-doc",
        "python-authlib-doc",
        "python-ezdxf-doc",
        "python-quart-doc",
        "python-gitlab-doc",
        "python-sklearn-doc",
        "python-sympy-doc",
        "python-astropy-doc",
        "python-skimage-doc",
        "python-ase-doc",
        "python-nibabel-doc",
        "python-statsmodels-doc",
        "python-mdtraj-doc",
        "python-mdanalysis-doc",
        "python-whoosh-doc",
        "python-pydicom-doc",
        "python-rdflib-doc",
        "python-pymatgen-doc",
        "python-asdf-doc",
        "python-skbio-doc",
        "python-pyqtgraph-doc",
        "python-openstacksdk-doc",
        "python-cogent-doc",
        "python-silx-doc",
        "python-qutip-doc",
        "python-selenium-doc",
        "python-mpmath-doc",
        "python-nipype-doc",
        "python-requests-doc",
        "python-taskflow-doc",
        "python-click-doc",
        "python-dipy-doc",
        "python-eventlet-doc",
        "python-can-doc",
        "python-pygments-doc",
        "python-taurus-doc",
        "python-hypothesis-doc",
        "python-sfepy-doc",
        "python-ldap-doc",
        "python-mpi4py-doc",
        "python-nitime-doc",
        "python-slixmpp-doc",
        "python-pwntools-doc",
        "python-nipy-doc",
        "python-pywt-doc",
        "python-pyfai-doc",
        "python-simpy3-doc",
        "python-imageio-doc",
        "python-lark-doc",
        "python-astroquery-doc",
        "python-pint-doc",
        "python-fluids-doc",
        "python-coverage-doc",
        "python-astroplan-doc",
        "python-django-extensions-doc",
    ]
    for name in experiment:
        absent = replace(DEBIAN_CORPORA[name], root=tmp_path / "absent")
        monkeypatch.setitem(corpora.DEBIAN_CORPORA, name, absent)
        with pytest.raises(CorpusNotInstalled, match=f"apt-get install {name}"):
            debian_corpus(name)
    calls: list[list[tuple[Path, str]]] = []
    monkeypatch.setattr(corpora, "require_installed", lambda name: corpora.DEBIAN_CORPORA[name])
    monkeypatch.setattr(corpora, "load_multi_host", lambda roots, **kw: calls.append(roots))
    debian_corpus("all")
    assert [url for _root, url in calls[0]] == [
        "http://postgresql.docs.local/",
        "http://python.docs.local/",
        "http://django.docs.local/",
    ]


def _need(name: str) -> None:
    try:
        require_installed(name)
    except CorpusNotInstalled as exc:
        pytest.skip(f"{exc} (./dev test installs it)")


@pytest.mark.corpus
def test_postgresql_doc_all_reachable_no_broken_links() -> None:
    """The stated facts: 1,169 pages, all reachable from index.html, no broken internal links."""
    _need("postgresql-doc-15")
    corpus = debian_corpus("postgresql-doc-15")
    host = "http://postgresql.docs.local/"
    assert len(corpus) == 1169
    assert corpus.seeds == [host + "index.html"]
    assert corpus.reachable() == set(corpus.pages)
    broken = [
        (url, link.url)
        for url, page in corpus.pages.items()
        for link in page.links
        if link.url.startswith(host) and link.url not in corpus.pages
    ]
    assert broken == []
    assert all(page.title for page in corpus)


@pytest.mark.corpus
def test_django_links_into_python_docs_resolve_to_real_files() -> None:
    """Every python3-doc link on a real Django page maps to the Python host and to a file that exists."""
    _need("python-django-doc")
    _need("python3.11-doc")
    dj = DEBIAN_CORPORA["python-django-doc"]
    py = DEBIAN_CORPORA["python3.11-doc"]
    corpus = load_html_tree(
        dj.root / "ref" / "models", dj.base_url + "ref/models/", path_map=known_path_map()
    )
    to_python = [link.url for page in corpus for link in page.links if link.url.startswith(py.base_url)]
    assert len(to_python) > 10
    for url in to_python:
        rel = url.removeprefix(py.base_url)
        assert (py.root / rel).is_file(), url
        assert canonicalize(url) == url


def test_a_damaged_parse_cache_is_parsed_again(
    tree: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The parsed-tree cache (a pickle under the cache folder) damaged by a crash, a disk or another Python:
    truncated, random or altered bytes raise UnicodeDecodeError, ValueError, OverflowError or MemoryError as
    well as UnpicklingError from ``pickle.load`` (3,000 damages, docs/probes/s25_pickle_fuzz.py: 133
    escaped the five kinds caught before, and the replay died on them); a pickle of something else was
    returned as the tree. Now any of them is logged and the tree parsed again (the cache rewritten)."""
    import pickle

    first = load_html_tree(tree, "http://site.test/docs")
    (cache,) = (tmp_path / "cache").rglob("*.pickle")
    good = cache.read_bytes()
    damaged = [
        b"\x80\x05\x95\xff\xff\xff\xff\xff\xff\xff\x7f",  # a frame longer than the file (UnpicklingError)
        b"\x80\x05X\x02\x00\x00\x00\xff\xfe.",  # a string that is not UTF-8 (UnicodeDecodeError)
        b"\x80\x09.",  # an unknown protocol (ValueError)
        good[: len(good) // 2],  # truncated
        pickle.dumps(["not", "a", "tree"]),
    ]
    for data in damaged:
        cache.write_bytes(data)
        with caplog.at_level("WARNING", logger="oasis.web.corpus"):
            again = load_html_tree(tree, "http://site.test/docs")
        assert "ignoring unreadable corpus cache" in caplog.text
        caplog.clear()
        assert again.pages == first.pages and again.sources == first.sources
        assert cache.read_bytes() == good  # rewritten whole
