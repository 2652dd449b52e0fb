"""The published JSON Schema accepts every config the project ships and refuses what the
parser refuses structurally; it is served under /api/v1/ and listed in the OpenAPI schema."""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from tasks.config import TaskConfigError, parse_task_config
from tasks.config.json_schema import task_config_schema
from tests.shared_files import REPOSITORY, needs_dynabench, needs_mlcommons
from tests.tasks.config.samples import DYNABENCH, MLCOMMONS, OWN, samples

SCHEMA_URL = "/api/v1/schemas/task-config.json"
VALIDATOR = jsonschema.Draft202012Validator(task_config_schema())
SHIPPED = sorted(
    [
        *(REPOSITORY / "tasks" / "starter_configs").glob("*.yaml"),
        *(REPOSITORY / "tasks" / "demo_data").glob("*.yaml"),
        *(REPOSITORY / "tests" / "tasks" / "twins").glob("*.yaml"),
        *(REPOSITORY / "tests" / "tasks" / "config" / "fixtures").glob("*.yaml"),
    ]
)
REJECTED_FIXTURES = {"training_file_track.yaml"}


def schema_errors(document) -> list[str]:
    return [error.message for error in VALIDATOR.iter_errors(document)]


def doc_examples() -> list[str]:
    text = (REPOSITORY / "docs" / "task-config.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)
    return [block for block in blocks if "perf_metric" in block]


def test_the_schema_is_a_valid_draft_2020_12_schema():
    schema = task_config_schema("https://example.org/schema.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "https://example.org/schema.json"


def test_every_shipped_config_file_is_found():
    names = {path.name for path in SHIPPED}
    assert {"nli.yaml", "qa.yaml", "v2_claim_review.yaml", "nli_v2.yaml"} <= names
    assert len(SHIPPED) >= 20


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_shipped_config_fits_the_schema_as_the_parser_judges_it(path):
    text = path.read_text(encoding="utf-8")
    errors = schema_errors(yaml.safe_load(text))
    if path.name in REJECTED_FIXTURES:
        assert errors
        with pytest.raises(TaskConfigError):
            parse_task_config(text)
    else:
        assert errors == []
        parse_task_config(text)


@pytest.mark.parametrize("index", range(len(doc_examples())))
def test_the_documented_examples_fit_the_schema(index):
    assert schema_errors(yaml.safe_load(doc_examples()[index])) == []


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(DYNABENCH, marks=[needs_dynabench], id=DYNABENCH),
        pytest.param(MLCOMMONS, marks=[needs_mlcommons], id=MLCOMMONS),
        pytest.param(OWN, id=OWN),
    ],
)
def test_the_dynabench_configs_fit_the_schema_and_its_rejected_ones_do_not(source):
    for sample in samples(source):
        assert schema_errors(yaml.safe_load(sample.text())) == [], sample.id
    for sample in samples(source, rejected=True):
        assert schema_errors(yaml.safe_load(sample.text())), sample.id


BASE_V1 = "input: [{name: t, type: string}]\noutput: [{name: t}]\n"
BASE_V1 += "perf_metric: {type: exact_match, reference_name: t}\n"
BASE_V2 = "goal: {type: multioptions, options: [a, b], field_name_for_the_model: label}\n"
BASE_V2 += "user_input: [{type: text, field_name_for_the_model: t}]\n"
BASE_V2 += "perf_metric: {type: accuracy, reference_name: label}\n"
BASE_CHAT = "context: {type: chat-with-instructions}\n"
BASE_CHAT += "perf_metric: {type: chrf, reference_name: reply}\n"
BROKEN = {
    "input is a mapping": "input: {name: t, type: string}\noutput: [{name: t}]\n"
    "perf_metric: {type: exact_match, reference_name: t}\n",
    "an unknown top-level key": BASE_V1 + "colour: red\n",
    "an unknown field type": BASE_V1.replace("type: string", "type: text"),
    "a bad field name": BASE_V1.replace("name: t, type", "name: 1st, type"),
    "an option of another type": BASE_V1.replace("type: string", "type: string, labels: [a]"),
    "no perf_metric": "input: [{name: t, type: string}]\noutput: [{name: t}]\n",
    "an unknown goal type": BASE_V2.replace("type: multioptions", "type: checkboxes"),
    "a component without type": BASE_V2.replace("type: text, ", ""),
    "a key the component does not take": BASE_V2.replace(
        "type: text,", "type: text, options_slider: [1, 2],"
    ),
    "v1 input beside v2 user_input": BASE_V2 + "input: [{name: x, type: string}]\n",
    "a chat context with too few turns": BASE_CHAT.replace(
        "{type: chat-with-instructions}",
        "{type: chat-with-instructions, generative_context: {artifacts: {min_interactions: 0}}}",
    ),
    "image generation in a chat context": BASE_CHAT.replace(
        "{type: chat-with-instructions}",
        "{type: chat-with-instructions, generative_context: {type: nibbler}}",
    ),
    "a chat context with a consent page": BASE_CHAT.replace(
        "{type: chat-with-instructions}",
        "{type: evaluate-texts-generative, "
        "generative_context: {artifacts: {consent_uri: 'https://x.org'}}}",
    ),
    "image generation": BASE_V2
    + "context: {type: select-multiple-images-generative, field_names_for_the_model: {a: a}}\n",
    "model_output with another key": BASE_V2 + "model_output: {label: x}\n",
    "a string_f1 threshold above 1": BASE_V2
    + "model_evaluation_metric: {metric_name: string_f1, metric_parameters: {threshold: 2}}\n",
    "external_validator without its count": BASE_V2 + "external_validator: {url: https://x.org}\n",
    "an unknown perf metric": BASE_V1.replace("type: exact_match", "type: rouge"),
}


@pytest.mark.parametrize("text", BROKEN.values(), ids=list(BROKEN))
def test_a_structurally_broken_config_fails_both_the_schema_and_the_parser(text):
    assert schema_errors(yaml.safe_load(text))
    with pytest.raises(TaskConfigError):
        parse_task_config(text)


def test_the_base_configs_of_the_broken_ones_are_valid():
    for text in (BASE_V1, BASE_V2, BASE_CHAT):
        assert schema_errors(yaml.safe_load(text)) == []
        parse_task_config(text)


@pytest.mark.django_db
def test_the_schema_is_served_under_api_v1_and_listed_in_openapi(client):
    response = client.get(SCHEMA_URL)
    assert response.status_code == 200
    served = response.json()
    assert served["$id"] == f"http://testserver{SCHEMA_URL}"
    assert {key: value for key, value in served.items() if key != "$id"} == task_config_schema()
    openapi = client.get("/api/schema/?format=json").json()
    assert SCHEMA_URL in openapi["paths"]
    assert "get" in openapi["paths"][SCHEMA_URL]


def test_the_reference_links_the_schema_and_says_how_to_use_it():
    text = Path(REPOSITORY / "docs" / "task-config.md").read_text(encoding="utf-8")
    assert SCHEMA_URL in text
    assert "# yaml-language-server: $schema=" in text


def test_a_key_set_to_null_is_not_given_for_the_schema_as_for_the_parser():
    text = BASE_V1 + "goal_message:\nmetadata:\n  create:\n"
    text = text.replace("type: string}", "type: string, placeholder: }")
    assert schema_errors(yaml.safe_load(text)) == []
    parse_task_config(text)
