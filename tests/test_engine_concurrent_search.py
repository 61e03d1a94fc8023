"""Concurrent searches on one engine index: a Whoosh reader's files are shared objects read by seek +
read, so two threads searching through one searcher read at each other's positions (corrupt postings and
stored fields: "invalid load key", "Error -5 while decompressing data"). Each search runs on a searcher of
its own."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from oasis.engine.index import IndexLimits, TopicIndex, make_upsert
from oasis.engine.topic import Topic

TOPIC = Topic(name="t", description="concurrency", keywords=("alpha", "beta"))
WORDS = [f"w{i}" for i in range(2000)] + ["alpha", "beta", "gamma"]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[TopicIndex]:
    rng = random.Random(0)
    ix = TopicIndex.open(tmp_path / "ix", TOPIC)
    for b in range(3):
        ops = []
        for i in range(150):
            n = b * 150 + i
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(200, 1500)))
            op = make_upsert(
                seq=i, url=f"http://h.org/{n}", title=f"page {n} alpha", text=text, fetch_time=1.0,
                relevance=0.5, limits=IndexLimits(),
            )  # fmt: skip
            ops.append(op)
        ix.apply(ops)
    ix.close()
    ix = TopicIndex.open(tmp_path / "ix", TOPIC)
    yield ix
    ix.close()


def test_concurrent_searches_answer_as_one_search_alone(index: TopicIndex) -> None:
    queries = [f"{WORDS[i]} {WORDS[(i * 7) % 2000]}" for i in range(40)]
    expected = {q: index.search(q, limit=10) for q in queries}  # one at a time
    errors: list[str] = []
    wrong: list[str] = []
    done = [0]
    stop = time.monotonic() + 4.0
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # thread switches inside Whoosh's reads, as under load

    def work(seed: int) -> None:
        r = random.Random(seed)
        while time.monotonic() < stop:
            q = r.choice(queries)
            try:
                page = index.search(q, limit=10)
            except Exception as exc:  # the bug: corrupt reads raise from Whoosh's decoders
                errors.append(repr(exc)[:120])
                continue
            if page != expected[q]:
                wrong.append(q)
            done[0] += 1

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        sys.setswitchinterval(switch)
    assert done[0] >= 50
    assert not errors, errors[:3]
    assert not wrong, wrong[:3]


def test_a_commit_during_concurrent_searches_keeps_them_correct(index: TopicIndex) -> None:
    """Searches keep their own searcher across a commit; later searches see the new document."""
    stop = threading.Event()
    errors: list[str] = []

    def work() -> None:
        while not stop.is_set():
            try:
                index.search("alpha w5", limit=10)
            except Exception as exc:
                errors.append(repr(exc)[:120])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for n in range(5):
            op = make_upsert(
                seq=0, url=f"http://new.org/{n}", title="fresh delta", text="delta " * 50, fetch_time=2.0,
                relevance=0.5, limits=IndexLimits(),
            )  # fmt: skip
            index.apply([op])
            assert index.search("delta", limit=10).total == n + 1
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not errors, errors[:3]
