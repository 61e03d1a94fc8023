from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.runtime.urls import InvalidURL, canonicalize, host_of


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("HTTP://Example.COM:80/a/./b/../c?b=2&a=1#frag", "http://example.com/a/c?a=1&b=2"),
        ("https://x.org:443", "https://x.org/"),
        ("http://x.org:8080/p#x", "http://x.org:8080/p"),
        ("http://x.org/a b", "http://x.org/a%20b"),
        ("  http://x.org/  ", "http://x.org/"),
        ("http://X.org./", "http://x.org/"),
    ],
)
def test_canonical_forms(raw: str, canonical: str) -> None:
    assert canonicalize(raw) == canonical


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "   ",
        "mailto:a@b.c",
        "javascript:alert(1)",
        "ftp://x.org/",
        "/relative/path",
        "http://",
        "http://x:99999/",
    ],
)
def test_rejects_what_cannot_be_fetched(bad: str) -> None:
    with pytest.raises(InvalidURL):
        canonicalize(bad)


def test_rejects_huge_urls() -> None:
    with pytest.raises(InvalidURL, match="longer"):
        canonicalize("http://x.org/" + "a" * 5000)


def test_host_of_keeps_non_default_port() -> None:
    assert host_of(canonicalize("http://127.0.0.1:8001/x")) == "127.0.0.1:8001"
    assert host_of(canonicalize("http://h.org:80/x")) == "h.org"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_canonicalize_is_idempotent_or_rejects(text: str) -> None:
    for candidate in (text, "http://example.org/" + text):
        try:
            once = canonicalize(candidate)
        except InvalidURL:
            continue
        assert canonicalize(once) == once
        assert once.startswith(("http://", "https://"))
        assert "#" not in once
