"""Re-crawl research: the baseline schedules (uniform, Nutch's adaptive interval)."""

from __future__ import annotations

import pytest

from oasis.freshness.recrawl import AdaptiveFetchSchedule, UniformSchedule


def test_adaptive_fetch_schedule_rule() -> None:
    s = AdaptiveFetchSchedule(
        inc_rate=0.4, dec_rate=0.2, min_interval=10.0, max_interval=200.0, initial_interval=100
    )
    assert s.next_interval(100.0, changed=False) == pytest.approx(140.0)
    assert s.next_interval(100.0, changed=True) == pytest.approx(80.0)
    assert s.next_interval(180.0, changed=False) == 200.0  # clamped at max
    assert s.next_interval(11.0, changed=True) == 10.0  # clamped at min
    assert s.priority(50.0, 100.0) == 0.5
    with pytest.raises(ValueError):
        AdaptiveFetchSchedule(dec_rate=1.0)


def test_uniform_schedule() -> None:
    s = UniformSchedule(interval=5.0)
    assert s.next_interval(1.0, True) == 5.0 and s.next_interval(9.0, False) == 5.0
    assert s.priority(10.0, 1.0) == 2.0
