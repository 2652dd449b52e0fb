"""``manage.py dynascore`` on tied models: the score follows the values, not the names."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

ISSUE = {
    "metrics": [{"name": "acc", "weight": 4}, {"name": "rob", "weight": 1}],
    "models": {
        "W": {"acc": 27.5, "rob": 95},
        "M": {"acc": 37.5, "rob": 100},
        "O": {"acc": 37.5, "rob": 85},
        "S": {"acc": 40, "rob": 87.5},
    },
}


def run(tmp_path, document) -> dict:
    path = tmp_path / "input.json"
    path.write_text(json.dumps(document))
    out = io.StringIO()
    call_command("dynascore", str(path), stdout=out, stderr=io.StringIO())
    return json.loads(out.getvalue())


def test_swapping_the_names_of_tied_models_only_swaps_their_names(tmp_path):
    first = run(tmp_path, ISSUE)
    models = ISSUE["models"]
    swapped = run(tmp_path, {**ISSUE, "models": {**models, "M": models["O"], "O": models["M"]}})
    assert first["M"] == swapped["O"] and first["O"] == swapped["M"]
    assert first["W"] == swapped["W"] and first["S"] == swapped["S"]
    # The tied pair is one level: AMRS rob = ((5 + 10) / 2 / 10 + (12.5 + 2.5) / 2 / 2.5) / 2.
    assert first["M"] == pytest.approx(0.8 * 37.5 + 0.2 * 100 / 1.875)
    assert list(first) == ["S", "M", "O", "W"] and list(swapped) == ["S", "O", "M", "W"]


def test_epsilon_puts_a_near_duplicate_on_its_models_level(tmp_path):
    document = {
        "metrics": [{"name": "acc", "weight": 4}, {"name": "rob", "weight": 1}],
        "models": {"A": {"acc": 70, "rob": 90}, "B": {"acc": 80, "rob": 80}},
    }
    assert run(tmp_path, document) == {"B": 80.0, "A": 74.0}
    document["models"]["C"] = {"acc": 80.01, "rob": 80}
    # At the default epsilon (1e-4) B and C are two levels: the B-C pair (0 rob over
    # 0.01 acc) halves the AMRS, and A jumps to 92.
    assert run(tmp_path, document)["A"] == pytest.approx(92.0)
    tied = run(tmp_path, {**document, "epsilon": 0.1})
    assert tied["A"] == pytest.approx(74.0, abs=0.01)
    assert tied["B"] == pytest.approx(80.0, abs=0.01)


def test_a_different_model_within_epsilon_keeps_the_order_of_the_others(tmp_path):
    document = {
        "metrics": [{"name": "acc", "weight": 4}, {"name": "rob", "weight": 1}],
        "models": {
            "A": {"acc": 70, "rob": 90},
            "B": {"acc": 80, "rob": 80},
            "C": {"acc": 80.01, "rob": 95},
        },
        "epsilon": 0.1,
    }
    # AMRS rob = (10 / 10 + 5 / 10.01) / 2: B stays ahead of A (pooled means swapped them).
    scores = run(tmp_path, document)
    assert list(scores) == ["C", "B", "A"]
    assert scores == {
        "C": pytest.approx(89.35, abs=0.01),
        "B": pytest.approx(85.34, abs=0.01),
        "A": pytest.approx(80.01, abs=0.01),
    }


def test_a_bad_epsilon_is_a_command_error(tmp_path):
    with pytest.raises(CommandError, match="epsilon"):
        run(tmp_path, {**ISSUE, "epsilon": "wide"})
