"""Store score cubes uncompressed on PostgreSQL.

A cube is mostly float arrays: PostgreSQL's default compression (pglz) made its upsert
about four times slower (5.9 vs 1.4 ms for a 1,000-model cube of 264 kB, measured side by
side) and its read slower too, to save about 200 kB per task. Other databases have no such
setting.
"""

from django.db import migrations


def _set_storage(storage: str):
    def apply(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        table = schema_editor.quote_name(apps.get_model("leaderboards", "BoardCube")._meta.db_table)
        schema_editor.execute(f"ALTER TABLE {table} ALTER COLUMN payload SET STORAGE {storage}")

    return apply


class Migration(migrations.Migration):
    dependencies = [("leaderboards", "0005_board_cube")]

    operations = [
        migrations.RunPython(_set_storage("EXTERNAL"), _set_storage("EXTENDED")),
    ]
