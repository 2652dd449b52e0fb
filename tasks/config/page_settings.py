"""Check the page and study settings of Dynabench's current format (read in both formats).

Contract: each ``read_*`` function reports its problems on the checker and returns what it
could read:

- ``read_verdicts``: ``validation_options``, the verdicts a validator may give (``correct``,
  ``incorrect``, ``flag``/``flagged``, any case), in order; default all three;
- ``check_validation_context``: ``validation_context.type`` ``text`` or ``image-with-text``
  (the validate page shows the example's context either way); ``image-s3`` is not supported;
- ``read_external_validator``: ``{url, total_required_examples | required_number_of_examples,
  artifacts}``; upstream's two readers spell the count differently, so either is accepted
  (both given must agree, ``config.E085``);
- ``order_by_main_metric``: ``evaluation.main_perf_metric`` names the perf metric (by name or
  type) that ranks the leaderboard; it is moved first. ``evaluation.inference_url`` (remote
  "heavy" evaluation) is not supported.

Pure: no Django, no DB, no HTTP.
"""

from __future__ import annotations

from types import MappingProxyType
from urllib.parse import urlsplit

from tasks.config import codes
from tasks.config.checker import DocumentChecker, join_path
from tasks.config.located_yaml import LocatedMapping, LocatedValue
from tasks.config.types import ExternalValidator, PerfMetric, Verdict

VERDICT_SPELLINGS = {
    "correct": Verdict.CORRECT,
    "incorrect": Verdict.INCORRECT,
    "flag": Verdict.FLAGGED,
    "flagged": Verdict.FLAGGED,
}
VALIDATION_CONTEXT_TYPES = ("text", "image-with-text")
VALIDATION_CONTEXT_KEYS = frozenset({"type", "label", "info"})
UNSUPPORTED_VALIDATION_CONTEXTS = {"image-s3": "validation images drawn from S3 are not supported"}
EXTERNAL_VALIDATOR_COUNT_KEYS = ("total_required_examples", "required_number_of_examples")
EXTERNAL_VALIDATOR_KEYS = frozenset({"url", "artifacts", *EXTERNAL_VALIDATOR_COUNT_KEYS})
EVALUATION_KEYS = frozenset({"main_perf_metric"})
UNSUPPORTED_EVALUATION_KEYS = {
    "inference_url": "remote (heavy) evaluation through evaluation.inference_url is not "
    "supported: models are evaluated through their registered endpoints",
}


def read_verdicts(checker: DocumentChecker, top: LocatedMapping) -> tuple[Verdict, ...]:
    """Return the verdicts of ``validation_options`` (all three when absent or unusable)."""
    node = checker.given(top, "validation_options")
    items = checker.sequence(node, "validation_options") if node is not None else None
    if not items:
        if items == []:
            checker.error_at(
                codes.EMPTY_LIST, "validation_options", "validation_options is empty", node
            )
        return tuple(Verdict)
    verdicts: list[Verdict] = []
    for index, item in enumerate(items):
        path = f"validation_options[{index}]"
        text = checker.string(item, path)
        verdict = VERDICT_SPELLINGS.get(text.strip().lower()) if text is not None else None
        if text is not None and verdict is None:
            checker.error_at(
                codes.V2_NOT_SUPPORTED,
                path,
                f"the validation option {text[:60]!r} is not supported; the verdicts are "
                "correct, incorrect and flag",
                item,
            )
        elif verdict in verdicts:
            checker.error_at(codes.DUPLICATE_LABEL, path, f"{text!r} is listed twice", item)
        elif verdict is not None:
            verdicts.append(verdict)
    return tuple(verdicts) or tuple(Verdict)


def check_validation_context(checker: DocumentChecker, top: LocatedMapping) -> None:
    """Check ``validation_context``: a known type and keys (it changes nothing here)."""
    node = checker.given(top, "validation_context")
    mapping = checker.mapping(node, "validation_context") if node is not None else None
    if mapping is None:
        return
    type_node = checker.required(mapping, "type", "validation_context", node)
    text = checker.string(type_node, "validation_context.type") if type_node else None
    if text in UNSUPPORTED_VALIDATION_CONTEXTS:
        checker.error_at(
            codes.V2_NOT_SUPPORTED,
            "validation_context.type",
            UNSUPPORTED_VALIDATION_CONTEXTS[text],
            type_node,
        )
        return
    if text is not None and text not in VALIDATION_CONTEXT_TYPES:
        checker.error_at(
            codes.UNKNOWN_COMPONENT,
            "validation_context.type",
            f"unknown validation context {text[:60]!r}; known: "
            + ", ".join(VALIDATION_CONTEXT_TYPES),
            type_node,
        )
    checker.check_keys(mapping, "validation_context", VALIDATION_CONTEXT_KEYS, "validation_context")
    for key in ("label", "info"):
        checker.optional_string(mapping, key, "validation_context")


