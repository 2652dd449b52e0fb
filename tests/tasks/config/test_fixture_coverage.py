"""Our config fixtures use every schema feature the Dynabench example configs use.

So a plain clone (no ../shared) still tests all of them. Where ../shared is present, the
keys and the kind-giving values (types, conditions, flags) of the Dynabench configs are
compared with those of our fixtures; everywhere, the parsed fixtures must cover every field
type, verdict, model_wrong_metric type and delta metric.
"""

from __future__ import annotations

import yaml

from tasks.config import FieldType, TaskConfigError, Verdict
from tasks.config.types import DELTA_METRIC_TYPES
from tests.shared_files import needs_dynabench, needs_mlcommons
from tests.tasks.config.samples import DYNABENCH, MLCOMMONS, OWN, samples

# Keys whose value says which kind of thing an entry is, rather than what it holds.
KIND_KEYS = frozenset(
    {
        "type",
        "validated_label_condition",
        "model_wrong_condition",
        "single_prob",
        "as_goal_message",
        "optional",
        "multiline",
        "metric_name",
    }
)


def features(value, path=""):
    """Yield every key path of a loaded YAML tree (list items as ``[]``), with kind values."""
    if isinstance(value, dict):
        for key, child in value.items():
            child_path = f"{path}.{key}" if path else key
            yield child_path
            if key in KIND_KEYS and not isinstance(child, dict | list):
                yield f"{child_path}={child}"
            yield from features(child, child_path)
    elif isinstance(value, list):
        for child in value:
            yield from features(child, f"{path}[]")


def features_of(source):
    found = set()
    for sample in samples(source) + samples(source, rejected=True):
        found.update(features(yaml.safe_load(sample.text())))
    # perf_metric is one entry or a list of entries of the same schema: the same features.
    return {feature.replace("perf_metric[]", "perf_metric") for feature in found}


@needs_dynabench
def test_our_fixtures_use_every_feature_of_the_dynabench_configs():
    missing = features_of(DYNABENCH) - features_of(OWN)
    assert not missing, sorted(missing)


@needs_mlcommons
def test_our_fixtures_use_every_feature_of_the_dynabench_v2_configs():
    # Upstream's context roles (``context``, ``answer``) are names; ours differ on purpose.
    roles = "context.field_names_for_the_model."
    missing = {
        feature
        for feature in features_of(MLCOMMONS) - features_of(OWN)
        if not feature.startswith(roles) and not feature.startswith("model_input.")
    }
    assert not missing, sorted(missing)


def parsed_own():
    return [sample.parse() for sample in samples(OWN)]


def test_our_fixtures_cover_every_field_type_verdict_and_rule():
    configs = parsed_own()
    fields = [
        spec
        for config in configs
        for spec in config.context
        + config.input
        + config.output
        + config.metadata_create
        + config.metadata_validate
    ]

    assert {spec.type for spec in fields} == set(FieldType)
    assert {spec.validated_label_condition for spec in fields} == {*Verdict, None}
    assert {spec.model_wrong_condition for spec in fields} == {True, False, None}
    assert {config.model_wrong_metric.type for config in configs} == {
        "exact_match",
        "string_f1",
        "ask_user",
    }
    assert {name for config in configs for name in config.delta_metrics} == set(DELTA_METRIC_TYPES)
    assert any(spec.single_prob for spec in fields)
    assert any(spec.as_goal_message for spec in fields)
    assert any(config.goal_message for config in configs)
    assert any(config.content_warning for config in configs)


def test_our_rejected_fixture_is_rejected_only_for_the_training_file_track():
    (rejected,) = samples(OWN, rejected=True)
    try:
        rejected.parse()
    except TaskConfigError as error:
        assert {issue.path for issue in error.issues} == {"train_file_metric", "perf_metric.type"}
    else:
        raise AssertionError("the training-file track was accepted")
