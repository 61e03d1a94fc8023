"""The replayed web over real HTTP on 127.0.0.1: pages, link rewriting, robots.txt, faults, log, CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from protego import Protego

from oasis.runtime.html import parse_html
from oasis.runtime.spawn import spawn_service
from oasis.web.corpus import load_multi_host
from oasis.web.model import Corpus
from oasis.web.server import Behaviour, Fault, ReplayedWeb, RobotsPolicy
from oasis.web.synthetic import synthetic_web

SPEC = "synthetic:pages=150,hosts=3,topics=3,seed=11"
UA = "oasis-test/1.0"


@pytest.fixture(scope="module")
def corpus():  # type: ignore[no-untyped-def]
    return synthetic_web(SPEC)


def _get(url: str, **kwargs: object) -> requests.Response:
    return requests.get(url, headers={"User-Agent": UA}, timeout=5, **kwargs)  # type: ignore[arg-type]


def test_crawl_whole_served_web_matches_corpus(corpus) -> None:  # type: ignore[no-untyped-def]
    """A breadth-first crawl over real HTTP reaches exactly the corpus's pages, with the same links."""
    with ReplayedWeb(corpus) as web, requests.Session() as session:
        assert len(web.hosts) == 3
        assert all(u.startswith("http://127.0.0.1:") for u in web.seeds)
        queue, seen = deque(web.seeds), set(web.seeds)
        fetched: dict[str, list[str]] = {}
        while queue:
            url = queue.popleft()
            resp = session.get(url, timeout=5)
            assert resp.status_code == 200
            assert resp.headers["Content-Type"] == "text/html; charset=utf-8"
            parsed = parse_html(resp.content, url, encoding="utf-8")
            fetched[url] = [link.url for link in parsed.links]
            for link in parsed.links:
                assert link.url.startswith(tuple(web.hosts.values())), link.url  # every link rewritten
                if link.url not in seen:
                    seen.add(link.url)
                    queue.append(link.url)
        back = {web.corpus_url_for(u) for u in fetched}
        assert back == corpus.reachable() == set(corpus.pages)
        some = corpus.web.url(100)
        assert fetched[web.url_for(some)] == [web.url_for(link.url) for link in corpus.pages[some].links]
        assert len(web.access_log) == len(fetched)


def test_not_found_head_and_access_log(corpus) -> None:  # type: ignore[no-untyped-def]
    with ReplayedWeb(corpus) as web:
        seed = web.seeds[0]
        assert _get(seed + "no/such/page.html").status_code == 404
        head = requests.head(seed, timeout=5)
        assert head.status_code == 200 and head.content == b"" and int(head.headers["Content-Length"]) > 100
        log = web.access_log
        assert [(r.path, r.status) for r in log] == [("/no/such/page.html", 404), ("/", 200)]
        assert log[0].user_agent == UA and log[0].host == seed.split("/")[2]
        assert log[0].time <= log[1].time
        web.clear_log()
        assert web.access_log == []


def test_robots_txt_per_host(corpus) -> None:  # type: ignore[no-untyped-def]
    origins = corpus.hosts()
    robots = {
        origins[0]: RobotsPolicy(disallow=("/python/",), crawl_delay=0.5),
        origins[1]: RobotsPolicy(missing=True),
    }
    with ReplayedWeb(corpus, robots=robots) as web:
        served = web.hosts
        text = _get(served[origins[0]] + "/robots.txt").text
        parser = Protego.parse(text)
        assert not parser.can_fetch(served[origins[0]] + "/python/p99.html", UA)
        assert parser.can_fetch(served[origins[0]] + "/web/p99.html", UA)
        assert parser.crawl_delay(UA) == 0.5
        assert _get(served[origins[1]] + "/robots.txt").status_code == 404
        allow_all = Protego.parse(_get(served[origins[2]] + "/robots.txt").text)
        assert allow_all.can_fetch(served[origins[2]] + "/python/p1.html", UA)
        # the politeness helpers see a disallowed fetch and the gaps between requests
        _get(served[origins[0]] + "/python/")
        bad = web.disallowed_requests()
        assert [(r.host, r.path) for r in bad] == [(served[origins[0]].split("/")[2], "/python/")]
        time.sleep(0.3)
        _get(served[origins[0]] + "/")
        gaps = web.min_gaps()
        host0 = served[origins[0]].split("/")[2]
        assert 0.0 <= gaps[host0] < 0.3  # robots.txt then /python/ came back to back
        assert set(gaps) == {host0}  # one request each to the other hosts


