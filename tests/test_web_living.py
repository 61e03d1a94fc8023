"""The living web (oasis.web.living) over real HTTP on 127.0.0.1: versions, validators, 304, 410, created
pages linked from their parent, Poisson change counts, the token-guarded ground truth; and the pydoc web."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
import requests

from oasis.web.living import ChangeRates, LivingWeb, TruthServer
from oasis.web.model import Corpus, Link, Page
from oasis.web.pydoc_corpus import pydoc_corpus
from oasis.web.server import ReplayedWeb

BASE = "http://site.test"


def small_corpus(n: int = 6) -> Corpus:
    pages = {}
    for i in range(n):
        url = f"{BASE}/p{i}.html"
        links = (Link(f"{BASE}/p{(i + 1) % n}.html", f"page {i + 1}"),)
        pages[url] = Page(url, f"Page {i}", f"socket network protocol number {i} " * 20, links)
    return Corpus(pages=pages, seeds=[f"{BASE}/p0.html"], name="small", meta={"reserve": [f"{BASE}/p5.html"]})


@pytest.fixture
def living_web() -> Iterator[tuple[LivingWeb, ReplayedWeb, TruthServer]]:
    living = LivingWeb(small_corpus(), ChangeRates(), seed=1)
    with ReplayedWeb(living.corpus, living=living) as web:
        truth = TruthServer(living, served_url=web.url_for, corpus_url=web.corpus_url_for).start()
        try:
            yield living, web, truth
        finally:
            truth.stop()


def _truth(truth: TruthServer, path: str, body: dict[str, object] | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {truth.token}"}
    url = f"http://{truth.address}{path}"
    if body is None:
        return requests.get(url, headers=headers, timeout=5)
    return requests.post(url, json=body, headers=headers, timeout=5)


def test_validators_304_and_new_versions(living_web: tuple[LivingWeb, ReplayedWeb, TruthServer]) -> None:
    living, web, _ = living_web
    url = web.url_for(f"{BASE}/p1.html")
    first = requests.get(url, timeout=5)
    assert first.status_code == 200
    etag, last_modified = first.headers["ETag"], first.headers["Last-Modified"]
    assert requests.get(url, headers={"If-None-Match": etag}, timeout=5).status_code == 304
    assert requests.get(url, headers={"If-Modified-Since": last_modified}, timeout=5).status_code == 304
    living.modify(f"{BASE}/p1.html")
    second = requests.get(url, headers={"If-None-Match": etag}, timeout=5)
    assert second.status_code == 200 and second.headers["ETag"] != etag
    assert "Revision 1" in second.text and second.text != first.text


def test_deleted_page_is_gone_and_held_page_appears_linked(
    living_web: tuple[LivingWeb, ReplayedWeb, TruthServer],
) -> None:
    living, web, _ = living_web
    held = web.url_for(f"{BASE}/p5.html")
    assert requests.get(held, timeout=5).status_code == 404  # held back: not published yet
    living.delete(f"{BASE}/p2.html")
    assert requests.get(web.url_for(f"{BASE}/p2.html"), timeout=5).status_code == 410
    created = living.create(f"{BASE}/p0.html")
    assert created == f"{BASE}/p5.html"
    assert requests.get(held, timeout=5).status_code == 200
    parent = requests.get(web.url_for(f"{BASE}/p0.html"), timeout=5).text
    assert held in parent  # linked (by its served URL) from the page that spawned it
    assert dict(living.counts) == {"modified": 0, "deleted": 1, "created": 1}


def test_truth_needs_the_token_and_tells_versions(
    living_web: tuple[LivingWeb, ReplayedWeb, TruthServer],
) -> None:
    living, web, truth = living_web
    assert requests.get(f"http://{truth.address}/truth", timeout=5).status_code == 401
    served = web.url_for(f"{BASE}/p3.html")
    assert _truth(truth, "/modify", {"url": served}).json() == {"version": 1}
    t = _truth(truth, "/truth").json()
    assert t["pages"][served][0] == 1 and t["counts"]["modified"] == 1
    assert web.url_for(f"{BASE}/p5.html") not in t["pages"]
    new = {"parent": served, "title": "Zebra notes", "text": "zebra quux"}
    created = _truth(truth, "/create", new).json()
    texts = _truth(truth, "/texts", {"urls": [created["url"]]}).json()["pages"]
    assert texts[created["url"]]["title"] == "Zebra notes" and "zebra quux" in texts[created["url"]]["text"]
    burst = _truth(truth, "/burst", {"fraction": 1.0}).json()["modified"]
    assert len(burst) == len(living.live_urls())


def test_a_page_at_a_folder_url_is_served() -> None:
    url = f"{BASE}/"
    corpus = Corpus(pages={url: Page(url, "Home", "home page")}, seeds=[url], name="root")
    living = LivingWeb(corpus, ChangeRates())
    with ReplayedWeb(corpus, living=living) as web:
        assert requests.get(web.url_for(url), timeout=5).status_code == 200
        assert requests.get(web.url_for(f"{BASE}/index.html"), timeout=5).status_code == 404


def test_poisson_counts_match_the_rates() -> None:
    corpus = small_corpus(40)
    living = LivingWeb(corpus, ChangeRates(modify=0.5), seed=3)
    events = sum(living.advance(0.05) for _ in range(200))  # 10 s at 0.5/page/s on 39 live pages
    expected = 0.5 * 39 * 10
    assert abs(events - expected) < 4 * math.sqrt(expected)
    assert living.counts["modified"] == events


def test_pydoc_web_is_real_linked_text() -> None:
    corpus = pydoc_corpus("pydoc:modules=8,reserve=2")
    index = corpus.seeds[0]
    reserve = corpus.meta["reserve"]
    assert isinstance(reserve, list) and len(reserve) == 2
    linked = {link.url for link in corpus.pages[index].links}
    socket = "http://python.stdlib.local/socket.html"
    assert socket in linked and not linked & set(reserve)
    assert "socket" in corpus.pages[socket].text.lower() and "connection" in corpus.pages[socket].text.lower()
    assert any(link.url.endswith("http.client.html") for link in corpus.pages[socket].links)
