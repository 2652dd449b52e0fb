"""Property tests: whatever the text, the parser answers a TaskConfig or a TaskConfigError."""

from __future__ import annotations

import copy
import functools

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.config import TaskConfig, TaskConfigError, parse_task_config
from tasks.config.codes import CATALOGUE
from tasks.config.values import (
    check_context,
    check_dataset_row,
    check_metadata,
    check_model_output,
    check_prediction_row,
    check_worker_input,
)
from tests.tasks.config.samples import ConfigSample, samples, source_params

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Words the schema gives meaning to, so that random structures often look like configs.
SCHEMA_WORDS = [
    "input", "output", "context", "metadata", "create", "validate", "perf_metric",
    "model_wrong_metric", "delta_metrics", "aggregation_metric", "default_weights", "name",
    "type", "labels", "reference_name", "reference_names", "threshold", "single_prob",
    "string", "multiclass", "multilabel", "prob", "image", "context_string_selection",
    "accuracy", "macro_f1", "exact_match", "string_f1", "ask_user", "fairness", "robustness",
    "dynascore", "schema_version", "max_length", "as_goal_message", "model_wrong_condition",
    "validated_label_condition", "label", "answer", "incorrect",
]  # fmt: skip
KEYS = st.one_of(st.sampled_from(SCHEMA_WORDS), st.text(max_size=8))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(SCHEMA_WORDS),
    st.text(max_size=20),
)
STRUCTURES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=5)
    ),
    max_leaves=30,
)


def parse_or_error(text: str) -> TaskConfig | TaskConfigError:
    """Parse ``text``; the only exception allowed out of the parser is TaskConfigError."""
    try:
        return parse_task_config(text)
    except TaskConfigError as error:
        assert error.issues, "a TaskConfigError always carries at least one issue"
        for issue in error.issues:
            assert issue.code in CATALOGUE, issue
            assert isinstance(issue.message, str) and issue.message
            assert issue.line is None or issue.line >= 1
        return error


@FUZZ
@given(st.text(max_size=300))
def test_arbitrary_text_never_crashes(text):
    parse_or_error(text)


@FUZZ
@given(st.text(alphabet="-:[]{}&*!|>'\"#, \n\tabc01.?%@`", max_size=200))
def test_yaml_punctuation_never_crashes(text):
    parse_or_error(text)


@FUZZ
@given(STRUCTURES)
def test_arbitrary_structures_never_crash(structure):
    parse_or_error(yaml.safe_dump(structure, allow_unicode=True))


@FUZZ
@given(st.dictionaries(st.sampled_from(SCHEMA_WORDS), STRUCTURES, max_size=8))
def test_arbitrary_top_level_mappings_never_crash(structure):
    parse_or_error(yaml.safe_dump(structure, allow_unicode=True))


def _locations(value, path=()):
    """Yield the path of every node of a loaded YAML tree (root included)."""
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _locations(child, path + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _locations(child, path + (index,))


def _mutate(document, path, action, replacement):
    """Return a copy of ``document`` with the node at ``path`` replaced, dropped or wrapped."""
    mutated = copy.deepcopy(document)
    if not path:
        return replacement if action == "replace" else mutated
    parent = mutated
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "replace":
        parent[last] = replacement
    elif action == "drop":
        del parent[last]
    elif action == "wrap":
        parent[last] = [parent[last]]
    elif action == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[last]))
    return mutated


@pytest.mark.parametrize("source", source_params())
@FUZZ
@given(st.data())
def test_mutated_configs_never_crash(source, data):
    sample = data.draw(st.sampled_from(samples(source) + samples(source, rejected=True)))
    document = yaml.safe_load(sample.text())
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        path = data.draw(st.sampled_from(list(_locations(document))))
        action = data.draw(st.sampled_from(["replace", "drop", "wrap", "duplicate"]))
        replacement = data.draw(STRUCTURES)
        document = _mutate(document, path, action, replacement)
    result = parse_or_error(yaml.safe_dump(document, allow_unicode=True))
    if isinstance(result, TaskConfig):
        # Anything the parser accepts must also answer every question without crashing.
        result.metrics()
        assert result.model_input_names[0] == "uid"
        _ = result.gold_fields, result.goal_field, result.create_metadata_fields(True)


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10)),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(max_size=8), children, max_size=3),
    ),
    max_leaves=10,
)


@functools.cache
def _parsed(sample: ConfigSample) -> TaskConfig:
    return sample.parse()


@pytest.mark.parametrize("source", source_params())
@settings(max_examples=150, deadline=None, database=None)
@given(st.data())
def test_value_checks_never_crash(source, data):
    config = _parsed(data.draw(st.sampled_from(samples(source))))
    fields = config.context + config.input + config.output + config.metadata_validate
    # Keys the checks give meaning to, so that random objects often look like real values.
    keys = ["uid", "tags", "input_id"] + [spec.name for spec in fields]
    value = data.draw(JSON_VALUES | st.dictionaries(st.sampled_from(keys), JSON_VALUES, max_size=6))
    for issues in (
        check_context(config, value),
        check_worker_input(config, value, value),
        check_model_output(config, value),
        check_dataset_row(config, value, perturbed=True),
        check_prediction_row(config, value),
        check_metadata(config.metadata_validate, value, context=value),
    ):
        assert all(issue.code in CATALOGUE for issue in issues)
