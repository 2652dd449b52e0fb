"""Literal SQL of the leaderboards app: the statements that the ORM cannot say fast enough.

Each statement is one text for PostgreSQL and SQLite (no vendor branch), every value is a
bound parameter, and each has a test in ``tests/leaderboards/test_sql.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection

from leaderboards.models import Dataset, Prediction, Score
from models_hub.models import RegisteredModel

# Correlated subqueries of the ORM (``Subquery(... .annotate(Count(...)))``) say the same,
# but building and compiling their querysets costs the page more Python time than the
# database spends on this whole statement, and every leaderboard page runs it.
_BOARD_DATA_STAMP = (
    "SELECT (SELECT COUNT(*) FROM {models} WHERE task_id = %s), "
    "(SELECT MAX(updated_at) FROM {models} WHERE task_id = %s), "
    "(SELECT COUNT(*) FROM {scores} WHERE dataset_id IN "
    "(SELECT id FROM {datasets} WHERE task_id = %s)), "
    "(SELECT MAX(updated_at) FROM {scores} WHERE dataset_id IN "
    "(SELECT id FROM {datasets} WHERE task_id = %s))"
)

# 100 rows of 6 parameters stay under SQLite's oldest limit of 999 bound parameters.
PREDICTION_ROWS_PER_STATEMENT = 100

# One prediction per (run, example): ON CONFLICT DO NOTHING keeps the one a run already has
# (SQLite 3.24+ and PostgreSQL both read it without a conflict target). The output is JSON
# text: PostgreSQL reads the untyped parameter as the column's jsonb, SQLite stores the text.
_PREDICTION_ROW = "(%s, %s, %s, '', %s, %s, %s, CURRENT_TIMESTAMP)"
_PREDICTION_INSERT = (
    "INSERT INTO {table} (run_id, example_id, output, error_code, latency_ms, model_version, "
    "raw_excerpt, created_at) VALUES {rows} ON CONFLICT DO NOTHING"
)


def predictions_insert(rows: Sequence[tuple[int, int, str, float | None, str, str]]) -> int:
    """Insert prediction rows, keeping any prediction the run already has; return rows written.

    Each row is ``(run id, example id, output as JSON text, latency in ms, model version,
    raw excerpt)``. The count is the database's own (the rows inserted, not the conflicts).

    Why not ``Prediction.objects.bulk_create(..., ignore_conflicts=True)``: it writes the same
    rows, but it cannot tell how many it wrote, and it builds a model instance and prepares
    each of the eight fields of every row in Python. An evaluation shard writes while its HTTP
    threads wait for the GIL, and that Python work per row cost a fifth of the shard's
    throughput (``bench/eval_throughput.py``); here a row is six plain parameters.
    """
    table = connection.ops.quote_name(Prediction._meta.db_table)
    written = 0
    with connection.cursor() as cursor:
        for first in range(0, len(rows), PREDICTION_ROWS_PER_STATEMENT):
            part = rows[first : first + PREDICTION_ROWS_PER_STATEMENT]
            values = ", ".join([_PREDICTION_ROW] * len(part))
            cursor.execute(
                _PREDICTION_INSERT.format(table=table, rows=values),
                [value for row in part for value in row],
            )
            written += max(cursor.rowcount, 0)
    return written


def board_data_stamp(task_id: int) -> tuple:
    """Return the count and the latest change of the task's models and of its datasets' scores.

    One statement on four index-backed aggregates: a model or score added, saved or deleted
    changes the stamp. The values are as the database returns them (the latest change is a
    datetime on PostgreSQL, text on SQLite): compare or print them, never compute with them.
    """
    quote = connection.ops.quote_name
    sql = _BOARD_DATA_STAMP.format(
        models=quote(RegisteredModel._meta.db_table),
        scores=quote(Score._meta.db_table),
        datasets=quote(Dataset._meta.db_table),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [task_id] * 4)
        return tuple(cursor.fetchone())
