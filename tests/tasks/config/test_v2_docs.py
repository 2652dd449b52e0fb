"""docs/task-config.md's v2 section stays true: its example parses and means what it says."""

from __future__ import annotations

import re

from tasks.config import FieldType, Verdict, parse_task_config
from tasks.config.components import USER_INPUT_COMPONENTS
from tasks.config.document import MODEL_SIDE_KEYS
from tasks.config.types import SCALE_FIELD_TYPES
from tests.shared_files import REPOSITORY

DOCUMENT = REPOSITORY / "docs" / "task-config.md"
HEADING = "### A v2 example"


def v2_example() -> str:
    section = DOCUMENT.read_text(encoding="utf-8").split(HEADING, 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    assert match, "the v2 example has no ```yaml block"
    return match.group(1)


def test_the_v2_example_parses_and_means_what_the_doc_says():
    config = parse_task_config(v2_example())

    assert config.source_format == "v2"
    assert [spec.name for spec in config.input] == ["review", "category", "label"]
    assert [spec.name for spec in config.input if spec.optional] == ["category"]
    assert [spec.name for spec in config.metadata_create] == [
        "certainty",
        "tones",
        "deciding_part",
        "key_phrase",
    ]
    assert config.model_request_names == ("uid", "text", "category", "item_description")
    assert config.model_maps.answer_keys == {"label": "sentiment"}
    assert config.model_maps.cast == {"0": "negative", "1": "positive", "2": "neutral"}
    assert config.verdicts == (Verdict.CORRECT, Verdict.INCORRECT)
    assert config.perf_metrics[0].name == "macro_f1"
    assert config.creation_title == "Rate a product review"
    assert config.external_validator.required_examples == 10
    assert config.warnings == ()


def test_the_v2_example_shows_every_rating_type_and_model_side_key():
    example = v2_example()
    config = parse_task_config(example)
    types = {spec.type for spec in config.input + config.metadata_create}
    assert types >= SCALE_FIELD_TYPES | {FieldType.MULTICLASS}
    for key in set(MODEL_SIDE_KEYS) - {"validation_context"}:
        assert re.search(rf"^{key}:", example, flags=re.MULTILINE), key


def test_the_v2_section_names_every_user_input_component():
    text = DOCUMENT.read_text(encoding="utf-8")
    for name in USER_INPUT_COMPONENTS:
        assert f"`{name}`" in text, name
