"""The engine's index files: :class:`PositionedFileIO` (a writer's position without ``lseek``) reports the
true position through any mix of buffered writes and seeks, and an index written through it holds exactly
what one written through Whoosh's own ``FileStorage`` holds."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from whoosh.filedb.filestore import FileStorage

from oasis.engine.index import DurableFileStorage, PositionedFileIO, make_schema

steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.binary(min_size=0, max_size=9000)),
        st.tuples(st.just("seek"), st.integers(min_value=0, max_value=20000)),
        st.tuples(st.just("tell"), st.just(b"")),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_the_position_is_the_files_true_position(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, object]]
) -> None:
    path = tmp_path_factory.mktemp("f") / "data.bin"
    model = io.BytesIO()
    with io.BufferedWriter(PositionedFileIO(str(path)), buffer_size=4096) as f:
        for op, arg in ops:
            if op == "write":
                assert isinstance(arg, bytes)
                assert f.write(arg) == len(arg)
                model.write(arg)
            elif op == "seek":
                assert isinstance(arg, int)
                assert f.seek(arg) == model.seek(arg)
            else:
                assert f.tell() == model.tell()
            assert f.tell() == model.tell()
        f.flush()
        assert os.lseek(f.fileno(), 0, os.SEEK_CUR) == model.tell()  # the kernel agrees
    assert path.read_bytes() == model.getvalue()


def test_an_index_written_through_it_equals_one_written_by_whoosh(tmp_path: Path) -> None:
    docs = [
        dict(url=f"http://a.test/{i}", title=f"page {i}", fetch_time=float(i), relevance=i / 50,
             text=" ".join(f"w{(i * j) % 97}" for j in range(300)))
        for i in range(50)
    ]  # fmt: skip
    ours = DurableFileStorage(str(tmp_path / "ours")).create()
    with ours.create_file("probe") as probe:  # the engine's storage writes through it
        assert isinstance(probe.file.raw, PositionedFileIO)
    contents = []
    for storage in (DurableFileStorage(str(tmp_path / "ours")), FileStorage(str(tmp_path / "whoosh"))):
        storage.create()
        ix = storage.create_index(make_schema())
        for half in (docs[:25], docs[25:]):  # two segments
            with ix.writer() as w:
                for d in half:
                    w.add_document(**d)
        with ix.searcher() as s:
            postings = {
                (field, term): list(s.postings(field, term).items_as("positions"))
                for field, term in s.reader().all_terms()
                if field in ("title", "text")
            }
            stored = sorted((d["url"], d["title"], d["text"], d["relevance"]) for d in s.all_stored_fields())
            contents.append((s.doc_count(), postings, stored))
        ix.close()
    assert contents[0] == contents[1] and contents[0][0] == 50


def test_segments_flushed_with_cached_field_lengths_equal_whooshs(tmp_path: Path) -> None:
    """Nine commits (Whoosh merges the small segments on the way) with replacements: the same postings,
    field lengths and BM25F scores as Whoosh's own writer."""
    from whoosh import scoring
    from whoosh.qparser import QueryParser

    from oasis.engine.index import _SegmentWriter

    def doc(i: int, version: int) -> dict[str, object]:
        words = " ".join(f"w{(i * j + version) % 89}" for j in range(20 + (i * 7) % 150))
        return dict(
            url=f"http://a.test/{i}", title=f"page {i} w{i % 5}", text=words, fetch_time=0.0, relevance=0.1
        )

    contents = []
    for name, make in (("ours", _SegmentWriter), ("whoosh", None)):
        storage = FileStorage(str(tmp_path / name)).create()
        ix = storage.create_index(make_schema())
        for commit in range(9):
            w = make(ix) if make is not None else ix.writer()
            assert isinstance(w, _SegmentWriter) == (make is not None)
            for i in range(commit * 4, commit * 4 + 6):  # 2 of each batch replace the last batch's
                w.update_document(**doc(i, commit))
            w.commit()
        with ix.searcher(weighting=scoring.BM25F()) as s:
            r = s.reader()
            postings = {
                (f, t): list(
                    r.postings(f, t).items_as("positions") if f != "url" else r.postings(f, t).all_ids()
                )
                for f, t in r.all_terms()
            }
            lengths = [
                (s.doc_field_length(d, "text"), s.doc_field_length(d, "title")) for d in r.all_doc_ids()
            ]
            parser = QueryParser("text", ix.schema)
            scores = [
                [(hit["url"], round(hit.score, 9)) for hit in s.search(parser.parse(q), limit=20)]
                for q in ("w3", "w17 w40", "title:w2", "w88 OR w1")
            ]
            # each posting list also holds its documents' min / max field length
            blocks = []
            for leaf, _ in r.leaf_readers():
                for f, t in leaf.all_terms():
                    info = leaf.term_info(f, t)
                    blocks.append((f, t, info.min_length(), info.max_length(), info.max_weight()))
            contents.append((s.doc_count(), len(r.leaf_readers()), postings, lengths, scores, blocks))
        ix.close()
    assert contents[0] == contents[1]
    assert contents[0][0] == 38 and contents[0][1] < 9  # some segments were merged


