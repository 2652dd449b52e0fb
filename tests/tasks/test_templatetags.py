"""Template filters shared by the pages: the rounded latency."""

from __future__ import annotations

import pytest

from tasks.templatetags.dynatask import latency


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, ""),
        ("", ""),
        ("n/a", ""),
        (0.4234, "0.42 ms"),
        (3.14159, "3.1 ms"),
        (0.999, "1.0 ms"),
        (9.96, "10 ms"),
        (12.3456789, "12 ms"),
        (87.5, "88 ms"),
        (999.4, "999 ms"),
        (999.6, "1.0 s"),
        (1234.5, "1.2 s"),
    ],
)
def test_latency_is_rounded_for_people(value, shown):
    assert latency(value) == shown