def test_latency_faults_and_redirects(corpus) -> None:  # type: ignore[no-untyped-def]
    slow, faulty, plain = corpus.hosts()
    behaviour = {
        slow: Behaviour(latency=0.5),
        faulty: Behaviour(
            faults={
                "/databases/": Fault(status=503, times=2, retry_after=3),
                "/web/": Fault(status=429, times=-1),
            },
            redirects={"/old.html": "/python/"},
        ),
    }
    with ReplayedWeb(corpus, behaviour=behaviour) as web:
        start = time.monotonic()
        assert _get(web.hosts[slow] + "/").status_code == 200
        assert time.monotonic() - start >= 0.5
        start = time.monotonic()
        assert _get(web.hosts[plain] + "/").status_code == 200  # other hosts unaffected
        assert time.monotonic() - start < 0.5
        base = web.hosts[faulty]
        first, second, third = (_get(base + "/databases/") for _ in range(3))
        assert (first.status_code, first.headers["Retry-After"]) == (503, "3")
        assert second.status_code == 503 and third.status_code == 200
        assert all(_get(base + "/web/").status_code == 429 for _ in range(2))
        assert _get(web.hosts[plain] + "/databases/").status_code == 200  # faults are per host
        moved = _get(base + "/old.html", allow_redirects=False)
        assert moved.status_code == 301 and moved.headers["Location"] == base + "/python/"
        assert _get(base + "/old.html").url == base + "/python/"


def test_cross_host_links_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OASIS_CACHE_DIR", "")  # no parsed-tree cache for a throwaway tree
    py = tmp_path / "py"
    (py / "library").mkdir(parents=True)
    (py / "index.html").write_text('<a href="library/">library</a>')
    (py / "library" / "index.html").write_text("<title>Library</title><p>modules</p>")
    (py / "library" / "os.html").write_text("<title>os</title><p>os module</p>")
    dj = tmp_path / "dj"
    dj.mkdir()
    (dj / "index.html").write_text(
        "<title>Django</title>"
        '<a href="/usr/share/doc/python3-doc/html/library/os.html#os.walk">os.walk</a>'
        "<a href='http://python.docs.local/index.html'>python</a>"
        '<a href=local.html>local</a><a href="https://www.djangoproject.com/">outside</a>'
        '<img src="_static/logo.png">'
    )
    (dj / "local.html").write_text("<p>local page</p>")
    corpus = load_multi_host(
        [(dj, "http://django.docs.local/"), (py, "http://python.docs.local/")],
        path_map={"/usr/share/doc/python3-doc/html": "http://python.docs.local/"},
    )
    with ReplayedWeb(corpus) as web:
        dj_base, py_base = web.hosts["http://django.docs.local"], web.hosts["http://python.docs.local"]
        page = _get(dj_base + "/index.html")
        parsed = parse_html(page.content, page.url)
        assert [link.url for link in parsed.links] == [
            py_base + "/library/os.html",
            py_base + "/index.html",
            dj_base + "/local.html",
            "https://www.djangoproject.com/",
        ]
        assert f'{py_base}/library/os.html#os.walk"' in page.text  # fragment kept in the served href
        assert f'src="{dj_base}/_static/logo.png"' in page.text
        assert "os module" in _get(py_base + "/library/os.html").text
        assert "modules" in _get(py_base + "/library/").text  # a folder URL serves its index.html
        assert web.corpus_url_for(py_base + "/library/os.html") == "http://python.docs.local/library/os.html"
        assert web.corpus_url_for("http://elsewhere.example/") is None