def test_the_one_loop_flush_writes_whooshs_bytes(tmp_path: Path) -> None:
    """The engine's segment flush (:class:`~oasis.engine.index._FieldWriter`) writes the term and postings
    files of Whoosh's own writer byte for byte (blocks of 128 postings and the last one, repeated and single
    occurrences, boosted titles, the URL field without values); storing small blocks uncompressed
    (``compress_min``) changes only those blocks: the same postings, a postings file no larger."""
    from whoosh.writing import SegmentWriter

    from oasis.engine.index import _FieldWriter, _SegmentWriter

    docs = [
        dict(
            url=f"http://a.test/{i}", title=f"page {i} w{i % 5} w{i % 5}", fetch_time=0.0, relevance=0.1,
            text=" ".join(f"w{(i * j) % 211}" for j in range(5 + (i * 13) % 400)) + f" only{i}",
        )
        for i in range(300)
    ]  # fmt: skip

    def build(name: str, writer: type[SegmentWriter], compress_min: int) -> dict[str, Any]:
        storage = FileStorage(str(tmp_path / name)).create()
        ix = storage.create_index(make_schema())
        w = writer(ix, compound=False)
        assert (type(w.fieldwriter) is _FieldWriter) == (writer is _SegmentWriter)
        w.fieldwriter.compress_min = compress_min
        for d in docs:
            w.add_document(**d)
        w.commit(merge=False)
        files = {ext: (tmp_path / name / f).read_bytes() for f in os.listdir(tmp_path / name)
                 for ext in (".trm", ".pst") if f.endswith(ext)}  # fmt: skip
        with ix.searcher() as s:
            r = s.reader()
            postings = {
                (f, t): list(
                    r.postings(f, t).items_as("positions") if f != "url" else r.postings(f, t).all_ids()
                )
                for f, t in r.all_terms()
            }
            infos = [(f, t, tuple(vars(r.term_info(f, t)).values())) for f, t in r.all_terms()]
        ix.close()
        return {"files": files, "postings": postings, "infos": infos}

    whoosh = build("whoosh", SegmentWriter, 0)
    same = build("ours", _SegmentWriter, 0)
    assert len(whoosh["files"]) == 2 and same["files"] == whoosh["files"]
    assert max(len(p) for p in whoosh["postings"].values()) > 2 * 128  # several blocks per list
    small = build("small", _SegmentWriter, 80)
    assert small["files"][".trm"] != whoosh["files"][".trm"]  # the block offsets moved: small blocks plain
    assert len(small["files"][".pst"]) <= len(whoosh["files"][".pst"])
    assert small["postings"] == whoosh["postings"]
