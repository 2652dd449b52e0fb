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
    # The tied pair is one level (37.5, 92.5): AMRS rob = (2.5 / 10 + 5 / 2.5) / 2 = 1.125.
    assert first["M"] == pytest.approx(0.8 * 37.5 + 0.2 * 100 / 1.125)
    assert list(first)[0] == "M" and list(swapped)[0] == "O"


def test_epsilon_pools_a_near_duplicate(tmp_path):
    document = {
        "metrics": [{"name": "acc", "weight": 4}, {"name": "rob", "weight": 1}],
        "models": {"A": {"acc": 70, "rob": 90}, "B": {"acc": 80, "rob": 80}},
    }
    assert run(tmp_path, document) == {"B": 80.0, "A": 74.0}
    document["models"]["C"] = {"acc": 80.01, "rob": 80}
    # Without pooling, the B-C pair (0 rob over 0.01 acc) halves the AMRS: A jumps to 92.
    assert run(tmp_path, document)["A"] == pytest.approx(92.0)
    pooled = run(tmp_path, {**document, "epsilon": 0.1})
    assert pooled["A"] == pytest.approx(74.0, abs=0.01)
    assert pooled["B"] == pytest.approx(80.0, abs=0.01)


def test_a_bad_epsilon_is_a_command_error(tmp_path):
    with pytest.raises(CommandError, match="epsilon"):
        run(tmp_path, {**ISSUE, "epsilon": "wide"})