def read_external_validator(
    checker: DocumentChecker, top: LocatedMapping
) -> ExternalValidator | None:
    """Return the redirect to a third-party survey after N examples, when given."""
    node = checker.given(top, "external_validator")
    path = "external_validator"
    mapping = checker.mapping(node, path) if node is not None else None
    if mapping is None:
        return None
    checker.check_keys(mapping, path, EXTERNAL_VALIDATOR_KEYS, path)
    url_node = checker.required(mapping, "url", path, node)
    url = checker.string(url_node, join_path(path, "url")) if url_node else None
    if url is not None and not _is_http_url(url):
        checker.error_at(
            codes.WRONG_TYPE,
            join_path(path, "url"),
            f"{url[:80]!r} is not an http(s) URL",
            url_node,
        )
        url = None
    count = _read_required_examples(checker, mapping, path, node)
    parameters = _read_artifacts(checker, mapping, path)
    if url is None or count is None:
        return None
    return ExternalValidator(url, count, MappingProxyType(parameters))


def _is_http_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _read_required_examples(
    checker: DocumentChecker, mapping: LocatedMapping, path: str, owner: LocatedValue
) -> int | None:
    """Read the count under either spelling; both given must agree."""
    counts: dict[str, tuple[int, LocatedValue]] = {}
    for key in EXTERNAL_VALIDATOR_COUNT_KEYS:
        node = checker.given(mapping, key)
        value = checker.integer(node, join_path(path, key)) if node is not None else None
        if value is not None and value < 1:
            checker.error_at(
                codes.WRONG_TYPE, join_path(path, key), "the count must be at least 1", node
            )
        elif value is not None:
            counts[key] = (value, node)
    if not counts:
        if not any(checker.given(mapping, key) for key in EXTERNAL_VALIDATOR_COUNT_KEYS):
            checker.error_at(
                codes.MISSING_KEY,
                join_path(path, EXTERNAL_VALIDATOR_COUNT_KEYS[0]),
                "external_validator needs total_required_examples (or its other spelling, "
                "required_number_of_examples)",
                owner,
            )
        return None
    values = {value for value, _node in counts.values()}
    if len(values) > 1:
        second = counts[EXTERNAL_VALIDATOR_COUNT_KEYS[1]][1]
        checker.error_at(
            codes.CONFLICTING_KEYS,
            join_path(path, EXTERNAL_VALIDATOR_COUNT_KEYS[1]),
            "total_required_examples and required_number_of_examples disagree; give one",
            second,
        )
        return None
    return values.pop()


def _read_artifacts(checker: DocumentChecker, mapping: LocatedMapping, path: str) -> dict[str, str]:
    """``artifacts``: query parameters added to the URL (scalars)."""
    node = checker.given(mapping, "artifacts")
    artifacts_path = join_path(path, "artifacts")
    artifacts = checker.mapping(node, artifacts_path) if node is not None else None
    parameters: dict[str, str] = {}
    for key, value_node in (artifacts.items if artifacts is not None else {}).items():
        value = value_node.value
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            parameters[key] = str(value)
        else:
            checker.wrong_type(join_path(artifacts_path, key), "a string or a number", value_node)
    return parameters


def order_by_main_metric(
    checker: DocumentChecker, top: LocatedMapping, perf_metrics: list[PerfMetric], complete: bool
) -> list[PerfMetric]:
    """Move ``evaluation.main_perf_metric`` first; report it when it names no perf metric."""
    node = checker.given(top, "evaluation")
    mapping = checker.mapping(node, "evaluation") if node is not None else None
    if mapping is None:
        return perf_metrics
    for key in mapping.items:
        if key in UNSUPPORTED_EVALUATION_KEYS:
            checker.error(
                codes.V2_NOT_SUPPORTED,
                join_path("evaluation", key),
                UNSUPPORTED_EVALUATION_KEYS[key],
                mapping.key_lines[key],
            )
    known = EVALUATION_KEYS | frozenset(UNSUPPORTED_EVALUATION_KEYS)
    checker.check_keys(mapping, "evaluation", known, "evaluation")
    main_node = checker.given(mapping, "main_perf_metric")
    main = checker.string(main_node, "evaluation.main_perf_metric") if main_node else None
    if main is None:
        return perf_metrics
    matches = [m for m in perf_metrics if m.name == main] or [
        m for m in perf_metrics if m.type == main
    ]
    if len(matches) != 1:
        if complete:
            names = ", ".join(m.name for m in perf_metrics) or "none"
            checker.error_at(
                codes.UNKNOWN_MAIN_METRIC,
                "evaluation.main_perf_metric",
                f"{main[:60]!r} names "
                + ("no perf metric" if not matches else "several perf metrics")
                + f"; perf metrics: {names}",
                main_node,
            )
        return perf_metrics
    return matches + [metric for metric in perf_metrics if metric is not matches[0]]
