from __future__ import annotations

import pytest

from oasis.bench._stats import percentile


def test_nearest_rank_hand_worked() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0  # the 99th of 100, not the maximum
    assert percentile(values, 100) == 100.0
    assert percentile(values, 0) == 1.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([5.0], 99) == 5.0


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match="q must be"):
        percentile([1.0], 101)


def test_the_typo_of_the_did_you_mean_benchmark_swaps_two_letters_of_the_longest_word() -> None:
    """``oasis bench query-latency``'s ``broker-typo`` mode misspells each query once, as people do: the
    second and third letters of its longest word swapped (the first such word on a tie); a query with no word
    of five letters, or whose swap would change nothing, is left as it is (and not counted)."""
    from oasis.bench.query_latency import typo

    assert typo("how extensibility works") == "how etxensibility works"
    assert typo("print retrieve stack") == "print rterieve stack"
    assert typo("time zones") == "time znoes" and typo("cluster") == "culster"
    assert typo("grape lemon") == "garpe lemon"  # a tie: the first
    assert typo("how to do it") == "how to do it" and typo("tools") == "tools"
    assert typo("x86_64 target") == "x86_64 traget"  # words of letters only
