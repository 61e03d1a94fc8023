"""Unit tests of the topic relevance model (pure; no grpc)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.engine.relevance import RelevanceModel, cosine, idf, ltc_vector, tf_weight
from oasis.engine.topic import InvalidTopic, Topic
from oasis.runtime.text import tokenize

SPACE = Topic(name="space", description="Space exploration and rockets", keywords=("NASA", "orbit", "rocket"))


def test_idf_hand_worked() -> None:
    # idf = ln((1+N)/(1+df)) + 1
    assert idf(0, 0) == pytest.approx(1.0)
    assert idf(9, 4) == pytest.approx(math.log(10 / 5) + 1)
    assert idf(9, 9) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        idf(-1, 0)


def test_tf_weight_and_cosine_hand_worked() -> None:
    assert tf_weight(1) == 1.0
    assert tf_weight(math.e) == pytest.approx(2.0)
    assert tf_weight(0) == 0.0
    # (1,1) . (1,0) / (sqrt2 * 1) = 1/sqrt2
    assert cosine({"a": 1.0, "b": 1.0}, {"a": 1.0}) == pytest.approx(1 / math.sqrt(2))
    assert cosine({}, {"a": 1.0}) == 0.0
    assert ltc_vector({"a": 1, "b": math.e}, {"a": 2.0}, 3.0) == pytest.approx({"a": 2.0, "b": 6.0})


def test_empty_collection_score_is_tf_cosine_by_hand() -> None:
    topic = Topic(name="t", keywords=("rocket",))
    model = RelevanceModel.from_topic(topic, None)
    # profile {rocket: 1}; page "rocket orbit": {rocket:1, orbit:1} -> 1/sqrt(2)
    assert model.score("", "rocket orbit") == pytest.approx(1 / math.sqrt(2))
    assert model.score("", "rocket") == pytest.approx(1.0)
    assert model.score("", "cooking recipes") == 0.0


def test_keywords_outweigh_description_and_title_counts_double() -> None:
    topic = Topic(name="t", description="orbit", keywords=("rocket",))
    model = RelevanceModel.from_topic(topic, None, keyword_weight=3.0)
    # profile weights: orbit 1, rocket 1 + ln 3
    assert model.profile["rocket"] == pytest.approx(1 + math.log(3))
    assert model.score("", "rocket") > model.score("", "orbit")
    # title weight 2: tf(rocket) = 2 in the title -> weight 1 + ln 2 vs body weight 1 -> same direction
    assert model.score("rocket", "orbit") > model.score("", "rocket orbit")


def test_idf_downweights_common_terms() -> None:
    topic = Topic(name="t", keywords=("rocket", "the science"))
    corpus = ["science news today", "science of cooking", "science and rocket launch", "science fair"]
    model = RelevanceModel.fit_corpus(topic, corpus)
    assert model.n_docs == 4
    assert model.idf_of["scienc"] == pytest.approx(idf(4, 4))
    assert model.idf_of["rocket"] == pytest.approx(idf(4, 1))
    assert model.score("", "rocket") > model.score("", "science")
    flat = RelevanceModel.from_topic(topic, None)
    assert flat.score("", "rocket") == pytest.approx(flat.score("", "science"))


def test_relevant_page_beats_irrelevant_page() -> None:
    model = RelevanceModel.from_topic(SPACE)
    on = model.score("NASA rocket launch", "The rocket reached orbit; NASA engineers explore space.")
    off = model.score("Cake recipes", "Flour, sugar and butter make a fine cake for a birthday.")
    assert on > 0.3 > off == 0.0


def test_topic_validation() -> None:
    with pytest.raises(InvalidTopic):
        Topic(name=" ")
    with pytest.raises(InvalidTopic):
        Topic(name="x", description="", keywords=(" ", ""))
    t = Topic.parse("space", "d", " NASA, nasa ,orbit,,")
    assert t.keywords == ("NASA", "orbit")
    with pytest.raises(ValueError, match="no indexable terms"):
        RelevanceModel.from_topic(Topic(name="x", keywords=("the", "and")))


words = st.sampled_from(["rocket", "orbit", "nasa", "cake", "flour", "space", "launch", "the", "bird"])


@settings(max_examples=60, deadline=None)
@given(st.lists(words, max_size=30), st.lists(words, max_size=10), st.lists(st.lists(words, max_size=8)))
def test_score_in_unit_interval_and_zero_without_shared_terms(
    page: list[str], title: list[str], corpus: list[list[str]]
) -> None:
    model = RelevanceModel.fit_corpus(SPACE, [" ".join(d) for d in corpus])
    r = model.score(" ".join(title), " ".join(page))
    assert 0.0 <= r <= 1.0
    # a page sharing no term with the profile scores exactly 0
    if not set(tokenize(" ".join(page + title))) & set(model.profile):
        assert r == 0.0


def test_relevance_module_imports_without_grpc(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['grpc'] = None\n"
        "from oasis.engine.relevance import RelevanceModel\n"
        "from oasis.engine.topic import Topic\n"
        "print(RelevanceModel.from_topic(Topic(name='t', keywords=('a1',))).score('', 'a1'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) == pytest.approx(1.0)
