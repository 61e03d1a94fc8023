"""The synthetic topical web: spec parsing, determinism, structure, topical signal, HTML round trip."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from oasis.runtime.html import parse_html
from oasis.runtime.urls import canonicalize
from oasis.web.model import relevance_map
from oasis.web.synthetic import (
    TOPIC_VOCABULARIES,
    SyntheticSpec,
    link_distances,
    parse_synthetic_spec,
    reachable_mask,
    synthetic_web,
)

SPEC = "synthetic:pages=3000,hosts=4,topics=3,seed=5"


@pytest.fixture(scope="module")
def corpus():  # type: ignore[no-untyped-def]
    return synthetic_web(SPEC)


def test_parse_spec() -> None:
    spec = parse_synthetic_spec("synthetic:pages=2000,hosts=4,topics=3,seed=1")
    assert (spec.pages, spec.hosts, spec.topics, spec.seed) == (2000, 4, 3, 1)
    assert parse_synthetic_spec("synthetic:") == SyntheticSpec()
    assert parse_synthetic_spec("synthetic:topics=3,target=python").target == 1
    assert parse_synthetic_spec("synthetic:homophily=0.5, out_degree=2.5").homophily == 0.5
    assert parse_synthetic_spec(spec.spec_string()) == spec
    for bad, message in [
        ("pages=10", "starts with"),
        ("synthetic:pages=ten", "bad value"),
        ("synthetic:colour=red", "keys are"),
        ("synthetic:pages=5,hosts=4,topics=3", "too few"),
        ("synthetic:target=cooking,topics=3", "unknown target topic"),
        ("synthetic:homophily=1.5", "homophily"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_synthetic_spec(bad)


def test_deterministic_given_seed() -> None:
    a, b = synthetic_web(SPEC).web, synthetic_web(SPEC).web
    assert np.array_equal(a.indices, b.indices) and np.array_equal(a.indptr, b.indptr)
    assert np.array_equal(a.topic, b.topic) and np.array_equal(a.purity, b.purity)
    assert a.page(1234) == b.page(1234)
    c = synthetic_web(SPEC.replace("seed=5", "seed=6")).web
    assert not np.array_equal(a.indices[:1000], c.indices[:1000]) or a.page(1234) != c.page(1234)


def test_urls_canonical_and_indexable(corpus) -> None:  # type: ignore[no-untyped-def]
    web = corpus.web
    assert len(corpus) == 3000 and len(corpus.seeds) == 4
    for i in [0, 3, 4, 15, 16, 17, 999, 2999]:
        url = web.url(i)
        assert canonicalize(url) == url
        assert web.index(url) == i
        assert url in corpus.pages and corpus.pages[url].url == url
    for url in [
        "http://host9.synthetic.test/",
        "http://host0.synthetic.test/python/p3000.html",
        "http://host0.synthetic.test/python/p5.html",
        "http://elsewhere.test/",
    ]:
        assert url not in corpus.pages
        with pytest.raises(KeyError):
            corpus.pages[url]
    # the one page that really is p17 lives on its own host and topic; another host/topic is not it
    real = web.url(17)
    assert web.index(real.replace(f"host{int(web.host[17])}", f"host{(int(web.host[17]) + 1) % 4}")) is None


def test_structure_reachable_depth_and_homophily(corpus) -> None:  # type: ignore[no-untyped-def]
    web = corpus.web
    assert corpus.reachable() == set(corpus.pages)
    assert reachable_mask(web.indptr, web.indices, np.arange(4)).all()
    dist = link_distances(web.indptr, web.indices, np.arange(4))
    assert dist[:4].tolist() == [0] * 4 and (dist[4:] >= 1).all()
    assert (dist <= web.depth).all()  # the tree path is one path; links can only shorten it
    for i in range(16, 3000, 101):  # each page is one link further than its nearest in-neighbour
        parents = np.flatnonzero([i in web.out(j) for j in range(3000)])
        assert dist[i] == dist[parents].min() + 1
    # no self loops, no duplicate links
    for i in range(0, 3000, 37):
        out = web.out(i).tolist()
        assert i not in out and len(out) == len(set(out))
    assert web.depth[:4].tolist() == [0] * 4 and set(web.depth[4:16].tolist()) == {1}
    assert web.depth.max() >= 6
    first = 4 * 4
    src = np.repeat(np.arange(web.n), np.diff(web.indptr))
    regular = (src >= first) & (web.indices >= first)
    same = web.topic[src[regular]] == web.topic[web.indices[regular]]
    assert same.mean() > 0.8  # homophily 0.85 plus tree links
    assert same.mean() < 1.0  # but some cross-topic links


def test_relevance_grows_with_depth_and_matches_text(corpus) -> None:  # type: ignore[no-untyped-def]
    web = corpus.web
    rel = web.relevance_to(0)
    assert np.all((rel >= 0) & (rel <= 1))
    high = web.depth[rel > 0.8].mean()
    mid = web.depth[(rel > 0.3) & (rel < 0.6)].mean()
    assert high > mid + 1  # the most relevant pages are deep
    assert relevance_map(corpus)[web.url(100)] == pytest.approx(rel[100])

    # a TF-IDF cosine against the databases vocabulary ranks pages like the ground truth does
    sample = list(range(16, 3000, 7))
    docs = [Counter(web.text(i).split()) for i in sample]
    df = Counter(w for d in docs for w in d)
    idf = {w: math.log(len(docs) / df[w]) for w in df}
    topic = set(TOPIC_VOCABULARIES["databases"])

    def score(d: Counter[str]) -> float:
        vec = {w: c * idf[w] for w, c in d.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return sum(v for w, v in vec.items() if w in topic) / norm

    scores = np.array([score(d) for d in docs])
    truth = rel[sample]
    ranks_s, ranks_t = scores.argsort().argsort(), truth.argsort().argsort()
    spearman = np.corrcoef(ranks_s, ranks_t)[0, 1]
    assert spearman > 0.7


def test_html_round_trip(corpus) -> None:  # type: ignore[no-untyped-def]
    for i in (0, 5, 777, 2500):
        url = corpus.web.url(i)
        page = corpus.pages[url]
        html = corpus.html_of(url)
        assert html is not None
        parsed = parse_html(html, url)
        assert parsed.title == page.title
        assert [link.url for link in parsed.links] == [link.url for link in page.links]
        assert page.text in parsed.text
        assert corpus.out_links(url) == page.links


def test_graph_view_is_the_arrays(corpus) -> None:  # type: ignore[no-untyped-def]
    graph = corpus.graph()
    assert len(graph) == 3000 and graph.num_edges == corpus.meta["links"]
    assert graph.urls[42] == corpus.web.url(42) and graph.urls[-1] == corpus.web.url(2999)
    assert graph.out(42).tolist() == corpus.web.out(42).tolist()
    assert graph.seeds.tolist() == [0, 1, 2, 3]


def test_more_topics_than_builtin_vocabularies() -> None:
    corpus = synthetic_web("synthetic:pages=400,hosts=2,topics=8,seed=2")
    web = corpus.web
    assert web.topic_names[-1] == "topic7"
    vocab = set(web.vocabularies[7])
    assert len(vocab) == 30 and not vocab & set(web.vocabularies[6])
    assert corpus.reachable() == set(corpus.pages)
