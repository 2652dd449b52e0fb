#!/usr/bin/env python
"""Measure ``import_dataset`` against a bare ``bulk_create`` of the same rows.

Writes N synthetic sentiment rows as JSON Lines, then in one run on a throwaway database:

- ``bare``: build ``DatasetExample`` objects from already-parsed dicts and ``bulk_create``
  them in batches of 2,000 in one transaction (no reading, no checks);
- ``ours``: ``leaderboards.services.datasets.dataset_import`` on the file (streamed reading,
  every line checked against the task config, all-or-nothing, batches of 2,000).

Prints one JSON line: ``rows_per_second``, ``bare_rows_per_second``, ``ratio`` (target >= 0.33),
``rows``.

    .venv/bin/python bench/dataset_import.py [--rows 100000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import _benchdb

ROWS = 100_000
QUICK_ROWS = 20_000


def synthetic_rows(count: int):
    words = ("good", "bad", "plain", "lovely", "awful", "fine")
    labels = ("positive", "negative", "neutral")
    for index in range(count):
        yield {
            "uid": f"s{index}",
            "statement": f"The {words[index % 6]} service number {index} was what it was.",
            "context": "Review a service you used.",
            "label": labels[index % 3],
            "tags": [f"group{index % 7}"],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    rows = options.rows or (QUICK_ROWS if options.quick else ROWS)

    _benchdb.setup_django()
    from django.db import connection, transaction

    old_name = connection.settings_dict["NAME"]
    name = _benchdb.create_database()
    try:
        from leaderboards.models import Dataset, DatasetExample
        from leaderboards.services.datasets import dataset_import
        from tasks import services as task_services

        config = (Path(_benchdb.ROOT) / "tasks" / "demo_data" / "sentiment.yaml").read_text()
        task = task_services.task_create(code="bench", name="Bench", yaml_text=config)
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
            for row in synthetic_rows(rows):
                handle.write(json.dumps(row) + "\n")
            path = handle.name

        parsed = list(synthetic_rows(rows))
        bare_dataset = Dataset.objects.create(
            task=task, name="bare", slug="bare", config_version=task.current_config
        )
        started = time.perf_counter()
        with transaction.atomic():
            batch = []
            for position, row in enumerate(parsed):
                batch.append(
                    DatasetExample(
                        dataset_id=bare_dataset.pk,
                        position=position,
                        uid=row["uid"],
                        inputs={
                            "uid": row["uid"],
                            "statement": row["statement"],
                            "context": row["context"],
                        },
                        gold={"label": row["label"]},
                        tags=row["tags"],
                    )
                )
                if len(batch) >= 2000:
                    DatasetExample.objects.bulk_create(batch)
                    batch = []
            if batch:
                DatasetExample.objects.bulk_create(batch)
        bare_seconds = time.perf_counter() - started
        del parsed

        started = time.perf_counter()
        with open(path, "rb") as stream:
            dataset = dataset_import(
                task, stream, name="ours", slug="ours", filename=path, evaluate=False
            )
        ours_seconds = time.perf_counter() - started
        assert dataset.row_count == rows
        Path(path).unlink()
    finally:
        _benchdb.drop_database(name, old_name)
    result = {
        "rows": rows,
        "rows_per_second": round(rows / ours_seconds, 1),
        "bare_rows_per_second": round(rows / bare_seconds, 1),
        "ratio": round(bare_seconds / ours_seconds, 3),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
