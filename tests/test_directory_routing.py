"""CORI resource selection: hand-worked numbers, skipping, query analysis."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.directory.analysis import InvalidQuery, analyse, check_query
from oasis.directory.registry import EngineRecord, Summary, TermStats
from oasis.directory.routing import cori_belief, cori_i, cori_t, route


def engine(name: str, cw: int, terms: dict[str, int], keywords: tuple[str, ...] = ()) -> EngineRecord:
    return EngineRecord(
        name=name,
        address=f"127.0.0.1:{5000 + len(name)}",
        summary=Summary(
            topic=name,
            documents=100,
            total_terms=cw,
            terms={t: TermStats(df=df, cf=2 * df) for t, df in terms.items()},
            keywords=keywords,
        ),
        expires_at=math.inf,
    )


def test_cori_t_by_hand() -> None:
    # df=10, cw=1000, avg_cw=2000: 10 / (10 + 50 + 150 * 0.5) = 10 / 135
    assert cori_t(10, 1000, 2000.0) == pytest.approx(0.0740741, rel=1e-5)
    # df=30, cw=3000, avg_cw=2000: 30 / (30 + 50 + 225) = 30 / 305
    assert cori_t(30, 3000, 2000.0) == pytest.approx(0.0983607, rel=1e-5)
    assert cori_t(0, 1000, 2000.0) == 0.0


def test_cori_i_by_hand() -> None:
    # |C|=3, cf=2: log(3.5 / 2) / log(4) = 0.5596158 / 1.3862944
    assert cori_i(3, 2) == pytest.approx(0.4036775, rel=1e-5)
    # |C|=3, cf=1: log(3.5) / log(4) = 1.2527630 / 1.3862944
    assert cori_i(3, 1) == pytest.approx(0.9036775, rel=1e-5)
    with pytest.raises(ValueError):
        cori_i(3, 0)


def test_cori_belief_by_hand() -> None:
    # 0.4 + 0.6 * T * I
    assert cori_belief(0.5, 0.5) == pytest.approx(0.55)
    assert cori_belief(0.0, 0.9) == pytest.approx(0.4)


def test_route_ranks_by_hand_worked_beliefs_and_skips_engines_without_query_terms() -> None:
    a = engine("a", 1000, {"databas": 10})
    b = engine("b", 3000, {"databas": 30})
    c = engine("c", 2000, {"python": 50})
    result = route("Databases", [a, b, c])
    # |C| = 3, cf(databas) = 2, avg_cw = 2000; see the two tests above for T and I
    assert [e.name for e in result.engines] == ["b", "a"]
    assert result.engines[0].score == pytest.approx(0.4 + 0.6 * 0.0983607 * 0.4036775, rel=1e-5)
    assert result.engines[1].score == pytest.approx(0.4 + 0.6 * 0.0740741 * 0.4036775, rel=1e-5)
    assert result.skipped == ("c",)
    assert result.engines[0].address == b.address
    # the skipped with their addresses: the broker asks them for a "did you mean" when nothing matched
    assert [(e.name, e.address, e.score) for e in result.skipped_engines] == [("c", c.address, 0.0)]


def test_query_belief_is_the_mean_over_terms() -> None:
    a = engine("a", 1000, {"databas": 10})
    b = engine("b", 1000, {"python": 10})
    result = route("python databases", [a, b])
    # each engine has one of the two terms: (belief(term) + 0.4) / 2, and both are symmetric
    t = 10 / (10 + 50 + 150)
    i = math.log(2.5 / 1) / math.log(3)
    expected = (0.4 + 0.6 * t * i + 0.4) / 2
    assert [e.score for e in result.engines] == pytest.approx([expected, expected])
    assert [e.name for e in result.engines] == ["a", "b"]  # ties broken by name


def test_k_keeps_the_best_and_keywords_count_as_shared_terms() -> None:
    a = engine("a", 1000, {"databas": 10})
    b = engine("b", 1000, {"databas": 40})
    c = engine("c", 1000, {}, keywords=("Databases",))
    result = route("database", [a, b, c], k=2)
    assert [e.name for e in result.engines] == ["b", "a"]
    assert result.skipped == ()  # c shares the term through its keywords; it is ranked out by k, not skipped
    assert [e.name for e in route("database", [a, b, c]).engines] == ["b", "a", "c"]


def test_stop_word_only_query_skips_everything() -> None:
    a = engine("a", 1000, {"databas": 10})
    assert route("the and of", [a]).skipped == ("a",)
    assert route("the and of", [a]).engines == ()
    assert route("anything", []).engines == ()


def test_query_no_summary_knows_goes_to_every_engine_largest_first() -> None:
    small = engine("small", 1000, {"databas": 10})
    big = EngineRecord(
        name="big", address="127.0.0.1:9", summary=Summary(documents=500, total_terms=10), expires_at=math.inf
    )
    result = route("zymurgy", [small, big])
    assert [e.name for e in result.engines] == ["big", "small"]  # 500 documents before 100
    assert result.skipped == ()
    assert [e.name for e in route("zymurgy", [small, big], k=1).engines] == ["big"]
    # as soon as one engine lists a term, the others are skipped again
    assert route("zymurgy databases", [small, big]).skipped == ("big",)


def test_analysis_matches_the_engines_stemming_analyzer() -> None:
    assert analyse("The Running of QUERIES in databases, and indexes") == (
        "runn",
        "queri",
        "databas",
        "index",
    )
    assert analyse("index indexes") == ("index",)


def test_check_query() -> None:
    assert check_query("  sql  ") == "sql"
    with pytest.raises(InvalidQuery, match="empty"):
        check_query("   ")
    with pytest.raises(InvalidQuery, match="longer than"):
        check_query("x" * 100_000)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["sql", "tabl", "python", "modul"]), st.integers(1, 1000), max_size=4
        ),
        min_size=1,
        max_size=5,
    ),
    st.integers(1, 10_000),
)
def test_beliefs_lie_in_the_cori_range_and_more_documents_never_rank_lower(
    term_sets: list[dict[str, int]], cw: int
) -> None:
    engines = [engine(f"e{i}", cw, terms) for i, terms in enumerate(term_sets)]
    result = route("sql tables", engines)
    assert {e.name for e in result.engines} | set(result.skipped) == {e.name for e in engines}
    for e in result.engines:
        assert 0.4 <= e.score <= 1.0
    scores = [e.score for e in result.engines]
    assert scores == sorted(scores, reverse=True)
    # with equal cw, belief is monotone in df of the single shared term
    single = [engine("x", cw, {"sql": 5}), engine("y", cw, {"sql": 50})]
    assert [e.name for e in route("sql", single).engines] == ["y", "x"]
