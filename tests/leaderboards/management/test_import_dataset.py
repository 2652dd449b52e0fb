"""The import_dataset command."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from leaderboards.models import Dataset
from tests.leaderboards.evalkit import (
    jsonl,
    sentiment_rows,
)


@pytest.mark.django_db
def test_import_dataset_command(tmp_path, eval_task):
    path = tmp_path / "rows.jsonl"
    path.write_bytes(jsonl(sentiment_rows(4)).getvalue())
    out = io.StringIO()
    call_command(
        "import_dataset",
        "sentiment",
        str(path),
        "--name=Cmd",
        "--slug=cmd",
        "--access=standard",
        "--round=1",
        "--no-evaluate",
        stdout=out,
    )
    dataset = Dataset.objects.get(slug="cmd")
    assert dataset.access_type == "standard" and dataset.row_count == 4
    perturbed = sentiment_rows(2, prefix="x")
    for index, row in enumerate(perturbed):
        row["input_id"] = f"u{index}"
    path.write_bytes(jsonl(perturbed).getvalue())
    call_command(
        "import_dataset",
        "sentiment",
        str(path),
        "--name=Cmd robust",
        "--slug=cmd-r",
        "--perturbation-of=cmd",
        "--kind=robustness",
        "--no-evaluate",
        stdout=out,
    )
    assert Dataset.objects.get(slug="cmd-r").perturbation_of == dataset
