"""The starter configs of the admin's editor: each parses, and the registry lists every file."""

from __future__ import annotations

from importlib import resources

import pytest

from tasks.config import FieldType, parse_task_config
from tasks.starter_configs import STARTERS, starter_text


@pytest.mark.parametrize("starter", STARTERS, ids=lambda starter: starter.slug)
def test_every_starter_parses_without_problems(starter):
    config = parse_task_config(starter.text)
    assert config.input and config.output and config.perf_metrics


def test_the_registry_lists_every_starter_file_once():
    files = {
        entry.name.removesuffix(".yaml")
        for entry in resources.files("tasks.starter_configs").iterdir()
        if entry.name.endswith(".yaml")
    }
    slugs = [starter.slug for starter in STARTERS]
    assert sorted(slugs) == sorted(files)
    assert len(set(slugs)) == len(slugs)


def test_the_starters_cover_the_four_kinds_of_task():
    configs = {starter.slug: parse_task_config(starter.text) for starter in STARTERS}
    classification = configs["classification"]
    assert len(classification.goal_field.labels) == 3 and not classification.context
    nli = configs["nli"]
    assert nli.context and nli.goal_field.labels == ("entailed", "neutral", "contradictory")
    qa = configs["qa"]
    assert qa.field("answer").type == FieldType.CONTEXT_STRING_SELECTION
    assert qa.model_wrong_metric.type == "string_f1"
    generation = configs["generation"]
    assert generation.field("answer").type == FieldType.STRING
    assert generation.model_wrong_metric.type == "string_f1"
    assert generation.main_perf_metric.type == "squad_f1"


def test_an_unknown_starter_is_a_key_error():
    with pytest.raises(KeyError):
        starter_text("../settings")
