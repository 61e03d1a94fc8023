"""Pure parts of the cluster commands."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest


def test_index_file_urls_keep_their_folders(tmp_path: Path) -> None:
    from oasis.cluster.commands import documents_from_files, html_files

    for sub in ("a", "b/c"):
        (tmp_path / sub).mkdir(parents=True)
        (tmp_path / sub / "index.html").write_text(f"<title>{sub}</title><p>page {sub}</p>")
    (tmp_path / "a" / "notes.txt").write_text("not html")
    files = [tmp_path / "a" / "index.html", tmp_path / "b" / "c" / "index.html"]
    docs = list(documents_from_files(files, "http://files.local"))
    assert [d.url for d in docs] == ["http://files.local/a/index.html", "http://files.local/b/c/index.html"]
    assert [d.title for d in docs] == ["a", "b/c"]
    folder = [f.relative_to(tmp_path).as_posix() for f, _ in html_files([tmp_path])]
    assert folder == ["a/index.html", "b/c/index.html"]
    with pytest.raises(FileNotFoundError, match="missing"):
        list(html_files([tmp_path / "missing"]))


def test_a_huge_file_is_read_no_further_than_a_page_is_parsed(tmp_path: Path) -> None:
    """``oasis index`` read every file whole before the parser cut it at ``MAX_BYTES``: a 2 GiB file named
    .html (sparse here) held 2 GiB in memory. Now a file is read as far as a page is parsed."""
    import tracemalloc

    from oasis.cluster.commands import documents_from_files
    from oasis.runtime.html import MAX_BYTES

    huge = tmp_path / "huge.html"
    with huge.open("wb") as f:
        f.write(b"<title>big</title><p>socket " + b"word " * 400 + b"</p>")  # text past the sniffed bytes
        f.truncate(2 * 1024**3)  # sparse: no disk used
    tracemalloc.start()
    try:
        (doc,) = documents_from_files([huge])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert doc.title == "big" and doc.text.startswith("socket word")
    assert peak < 16 * MAX_BYTES  # the whole file would be 512 x MAX_BYTES


def test_binary_files_named_html_are_skipped_and_text_in_any_encoding_is_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``oasis index`` of a folder indexed a PNG, a gzipped page and a NUL-filled file named .html as junk
    documents of replacement characters. Now they are skipped with a warning naming each (WHATWG's "binary
    data byte" in the first 1,445 bytes); UTF-16 with its byte-order mark, windows-1252 and a page with tabs,
    form feeds and escapes are still pages."""
    import codecs
    import gzip

    from oasis.cluster.commands import documents_from_files

    page = "<title>{}</title><p>socket\tselect\x0c poll \x1b epoll caf\u00e9</p>"
    (tmp_path / "utf8.html").write_text(page.format("utf8"), encoding="utf-8")
    (tmp_path / "utf16.html").write_bytes(codecs.BOM_UTF16_LE + page.format("utf16").encode("utf-16-le"))
    (tmp_path / "cp1252.html").write_bytes(page.format("cp1252").encode("windows-1252"))
    (tmp_path / "image.html").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    (tmp_path / "packed.html").write_bytes(gzip.compress(page.format("packed").encode() * 50))
    (tmp_path / "zeros.html").write_bytes(b"\0" * 3000)
    with caplog.at_level(logging.WARNING):
        docs = list(documents_from_files([tmp_path]))
    assert sorted(d.title for d in docs) == ["cp1252", "utf16", "utf8"]
    assert all(d.text == "socket select poll \x1b epoll caf\u00e9" for d in docs)
    skipped = sorted(r.getMessage() for r in caplog.records)
    assert skipped == [
        f"skipping {tmp_path / n}: binary data, not HTML" for n in ("image.html", "packed.html", "zeros.html")
    ]


def test_redirect_stubs_are_skipped_and_a_late_refresh_is_a_page(tmp_path: Path) -> None:
    """``oasis index`` of a Sphinx tree indexed its redirect stubs (a prompt ``<meta http-equiv="refresh">``
    and nothing else: dask's docs have 54) as documents with no text. They are skipped now, counted apart; a
    page that refreshes after a minute is still a page."""
    from oasis.cluster.commands import documents_from_files

    (tmp_path / "stub.html").write_text('<meta http-equiv="refresh" content="1; url=graphviz.html" />')
    (tmp_path / "Stub2.html").write_text("<META HTTP-EQUIV=REFRESH CONTENT=\"0;URL='x.html'\">")
    (tmp_path / "late.html").write_text(
        '<title>late</title><meta http-equiv="refresh" content="60; url=next.html"><p>news</p>'
    )
    (tmp_path / "reload.html").write_text('<title>reload</title><meta http-equiv="refresh" content="0">')
    skipped: list[Path] = []
    stubs: list[Path] = []
    docs = list(documents_from_files([tmp_path], "http://docs.test/", skipped, stubs))
    assert sorted(d.title for d in docs) == ["late", "reload"]
    assert sorted(p.name for p in stubs) == ["Stub2.html", "stub.html"] and skipped == []
