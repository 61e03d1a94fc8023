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
