"""Engine.ListDocuments over a real gRPC server: what the engine holds (URL, fetch time, relevance), paged."""

from __future__ import annotations

from robot_testweb import LocalEngine

from oasis.runtime.clients import EngineClient
from oasis.runtime.engine_types import IndexDocument


def test_list_documents_pages_through_the_collection(engine: LocalEngine) -> None:
    client = EngineClient(engine.address)
    try:
        docs = [
            IndexDocument(
                url=f"http://a.test/p{i:02d}.html", title=f"P{i}", text="crawler", fetch_time=100.0 + i,
                relevance=i / 10,
            )
            for i in range(7)
        ]  # fmt: skip
        client.index(docs)
        client.index([IndexDocument(url="http://a.test/p03.html", delete=True)])
        listed = client.list_documents(page=2)  # four round trips of at most two documents
        assert [d.url for d in listed] == [d.url for d in docs if not d.url.endswith("p03.html")]
        p5 = next(d for d in listed if d.url.endswith("p05.html"))
        assert (p5.title, p5.fetch_time, p5.relevance) == ("P5", 105.0, 0.5)
    finally:
        client.close()
