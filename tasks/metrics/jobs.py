"""Job metrics: what an evaluation measures about a model besides its answers (pure).

Contract: ``JOB_METRICS`` maps each job metric's name to a ``JobMetric``, in the order the
leaderboard lists them. Each one declares

* its ``direction`` ("higher" or "lower" is better) and its ``unit``;
* its ``resolution``: the smallest difference the platform can tell from measurement
  noise. The leaderboard compares models at that resolution (``quantize_to_resolution``):
  values on the same step of the grid are ties, and a metric whose values all fall on
  one step separates no models and adds nothing to the Dynascore. An absolute resolution
  is a step in the metric's unit; a relative one (``relative=True``) is a fraction, and
  the grid is geometric (each step ``1 + resolution`` times the one below);
* whether it is ``self_reported``: a figure the model's endpoint states about itself,
  which nobody checks. Task owners decide whether those count by default
  (``aggregation_metric.count_self_reported`` in the task config);
* its ``plausible_max``: a measurement is a finite number from 0 to that bound, never a
  boolean. ``job_value_problem(name, value)`` says what is wrong with a value (None when
  it is plausible) and ``plausible_job_value`` returns it as a float or None. The health
  probe refuses a reported figure outside the range, and the scores and the leaderboard
  read one stored before that check as missing, so no figure a model states can make an
  AMRS or a Dynascore overflow.

Why these bounds: no deployment evaluated here uses more than 1 TiB of memory (1024 GB;
the leaderboard's instance is 16 GB), a latency beyond 10^7 ms (about 3 hours) is longer
than any request is allowed to take, and 10^9 examples a second is beyond any endpoint.

Why these resolutions (a value is rounded to the nearest step):

* ``examples_per_second``, 10 % (relative): measured on a shared worker, the same model's
  throughput moves by several percent from one run to the next, and a fast model and a
  slow one differ by factors, not by ex/s.
* ``latency_p95_ms``, 5 ms: the 95th percentile of batch round trips, timed with the
  operating system's clock on a shared machine, where scheduling alone adds a few ms.
* ``memory_utilization``, 0.1 GB: the endpoint's own report on ``/health``, which depends
  on the allocator and the moment it is read; 100 MB is below what separates two
  deployments of a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class JobMetric:
    """A job metric of the leaderboard; see the module docstring for the fields."""

    name: str
    direction: str
    unit: str
    resolution: float
    relative: bool = False
    self_reported: bool = False
    description: str = ""
    plausible_max: float = math.inf

    @property
    def resolution_text(self) -> str:
        """Return the resolution for people: "10 %", "5 ms", "0.1 GB"."""
        if self.relative:
            return f"{self.resolution * 100:g} %"
        return f"{self.resolution:g} {self.unit}"


JOB_METRICS: MappingProxyType[str, JobMetric] = MappingProxyType(
    {
        metric.name: metric
        for metric in (
            JobMetric(
                "examples_per_second",
                "higher",
                "ex/s",
                0.10,
                relative=True,
                description="examples sent per second of evaluation work, measured by us",
                plausible_max=1e9,
            ),
            JobMetric(
                "latency_p95_ms",
                "lower",
                "ms",
                5.0,
                description="the 95th percentile of the request latencies, measured by us",
                plausible_max=1e7,
            ),
            JobMetric(
                "memory_utilization",
                "lower",
                "GB",
                0.1,
                self_reported=True,
                description="the memory_gb the endpoint reports on its /health",
                plausible_max=1024.0,
            ),
        )
    }
)


def quantize_to_resolution(value: float, resolution: float, *, relative: bool = False) -> float:
    """Return ``value`` rounded to the nearest step of the resolution grid.

    Absolute: the nearest multiple of ``resolution``. Relative: the nearest power of
    ``1 + resolution`` (on a log scale); 0 and negative values are returned as they are
    (they have no place on a geometric grid). A resolution of 0 returns ``value``, so
    exact inputs give exact results. Non-finite values are returned as they are.
    """
    if resolution <= 0 or not math.isfinite(value):
        return value
    if relative:
        if value <= 0:
            return value
        base = math.log1p(resolution)
        return math.exp(round(math.log(value) / base) * base)
    return round(value / resolution) * resolution


def job_value_problem(name: str, value: object) -> str | None:
    """Return why ``value`` is no plausible measurement of job metric ``name``, else None.

    None (no figure) is fine; so is any finite number from 0 to the metric's
    ``plausible_max``. A boolean is not a number here (JSON ``true`` is no measurement).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"is not a number (got {_shown(value)})"
    metric = JOB_METRICS[name]
    if isinstance(value, float) and not math.isfinite(value):
        return f"is not a finite number (got {_shown(value)})"
    if value < 0:
        return f"cannot be negative (got {_shown(value)})"
    if value > metric.plausible_max:  # compared as it is: an int may be beyond a float
        return (
            f"must be at most {metric.plausible_max:g} {metric.unit} to be a plausible "
            f"measurement (got {_shown(value)})"
        )
    return None


def plausible_job_value(name: str, value: object) -> float | None:
    """Return ``value`` as a float when it is a plausible measurement of ``name``, else None."""
    if value is None or job_value_problem(name, value) is not None:
        return None
    return float(value)  # type: ignore[arg-type]


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
