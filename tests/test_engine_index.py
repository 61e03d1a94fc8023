"""TopicIndex on a real Whoosh index in tmp_path (and in RAM for the property test)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.engine.index import (
    OWNER_LOCK,
    TMP_PREFIX,
    WHOOSH_WRITELOCK,
    Delete,
    IndexBusy,
    IndexLimits,
    InvalidQuery,
    Rejected,
    TopicIndex,
    Upsert,
    host_allowed,
    make_delete,
    make_upsert,
)
from oasis.engine.relevance import idf
from oasis.engine.topic import Topic

TOPIC = Topic(name="space", description="space exploration", keywords=("rocket", "orbit"))
LIMITS = IndexLimits(max_text_chars=1000)


def up(seq: int, url: str, text: str, title: str = "", relevance: float | None = 0.5) -> Upsert:
    op = make_upsert(
        seq=seq, url=url, title=title, text=text, fetch_time=100.0 + seq, relevance=relevance, limits=LIMITS
    )
    assert isinstance(op, Upsert)
    return op


@pytest.fixture
def index(tmp_path: Path) -> TopicIndex:
    ix = TopicIndex.open(tmp_path / "ix", TOPIC, limits=LIMITS)
    yield ix
    ix.close()


def test_add_replace_delete_counts_and_search(index: TopicIndex) -> None:
    r = index.apply([up(1, "http://a.org/1", "rocket launch"), up(2, "http://a.org/2", "cake recipe")])
    assert (r.acked_through, r.added, r.replaced, r.deleted) == (2, 2, 0, 0)
    r = index.apply(
        [
            up(3, "HTTP://A.org:80/1#frag", "bread recipe"),
            make_delete(seq=4, url="http://a.org/2"),
            make_delete(seq=5, url="http://a.org/nothing"),
        ]
    )
    assert (r.acked_through, r.added, r.replaced, r.deleted) == (5, 0, 1, 1)
    assert index.search("rocket").total == 0  # the replaced text is gone
    page = index.search("recipe")
    assert [h.url for h in page.hits] == ["http://a.org/1"]
    assert page.hits[0].fetch_time == 103.0
    # re-adding a deleted URL is an add, not a replace
    assert index.apply([up(6, "http://a.org/2", "again")]).added == 1
    assert index.stats().documents == 2


def test_last_operation_on_a_url_in_a_batch_wins(index: TopicIndex) -> None:
    index.apply(
        [
            up(1, "http://a.org/x", "first"),
            up(2, "http://a.org/x", "second"),
            up(3, "http://a.org/y", "keep"),
            make_delete(seq=4, url="http://a.org/y"),
            make_delete(seq=5, url="http://a.org/z"),
            up(6, "http://a.org/z", "zed"),
        ]
    )
    assert index.stats().documents == 2
    assert index.search("first").total == 0
    assert index.search("second").total == 1
    assert not index.contains("http://a.org/y")
    assert index.contains("http://a.org/z")


def test_title_boost_ranks_title_match_first_and_snippets_highlight(index: TopicIndex) -> None:
    index.apply(
        [
            up(1, "http://a.org/body", "a page that mentions telescope once among other words", title="misc"),
            up(
                2,
                "http://a.org/title",
                "a page that mentions nothing else among other words",
                title="Telescope",
            ),
            up(3, "http://a.org/html", "<b>x</b> & the telescope mirror", title="t"),
        ]
    )
    page = index.search("telescope")
    assert page.total == 3
    assert page.hits[0].url == "http://a.org/title"
    assert page.max_score == pytest.approx(page.hits[0].score)
    assert all(a.score >= b.score for a, b in zip(page.hits, page.hits[1:], strict=False))
    html_hit = next(h for h in page.hits if h.url == "http://a.org/html")
    assert "<b>telescope</b>" in html_hit.snippet
    assert "x&lt;/b&gt; &amp;" in html_hit.snippet  # page text is escaped, only matches are tags


def test_pagination_partitions_the_ranking(index: TopicIndex) -> None:
    index.apply([up(i, f"http://a.org/{i}", "orbit " * (i % 5 + 1) + f"filler{i}") for i in range(23)])
    full = index.search("orbit", limit=100)
    assert full.total == 23 and len(full.hits) == 23
    pages = [index.search("orbit", limit=5, offset=o) for o in range(0, 25, 5)]
    assert [h.url for p in pages for h in p.hits] == [h.url for h in full.hits]
    assert all(p.total == 23 for p in pages)
    assert index.search("orbit", limit=5, offset=40).hits == ()


@pytest.mark.parametrize(
    ("query", "message"),
    [("", "empty"), ("   ", "empty"), ("the and", "no searchable terms"), ("x" * 5000, "limit 4096")],
)
def test_bad_queries(index: TopicIndex, query: str, message: str) -> None:
    with pytest.raises(InvalidQuery, match=message):
        index.search(query)


def test_excluded_and_required_words_as_web_search_reads_them(index: TopicIndex) -> None:
    """``socket -tcp`` searched for "socket" or "tcp" (the ``-`` was dropped), ``-socket`` for "socket", and
    ``socket NOT tcp`` was refused as "a query needs at least one word that is not negated" (Whoosh read it as
    ``socket OR (NOT tcp)``). Now ``-word`` and ``NOT word`` exclude, ``+word`` requires, and a ``-`` inside a
    word (``e-mail``) is part of it."""
    index.apply(
        [
            up(1, "http://a.org/tcp", "socket tcp stream"),
            up(2, "http://a.org/udp", "socket udp datagram"),
            up(3, "http://a.org/only", "tcp stream only"),
            up(4, "http://a.org/mail", "e-mail socket relay"),
        ]
    )

    def urls(query: str) -> set[str]:
        return {h.url.rsplit("/", 1)[1] for h in index.search(query, limit=10).hits}

    assert urls("socket tcp") == {"tcp", "udp", "only", "mail"}  # alternatives
    for query in ("socket -tcp", "socket NOT tcp", "(socket -tcp)", "socket -(tcp OR relay)"):
        assert urls(query) - {"mail"} == {"udp"}, query
    assert urls("socket -tcp -relay") == urls("socket NOT tcp NOT relay") == {"udp"}
    assert urls("socket +tcp") == {"tcp", "only"}  # tcp required, socket ranks
    assert urls("+socket +tcp") == {"tcp"}
    assert urls('stream -"socket tcp"') == {"only"}  # a phrase excluded
    assert urls("e-mail") == {"mail"} and urls("relay -e-mail") == set()
    for query in ("-socket", "NOT socket", "-socket -tcp"):
        with pytest.raises(InvalidQuery, match="at least one word that is not negated"):
            index.search(query)
    for query in ("socket (-tcp)", "(-socket) OR -tcp", "-(-(-socket))"):  # Whoosh raised "Minus"
        with pytest.raises(InvalidQuery, match="a group of -words alone excludes from nothing"):
            index.search(query)


def test_a_query_that_matches_nothing_gets_its_misspelt_words_corrected(index: TopicIndex) -> None:
    """A misspelt query answered "0 results" and nothing more. Now a query with a word the index lacks comes
    back with its unknown words corrected to the nearest the index holds, written as the collection writes
    them, and with how many pages the correction finds: when nothing matched, or when asked (``suggest``:
    the broker asks when no engine holds the word); every reply lists the words the index lacks. A query
    whose words are all known, or with no word near one the index holds, gets none. A typo the stemmer
    cannot reach (isolaton: its stem is not isolation's) is found by the words one edit away."""
    index.apply(
        [
            up(1, "http://a.org/1", "Sockets and connections: a socket connection carries a stream"),
            up(2, "http://a.org/2", "Logistic regression is a linear classifier"),
            up(3, "http://a.org/3", "Regression trees and the regression of rockets"),
        ]
    )
    page = index.search("sokcet conection")
    assert page.total == 0 and page.suggestion == "socket connection" and page.suggestion_matches == 1
    page = index.search("logistc regresion -trees")  # operators and case kept, unknown words corrected
    assert page.suggestion == "logistic regression -trees" and page.suggestion_matches == 1
    assert index.search("Clasifier").suggestion == "classifier"
    index.apply([up(4, "http://a.org/4", "transaction isolation levels")])
    assert index.search("transacton isolaton").suggestion == "transaction isolation"
    # one word alone takes the commonest correction; beside other words, the one found with them
    index.apply([up(10 + i, f"http://b.org/{i}", f"the best choice number{i}") for i in range(25)])
    index.apply([up(40 + i, f"http://c.org/{i}", "gradient boosting trees") for i in range(2)])
    assert index.search("bosting").suggestion == "besting"  # "best": 25 pages, "boost" 2 (x10, a doubling)
    assert index.search("gradint bosting").suggestion == "gradient boosting"
    assert index.search("regression").suggestion == ""  # every word known
    # a word the index lacks beside words it holds: the hits and the word lacked; asked, the correction too
    page = index.search("gradient bosting")
    assert page.total == 2 and page.suggestion == "" and page.unknown == ("bost",)
    page = index.search("gradient bosting", suggest=True)
    assert page.total == 2 and page.suggestion == "gradient boosting" and page.suggestion_matches == 2
    assert index.search("gradient boosting", suggest=True).unknown == ()
    assert index.search("xqzvw").suggestion == ""  # nothing near
    many = " ".join(f"sokcet{i}" for i in range(20))  # at most MAX_CORRECTED words are looked up
    assert index.search(many).total == 0
    # the search's deadline bounds the suggestion too: one already passed corrects nothing
    from oasis.engine import query as qlang

    with index._leased() as searcher:
        q = index.parse_query("sokcet conection")
        surface = lambda term, typed: term  # noqa: E731
        reader = searcher.reader()
        assert qlang.suggestion(q, "sokcet conection", reader, surface) is not None
        assert qlang.suggestion(q, "sokcet conection", reader, surface, deadline=0.0) is None


def test_bad_limit_and_offset(index: TopicIndex) -> None:
    with pytest.raises(InvalidQuery, match="limit"):
        index.search("a1", limit=0)
    with pytest.raises(InvalidQuery, match="offset"):
        index.search("a1", offset=-1)


def test_invalid_documents_are_rejected_with_reasons() -> None:
    cases = {
        "": "empty URL",
        "ftp://a.org/x": "not http or https",
        "http://": "no host",
    }
    for url, reason in cases.items():
        r = make_upsert(seq=1, url=url, title="", text="t", fetch_time=0, relevance=None, limits=LIMITS)
        assert isinstance(r, Rejected) and reason in r.reason
    big = make_upsert(
        seq=2, url="http://a.org/", title="", text="x" * 1001, fetch_time=0, relevance=None, limits=LIMITS
    )
    assert isinstance(big, Rejected) and "limit 1000" in big.reason
    bad_r = make_upsert(
        seq=3, url="http://a.org/", title="", text="", fetch_time=0, relevance=1.5, limits=LIMITS
    )
    assert isinstance(bad_r, Rejected) and "relevance" in bad_r.reason
    foreign = make_upsert(
        seq=4,
        url="http://evil.com/",
        title="",
        text="",
        fetch_time=0,
        relevance=None,
        limits=LIMITS,
        allowed_hosts=frozenset({"a.org"}),
    )
    assert isinstance(foreign, Rejected) and "'evil.com' is not in --allowed-hosts (a.org)" in foreign.reason
    assert isinstance(make_delete(seq=5, url="mailto:x@y"), Rejected)


def test_host_allow_list() -> None:
    allowed = frozenset({"a.org", "127.0.0.1:8080"})
    assert host_allowed("http://a.org/x", allowed)
    assert host_allowed("http://docs.a.org/x", allowed)
    assert host_allowed("http://127.0.0.1:8080/x", allowed)
    assert not host_allowed("http://127.0.0.1:9090/x", allowed)
    assert not host_allowed("http://nota.org/x", allowed)
    assert host_allowed("http://anything/", frozenset())


def test_rejected_ops_are_acknowledged_and_nothing_else_lost(index: TopicIndex) -> None:
    bad = Rejected(seq=7, url="ftp://x", reason="invalid")
    r = index.apply([up(5, "http://a.org/1", "rocket"), bad])
    assert r.acked_through == 7 and r.added == 1 and r.rejected == (bad,)
    assert index.apply([bad]).acked_through == 7


def test_engine_scores_pages_without_relevance(index: TopicIndex) -> None:
    index.apply(
        [
            up(1, "http://a.org/1", "rocket to orbit", title="Rocket", relevance=None),
            up(2, "http://a.org/2", "cake", relevance=None),
            up(3, "http://a.org/3", "xylophone", relevance=0.25),
        ]
    )
    hits = {h.url: h.relevance for h in index.search("rocket OR cake OR xylophone", limit=10).hits}
    assert hits["http://a.org/3"] == 0.25
    assert hits["http://a.org/2"] == 0.0
    assert hits["http://a.org/1"] > 0.5
    assert index.score([("Rocket", "rocket to orbit")]) == [
        index.relevance_model().score("Rocket", "rocket to orbit")
    ]
    # the model's IDF follows the collection: 3 documents now
    assert index.relevance_model().n_docs == 3


def test_summary_counts_by_hand(index: TopicIndex) -> None:
    index.apply(
        [
            up(1, "http://a.org/1", "apple apple banana"),
            up(2, "http://a.org/2", "apple orbit"),
            up(3, "http://a.org/3", "cherry"),
        ]
    )
    s = index.summary(max_terms=10)
    assert s.documents == 3 and s.topic == "space" and s.keywords == ("rocket", "orbit")
    assert s.total_terms == 6
    stats = {t.term: (t.df, t.cf) for t in s.terms}
    assert stats == {"appl": (2, 3), "banana": (1, 1), "orbit": (1, 1), "cherri": (1, 1)}
    assert s.terms[0].term == "orbit"  # topic terms first, then by df
    assert s.terms[1].term == "appl"
    assert len(index.summary(max_terms=2).terms) == 2


def test_reopen_keeps_documents_and_second_owner_is_refused(tmp_path: Path) -> None:
    ix = TopicIndex.open(tmp_path / "ix", TOPIC)
    ix.apply([up(1, "http://a.org/1", "rocket")])
    with pytest.raises(IndexBusy, match=f"pid {os.getpid()}"):
        TopicIndex.open(tmp_path / "ix", TOPIC)
    ix.close()
    again = TopicIndex.open(tmp_path / "ix", TOPIC)
    assert again.contains("http://a.org/1")
    assert again.stats().index_bytes > 0
    again.close()


def test_every_model_build_has_its_own_name_across_rebuilds_and_reopens(tmp_path: Path) -> None:
    """A Score reply names the model's build, and a cache of scores (the living cluster's evaluator) is kept
    while that name is the engine's, so no two builds may share one: not a rebuild at a collection size seen
    before (1 -> 2 -> 1 documents), not the same index reopened (another process's builds)."""
    ix = TopicIndex.open(tmp_path / "ix", TOPIC)
    names = []
    for ops in (
        [up(1, "http://a.org/1", "rocket")],
        [up(2, "http://a.org/2", "orbit")],
        [Delete(seq=3, url="http://a.org/2")],
    ):
        ix.apply(ops)
        ix.stats()  # (a read commits what was applied; the next model is rebuilt from it)
        _, model = ix.score_with_model([("", "rocket")])
        names.append((model.n_docs, model.build))
    ix.close()
    again = TopicIndex.open(tmp_path / "ix", TOPIC)
    _, model = again.score_with_model([("", "rocket")])
    names.append((model.n_docs, model.build))
    again.close()
    assert [n for n, _ in names] == [1, 2, 1, 1]  # two sizes seen twice ...
    assert len({b for _, b in names}) == 4 and all(names)  # ... four builds, four names


def test_leftovers_of_a_dead_writer_are_cleared(tmp_path: Path) -> None:
    d = tmp_path / "ix"
    ix = TopicIndex.open(d, TOPIC)
    ix.apply([up(1, "http://a.org/1", "rocket")])
    ix.close()
    (d / f"{TMP_PREFIX}99999").mkdir()
    (d / f"{TMP_PREFIX}99999" / "junk").write_text("x")
    (d / WHOOSH_WRITELOCK).write_text("")  # a lock file without a holder
    (d / OWNER_LOCK).write_text("99999")
    ix = TopicIndex.open(d, TOPIC)
    assert not (d / f"{TMP_PREFIX}99999").exists()
    assert ix.apply([up(2, "http://a.org/2", "orbit")]).added == 1
    assert ix.stats().documents == 2  # a read commits the logged batch
    assert not any(p.name.startswith(TMP_PREFIX) for p in d.iterdir())  # scratch removed after commits
    ix.close()


urls = st.sampled_from([f"http://h.org/{i}" for i in range(6)])
ops = st.lists(
    st.tuples(st.booleans(), urls, st.sampled_from(["rocket", "orbit", "cake"])), min_size=1, max_size=12
)


@settings(max_examples=25, deadline=None)
@given(st.lists(ops, min_size=1, max_size=4))
def test_index_matches_a_dict_after_any_batches(batches: list[list[tuple[bool, str, str]]]) -> None:
    ix = TopicIndex.in_memory(TOPIC)
    model: dict[str, str] = {}
    seq = 0
    try:
        for batch in batches:
            applied: list[Upsert | Delete] = []
            before = dict(model)
            for is_upsert, url, word in batch:
                seq += 1
                if is_upsert:
                    applied.append(up(seq, url, word))
                    model[url] = word
                else:
                    applied.append(Delete(seq=seq, url=url))
                    model.pop(url, None)
            r = ix.apply(applied)
            assert r.acked_through == seq
            assert r.added == len(model.keys() - before.keys())
            assert r.deleted == len(before.keys() - model.keys())
            assert ix.stats().documents == len(model)
        for url, word in model.items():
            doc = ix.document(url)
            assert doc is not None and doc["text"] == word
    finally:
        ix.close()


def test_collection_statistics_add_up_across_commits(tmp_path: Path) -> None:
    from collections import Counter

    from oasis.runtime.text import tokenize

    texts = [f"rocket orbit word{i % 3} word{i % 5} shared" for i in range(40)]
    ix = TopicIndex.open(tmp_path / "ix", TOPIC, stats_max_age=0.0)
    try:
        for start in range(0, 40, 7):  # 6 commits: several segments, some merged by Whoosh
            ix.apply([up(i, f"http://a.org/{i}", texts[i]) for i in range(start, min(start + 7, 40))])
        df: Counter[str] = Counter()
        cf: Counter[str] = Counter()
        for t in texts:
            tokens = tokenize(t)
            df.update(set(tokens))
            cf.update(tokens)
        s = ix.summary(max_terms=1000)
        assert {t.term: (t.df, t.cf) for t in s.terms} == {t: (df[t], cf[t]) for t in df}
        assert s.total_terms == sum(cf.values())
        model = ix.relevance_model()
        assert model.n_docs == 40
        assert model.idf_of["word1"] == pytest.approx(idf(40, df["word1"]))
    finally:
        ix.close()
