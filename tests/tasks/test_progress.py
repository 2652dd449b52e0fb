"""Progress percents are rounded down: 100 only when everything is done (pure)."""

from __future__ import annotations

from tasks.progress import progress_percent


def test_the_percent_is_floored_to_one_decimal():
    assert progress_percent(300, 400) == 75.0
    assert progress_percent(1, 3) == 33.3
    assert progress_percent(2, 3) == 66.6
    assert progress_percent(0, 241) == 0.0


def test_100_only_when_done_equals_total():
    assert progress_percent(400, 400) == 100.0
    assert all(progress_percent(total - 1, total) < 100.0 for total in range(1, 5000))
    assert progress_percent(999_999_999, 1_000_000_000) == 99.9


def test_counts_out_of_range_are_clamped_and_an_empty_total_is_complete():
    assert progress_percent(500, 400) == 100.0
    assert progress_percent(-3, 400) == 0.0
    assert progress_percent(0, 0) == 100.0
