"""``manage.py dynascore <file.json>`` on small hand-computed inputs."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

THREE_MODELS = {
    "metrics": [
        {"name": "perf", "direction": "higher", "weight": 2},
        {"name": "throughput", "direction": "higher", "weight": 1},
        {"name": "memory", "direction": "lower", "offset": 16, "weight": 1},
    ],
    "models": {
        "A": {"perf": 80, "throughput": 10, "memory": 4},
        "B": {"perf": 70, "throughput": 20, "memory": 2},
        "C": {"perf": 60, "throughput": 40, "memory": 8},
        "D": {"perf": 99},
    },
}


def run(tmp_path, document) -> tuple[dict, str]:
    path = tmp_path / "input.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    out, err = io.StringIO(), io.StringIO()
    call_command("dynascore", str(path), stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


def test_hand_computed_values(tmp_path):
    # Sorted by perf: C (60), B (70), A (80). Memory saved: A 12, B 14, C 8.
    # AMRS throughput = mean(20/10, 10/10) = 1.5; AMRS memory = mean(6/10, 2/10) = 0.4.
    # Normalised weights: perf 1/2, throughput 1/4, memory 1/4.
    scores, err = run(tmp_path, THREE_MODELS)
    assert scores["A"] == pytest.approx(40 + 10 / 1.5 / 4 + 12 / 0.4 / 4)  # 49.1667
    assert scores["B"] == pytest.approx(35 + 20 / 1.5 / 4 + 14 / 0.4 / 4)  # 47.0833
    assert scores["C"] == pytest.approx(30 + 40 / 1.5 / 4 + 8 / 0.4 / 4)  # 41.6667
    assert list(scores) == ["A", "B", "C", "D"]
    assert scores["D"] is None
    assert "D: throughput, memory" in err


def test_input_file_is_not_changed(tmp_path):
    text = json.dumps(THREE_MODELS)
    path = tmp_path / "input.json"
    path.write_text(text)
    call_command("dynascore", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    assert path.read_text() == text


def test_one_model_and_constant_metric(tmp_path):
    scores, _ = run(
        tmp_path,
        {
            "metrics": [{"name": "perf", "weight": 4}, {"name": "speed", "weight": 1}],
            "models": {"solo": {"perf": 70, "speed": 3}},
        },
    )
    assert scores == {"solo": pytest.approx(4 / 5 * 70)}


@pytest.mark.parametrize(
    "document",
    [
        "not json",
        "[]",
        {"metrics": [], "models": {}},
        {"metrics": [{"name": "perf", "weight": 0}], "models": {"a": {"perf": 1}}},
        {"metrics": [{"name": "perf", "direction": "sideways"}], "models": {}},
        {"metrics": [{"name": "perf", "weight": "heavy"}], "models": {"a": {"perf": 1}}},
        {"metrics": [{"weight": 1}], "models": {}},
        {"metrics": [{"name": "perf"}], "models": {"a": [1]}},
    ],
)
def test_bad_input_is_a_clear_command_error(tmp_path, document):
    with pytest.raises(CommandError):
        run(tmp_path, document)


def test_missing_file(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        call_command("dynascore", str(tmp_path / "absent.json"))


def test_a_metric_may_be_compared_at_a_resolution(tmp_path):
    # 0.0003 GB of reported memory is noise at 0.1 GB: the order follows perf alone.
    document = {
        "metrics": [
            {"name": "perf", "weight": 4},
            {"name": "memory", "direction": "lower", "offset": 16, "resolution": 0.1},
        ],
        "models": {
            "weak": {"perf": 70, "memory": 0.5},
            "strong": {"perf": 93, "memory": 0.5003},
        },
    }
    scores, _ = run(tmp_path, document)
    assert scores == {"strong": pytest.approx(4 / 5 * 93), "weak": pytest.approx(4 / 5 * 70)}
