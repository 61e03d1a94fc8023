"""Merging: per-engine normalisation (hand-worked), dedupe by canonical URL, invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.broker.merge import EngineHit, EngineResult, cori_merge, max_norm, merge


def result(
    engine: str, c: float, scores: list[tuple[str, float]], max_score: float | None = None
) -> EngineResult:
    hits = tuple(EngineHit(url=u, title=u, snippet="", score=s) for u, s in scores)
    best = max_score if max_score is not None else max((s for _, s in scores), default=0.0)
    return EngineResult(engine=engine, route_score=c, max_score=best, hits=hits)


A = result("a", 0.6, [("http://a.test/1", 10.0), ("http://a.test/2", 5.0)])
B = result("b", 0.5, [("http://b.test/1", 2.0), ("http://b.test/2", 1.0)])


def test_max_normalisation_makes_engines_comparable() -> None:
    merged = merge([A, B], 4, "max")
    # a: 10/10, 5/10; b: 2/2, 1/2 -> raw scores 10 vs 2 no longer decide; ties broken by URL
    assert [(h.url, h.score) for h in merged] == [
        ("http://a.test/1", 1.0),
        ("http://b.test/1", 1.0),
        ("http://a.test/2", 0.5),
        ("http://b.test/2", 0.5),
    ]
    assert [h.raw_score for h in merged] == [10.0, 2.0, 5.0, 1.0]
    assert [h.engine for h in merged] == ["a", "b", "a", "b"]


def test_global_normalisation_keeps_the_raw_ranking_on_one_scale() -> None:
    merged = merge([A, B], 4, "global")
    # every score divided by the largest engine maximum, 10: 10, 5, 2, 1 -> 1, 0.5, 0.2, 0.1
    assert [(h.engine, h.score) for h in merged] == [("a", 1.0), ("a", 0.5), ("b", 0.2), ("b", 0.1)]


def test_cori_merge_by_hand() -> None:
    # C' : a = (0.6-0.5)/(0.6-0.5) = 1, b = 0; D'' = (D' + 0.4 D' C') / 1.4
    merged = merge([A, B], 4, "cori")
    assert [(h.url, round(h.score, 6)) for h in merged] == [
        ("http://a.test/1", 1.0),  # (1 + 0.4) / 1.4
        ("http://b.test/1", 0.714286),  # (1 + 0) / 1.4
        ("http://a.test/2", 0.5),  # (0.5 + 0.2) / 1.4
        ("http://b.test/2", 0.357143),  # 0.5 / 1.4
    ]
    assert cori_merge(0.5, 0.5) == pytest.approx((0.5 + 0.1) / 1.4)
    assert max_norm(3.0, 0.0) == 0.0


def test_engine_max_score_beyond_the_returned_hits_is_used() -> None:
    # the engine's best hit overall was 20 (e.g. on an earlier page): its hits are worth less
    r = result("a", 0.5, [("http://a.test/1", 10.0)], max_score=20.0)
    assert merge([r], 1)[0].score == 0.5


def test_dedupe_by_canonical_url_keeps_the_best_score() -> None:
    a = result("a", 0.5, [("HTTP://Example.COM:80/p?b=2&a=1#top", 4.0), ("http://example.com/q", 8.0)])
    b = result("b", 0.5, [("http://example.com/p?a=1&b=2", 1.0)])
    merged = merge([a, b], 10)
    assert [(h.url, h.engine, h.score) for h in merged] == [
        ("http://example.com/p?a=1&b=2", "b", 1.0),
        ("http://example.com/q", "a", 1.0),
    ]


def test_k_and_unparseable_urls() -> None:
    r = result("a", 0.5, [("not a url", 9.0), ("http://a.test/1", 3.0), ("http://a.test/2", 2.0)])
    assert [h.url for h in merge([r], 1)] == ["http://a.test/1"]
    assert merge([r], 0) == []
    assert merge([], 10) == []
    with pytest.raises(ValueError):
        merge([r], -1)


urls = st.sampled_from([f"http://h{i % 3}.test/{i}" for i in range(8)] + ["http://H0.test/0#x"])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1),
            st.lists(st.tuples(urls, st.floats(0, 100, allow_nan=False)), max_size=8),
        ),
        max_size=4,
    ),
    st.integers(0, 12),
    st.sampled_from(["max", "cori", "global"]),
)
def test_merge_invariants(engines: list[tuple[float, list[tuple[str, float]]]], k: int, method: str) -> None:
    results = [result(f"e{i}", c, hits) for i, (c, hits) in enumerate(engines)]
    merged = merge(results, k, method)  # type: ignore[arg-type]
    assert len(merged) <= k
    assert len({h.url for h in merged}) == len(merged)  # one hit per canonical URL
    assert [h.score for h in merged] == sorted((h.score for h in merged), reverse=True)
    distinct = {u.split("#")[0].lower() for _, hits in engines for u, _ in hits}
    assert len(merged) == min(k, len(distinct))
    assert all(0.0 <= h.score <= 1.0 + 1e-12 for h in merged)
