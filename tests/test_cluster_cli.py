"""Pure parts of the cluster commands."""

from __future__ import annotations

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
        f.write(b"<title>big</title><p>socket " + b"word " * 100 + b"</p>")
        f.truncate(2 * 1024**3)  # sparse: no disk used
    tracemalloc.start()
    try:
        (doc,) = documents_from_files([huge])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert doc.title == "big" and doc.text.startswith("socket word")
    assert peak < 16 * MAX_BYTES  # the whole file would be 512 x MAX_BYTES
