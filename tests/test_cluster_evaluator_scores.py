"""The live evaluator's relevance scores follow the engine's own model (a real engine on loopback).

The engine takes its relevance model's IDF from its own collection and rebuilds it when the collection
changed size; the evaluator caches each page version's score, and keeps the cache only while the model
that scored it is the engine's model (each Score reply names its build). Session 12: a cache that copied
the engine's rebuild rule from the outside drifted from it, and a living-cluster sample reported recall 1.0
where the engine's scores now gave 0.945."""

from __future__ import annotations

from pathlib import Path

from robot_testweb import LocalEngine

from oasis.cluster.evaluator import LiveEvaluator
from oasis.runtime.clients import EngineClient, IndexDocument

PAGES = {
    ("http://web.test/a", 1): ("SQL indexes", "a btree index speeds up a sql query on a large table"),
    ("http://web.test/b", 1): ("Cakes", "a cake recipe with a table of ingredients and a query or two"),
}
URLS = [url for url, _ in PAGES]


def test_score_replies_name_the_model_and_the_evaluator_rescoring_follows_it(
    engine: LocalEngine, tmp_path: Path
) -> None:
    client = EngineClient(engine.address, timeout=10)
    try:
        texts = list(PAGES.values())
        scores, model = client.score_with_model(texts)
        assert model == engine.index.relevance_model().build != "" and scores == client.score(texts)
        evaluator = LiveEvaluator(tmp_path, min_relevance=0.0)
        evaluator._texts.update(PAGES)
        live = {url: (version, 0.0) for url, version in PAGES}
        assert evaluator._scores("databases", client, live) == dict(zip(URLS, scores, strict=True))
        # the collection grows: the engine rebuilds its model's IDF (below 100 documents, on any change)
        client.index(
            IndexDocument(url=f"http://web.test/d{i}", title="sql", text="sql database table", fetch_time=1.0)
            for i in range(20)
        )
        assert client.document_count() == 20  # (waits for the commit that marks the model stale)
        now, rebuilt = client.score_with_model(texts)
        assert rebuilt != model and now != scores  # the same texts score differently under the new IDF
        assert engine.index.relevance_model().n_docs == 20
        # no new version of either page: the evaluator's cache is of the old model, and is not used
        assert evaluator._scores("databases", client, live) == dict(zip(URLS, now, strict=True))
        assert evaluator._model["databases"] == rebuilt
    finally:
        client.close()
