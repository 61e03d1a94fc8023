"""The topic relevance model r(i) in [0, 1] (pure: imports neither grpc nor the stubs).

papers/004 scores pages with "the standard vector space model" (its reference 6, a topic filter). We use
the SMART ``ltc`` weighting for both the topic profile and the page: a term's weight is
``(1 + ln tf) * idf``, and r(i) is the cosine of the two weight vectors. All weights are non-negative, so
the cosine lies in [0, 1].

* The topic profile is the description plus the keywords; every occurrence of a keyword term counts
  ``keyword_weight`` times, so the keywords dominate a long description.
* IDF comes from the engine's collection statistics (Whoosh document frequencies), smoothed so that an empty
  collection gives idf = 1 for every term (then r is a plain TF cosine), and a term the collection has never
  seen gets the largest idf (df = 0).
* Page and profile are tokenised by the same Whoosh ``StemmingAnalyzer`` that the index uses
  (:mod:`oasis.runtime.text`), so that
  "crawling" in the topic matches "crawled" in a page, exactly as a search would.

The replay harness uses this module in-process (``RelevanceModel.fit_corpus``); the engine exposes the
same model over gRPC (``Engine.Score``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from oasis.engine.topic import Topic
from oasis.runtime.text import remembered_counts, tokenize

DEFAULT_KEYWORD_WEIGHT = 3.0
DEFAULT_TITLE_WEIGHT = 2.0


def term_frequencies(text: str, weight: float = 1.0) -> Counter[str]:
    counts: Counter[str] = Counter(tokenize(text))  # counted in C (a Python loop was half of a Score call)
    if weight != 1.0:
        for k in counts:
            counts[k] = counts[k] * weight  # type: ignore[assignment]
    return counts


def idf(n_docs: int, df: int) -> float:
    """Smoothed inverse document frequency: idf(t) = ln((1 + N) / (1 + df_t)) + 1.

    N: documents in the collection; df_t: documents containing t. Always >= 1 when df_t <= N; equals 1 for
    an empty collection (N = 0) and for a term in every document.
    """
    if n_docs < 0 or df < 0:
        raise ValueError(f"N and df must be >= 0, got N={n_docs}, df={df}")
    return math.log((1.0 + n_docs) / (1.0 + df)) + 1.0


def tf_weight(tf: float) -> float:
    """Sublinear term frequency (SMART 'l'): 1 + ln tf for tf > 0, else 0."""
    if tf < 0:
        raise ValueError(f"tf must be >= 0, got {tf}")
    return 1.0 + math.log(tf) if tf > 0 else 0.0


def ltc_vector(tf: Mapping[str, float], idf_of: Mapping[str, float], default_idf: float) -> dict[str, float]:
    """w_t = (1 + ln tf_t) * idf_t for every term with tf_t > 0 (not normalised)."""
    return {t: tf_weight(f) * idf_of.get(t, default_idf) for t, f in tf.items() if f > 0}


def cosine(u: Mapping[str, float], v: Mapping[str, float]) -> float:
    """cos(u, v) = u.v / (|u| |v|); 0 when either vector is zero. Clamped to [0, 1] for non-negative input."""
    nu = math.sqrt(sum(w * w for w in u.values()))
    nv = math.sqrt(sum(w * w for w in v.values()))
    if nu == 0.0 or nv == 0.0:
        return 0.0
    small, large = (u, v) if len(u) <= len(v) else (v, u)
    dot = sum(w * large.get(t, 0.0) for t, w in small.items())
    return min(1.0, max(0.0, dot / (nu * nv)))


def idf_table(n_docs: int, df: Mapping[str, int]) -> dict[str, float]:
    """idf for every term of a collection of ``n_docs`` documents with document frequencies ``df``."""
    return {t: idf(n_docs, d) for t, d in df.items()}


@dataclass(frozen=True)
class RelevanceModel:
    """A fitted topic profile: r(page) = cos(ltc(page), ltc(profile)) in [0, 1]."""

    topic: Topic
    idf_of: Mapping[str, float]
    default_idf: float
    profile: Mapping[str, float]
    title_weight: float = DEFAULT_TITLE_WEIGHT
    n_docs: int = 0
    _profile_norm: float = field(default=0.0, repr=False)
    build: str = ""  # which build of the model this is (the engine's ``Score`` replies name it)

    @classmethod
    def from_topic(
        cls,
        topic: Topic,
        idf: Mapping[str, float] | None = None,
        *,
        default_idf: float | None = None,
        keyword_weight: float = DEFAULT_KEYWORD_WEIGHT,
        title_weight: float = DEFAULT_TITLE_WEIGHT,
        n_docs: int = 0,
    ) -> RelevanceModel:
        """Profile from ``topic`` with the given IDF table (None: idf = 1 everywhere, an empty collection).

        ``default_idf`` is the idf of a term missing from the table; by default the largest idf in it
        (an unseen term is at least as rare as the rarest seen one), or 1 for an empty table.
        """
        if keyword_weight <= 0 or title_weight <= 0:
            raise ValueError("keyword_weight and title_weight must be > 0")
        table: Mapping[str, float] = idf if idf is not None else {}
        if default_idf is None:
            default_idf = max(table.values(), default=1.0)
        if default_idf <= 0:
            raise ValueError(f"default_idf must be > 0, got {default_idf}")
        tf = term_frequencies(topic.description)
        for kw in topic.keywords:
            tf.update(term_frequencies(kw, keyword_weight))
        profile = ltc_vector(tf, table, default_idf)
        if not profile:
            raise ValueError(f"topic {topic.name!r} has no indexable terms (only stop words?)")
        norm = math.sqrt(sum(w * w for w in profile.values()))
        return cls(topic, table, default_idf, profile, title_weight, n_docs, norm)

    @classmethod
    def fit_corpus(cls, topic: Topic, texts: Iterable[str], **kwargs: float) -> RelevanceModel:
        """Derive IDF from a collection of page texts (each text one document), then build the profile."""
        df: Counter[str] = Counter()
        n = 0
        for text in texts:
            n += 1
            df.update(set(tokenize(text)))
        table = idf_table(n, df)
        return cls.from_topic(topic, table, default_idf=idf(n, 0), n_docs=n, **kwargs)

    def page_vector(self, title: str, text: str, *, remember: bool = False) -> dict[str, float]:
        """``remember``: keep the analysis of ``text`` for indexing a text that starts with it
        (:func:`~oasis.runtime.text.remembered_counts`: the same frequencies, in the same order, as
        :func:`term_frequencies`)."""
        tf = remembered_counts(text) if remember else term_frequencies(text)
        if title:
            tf.update(term_frequencies(title, self.title_weight))
        return ltc_vector(tf, self.idf_of, self.default_idf)

    def score(self, title: str, text: str, *, remember: bool = False) -> float:
        """r(i) in [0, 1]: cosine between the page (title weighted ``title_weight``) and the topic profile
        (``remember``: see :meth:`page_vector`)."""
        return cosine(self.page_vector(title, text, remember=remember), self.profile)

    def score_text(self, text: str) -> float:
        return self.score("", text)

    @property
    def profile_terms(self) -> tuple[str, ...]:
        """Profile terms, heaviest first."""
        return tuple(sorted(self.profile, key=lambda t: (-self.profile[t], t)))
