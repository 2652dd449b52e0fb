"""Progress figures that never overstate (pure: no DB, no HTTP).

A progress bar that reads 100% while examples are still missing misleads whoever waits
for it, so the percent is rounded *down* to one decimal: it reaches 100 only when
``done == total``. Integer arithmetic keeps floats from rounding 99.96 up.
"""

from __future__ import annotations


def progress_percent(done: int, total: int) -> float:
    """Return ``100 * done / total`` floored to one decimal (100.0 for an empty total).

    ``done`` is clamped to ``[0, total]``; the result is 100.0 only when ``done == total``.
    """
    if total <= 0:
        return 100.0
    done = min(max(done, 0), total)
    return (1000 * done // total) / 10
