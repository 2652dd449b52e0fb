"""Errors raised by the metric registry, each with a stable code callers can match on."""

from __future__ import annotations


class MetricError(ValueError):
    """Base class of every metric error; ``code`` is stable, the message is for people."""

    code = "metrics.E000"

    def __init__(self, message: str, *, code: str | None = None):
        if code is not None:
            self.code = code
        super().__init__(f"{message} [{self.code}]")
        self.message = message


class UnknownMetric(MetricError, KeyError):
    """Raised by ``get_metric`` for a metric type the registry does not know."""

    code = "metrics.E001"

    def __str__(self) -> str:
        # KeyError would otherwise wrap the message in quotes.
        return ValueError.__str__(self)


class MetricInputError(MetricError):
    """Raised for inputs a metric cannot score: no examples, or mismatched lengths."""

    code = "metrics.E002"


class MetricUnsupported(MetricError):
    """Raised when a metric cannot run here (e.g. sp_bleu without a local model)."""

    code = "metrics.E003"


EMPTY_INPUT = "metrics.E002"
LENGTH_MISMATCH = "metrics.E004"
ORPHAN_PERTURBED_EXAMPLE = "metrics.E005"
BAD_OPTION = "metrics.E006"