def test_concurrent_requests_all_logged(corpus) -> None:  # type: ignore[no-untyped-def]
    urls = [corpus.web.url(i) for i in range(40)]
    with ReplayedWeb(corpus) as web:
        statuses: list[int] = []
        lock = threading.Lock()

        def worker(k: int) -> None:
            with requests.Session() as s:
                for url in urls[k::8]:
                    code = s.get(web.url_for(url), timeout=5).status_code
                    with lock:
                        statuses.append(code)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert statuses == [200] * 40
        assert sorted(r.path for r in web.access_log) == sorted(urlsplit(web.url_for(u)).path for u in urls)


def test_pinned_port_stop_and_errors(corpus) -> None:  # type: ignore[no-untyped-def]
    web = ReplayedWeb(corpus)
    with pytest.raises(RuntimeError, match="not started"):
        _ = web.seeds
    with web:
        port = int(web.hosts[corpus.hosts()[0]].rsplit(":", 1)[1])
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/", timeout=2)
    with pytest.raises(ValueError, match="not in the corpus"):
        ReplayedWeb(corpus, hosts={"http://nope.test": 0})
    with pytest.raises(ValueError, match="crawl_delay"):
        RobotsPolicy(crawl_delay=-1)


def test_cli_serves_until_sigterm(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": ""}
    web = spawn_service(
        [sys.executable, "-m", "oasis.web", "--corpus", SPEC, "--crawl-delay", "0.25",
         "--log-level", "WARNING"],
        tmp_path / "web.json", timeout=30, name="web", log=tmp_path / "web.log", cwd=tmp_path, env=env,
    )  # fmt: skip
    proc, info = web.process, web.info
    try:
        assert info["pid"] == proc.pid and info["pages"] == 150
        assert set(info["hosts"]) == {f"http://host{h}.synthetic.test" for h in range(3)}
        assert info["address"] == info["hosts"]["http://host0.synthetic.test"].removeprefix("http://")
        assert _get(info["seeds"][0]).status_code == 200
        assert "Crawl-delay: 0.25" in _get(info["seeds"][0] + "robots.txt").text
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    bad = subprocess.run(
        [sys.executable, "-m", "oasis.web", "--corpus", str(tmp_path / "missing")],
        cwd=tmp_path, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert bad.returncode == 2 and "not found" in bad.stderr


def test_page_bodies_are_rewritten_once_and_follow_a_restart(corpus) -> None:  # type: ignore[no-untyped-def]
    """A page's served body (links rewritten) is built at its first request and served again as is; a
    restart on new ports rewrites again, so links always point at the ports being served."""
    web = ReplayedWeb(corpus).start()
    try:
        url = web.seeds[0]
        first = _get(url).content
        corpus_url = web.corpus_url_for(url)
        assert corpus_url is not None
        kept = web._bodies[corpus_url]
        assert kept == first and _get(url).content == first
        assert web.page_body(corpus_url, "ignored: the kept body is served") is kept
        old_base = next(iter(web.hosts.values()))
    finally:
        web.stop()
    web.start()
    try:
        new_base = next(iter(web.hosts.values()))
        again = _get(web.seeds[0]).content
        assert new_base.encode() in again
        if new_base != old_base:  # (the system may hand out the same ephemeral port again)
            assert old_base.encode() not in again
    finally:
        web.stop()


def test_a_client_dropping_its_connection_is_no_traceback(
    corpus: Corpus, capfd: pytest.CaptureFixture[str]
) -> None:
    """``python -m oasis.web`` printed a 20-line traceback to stderr for every connection a client reset
    (``oasis crawl`` of a served Debian corpus: 48 of them), burying the server's own log. A dropped client
    is a debug line now; the server goes on answering."""
    import socket
    import struct

    with ReplayedWeb(corpus) as web:
        host, port = urlsplit(web.seeds[0]).netloc.split(":")
        for _ in range(3):  # connect, send half a request line, and reset (SO_LINGER 0: an RST, not a FIN)
            s = socket.create_connection((host, int(port)))
            s.sendall(b"GET /index")
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        time.sleep(0.5)
        assert requests.get(web.seeds[0], timeout=10).status_code == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ConnectionResetError" not in err, err
