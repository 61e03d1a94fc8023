"""The vocabulary Bloom filter: no false negatives, false positives near the rate it was sized for."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oasis.runtime.bloom import BloomFilter


@settings(max_examples=100, deadline=None)
@given(st.sets(st.text(min_size=1, max_size=12), max_size=300))
def test_every_member_is_reported(terms: set[str]) -> None:
    f = BloomFilter.build(terms, len(terms))
    assert all(t in f for t in terms)
    again = BloomFilter(f.bits, f.hashes)  # what the directory rebuilds from the proto
    assert all(t in again for t in terms)


def test_size_and_false_positive_rate_follow_the_formulas() -> None:
    n, p = 20_000, 0.01
    f = BloomFilter.build((f"term{i}" for i in range(n)), n, fpr=p)
    m = len(f.bits) * 8
    assert m >= -n * math.log(p) / math.log(2) ** 2  # m = -n ln p / (ln 2)^2
    assert f.hashes == round(m / n * math.log(2))  # k = (m / n) ln 2
    trials = 20_000
    false = sum(f"other{i}" in f for i in range(trials))
    assert false / trials < 2 * p


def test_bad_filters_are_refused() -> None:
    with pytest.raises(ValueError):
        BloomFilter(b"", 3)
    with pytest.raises(ValueError):
        BloomFilter(b"\0", 0)
