"""Rename the model ``Model`` to ``RegisteredModel``; its table keeps its name.

The table is pinned to ``models_hub_model`` first, so the rename changes the migration state,
the content type (renamed in place by ``django.contrib.contenttypes``, so its id and what
refers to it are kept) and the admin's names, and moves no data.

It runs after the latest migrations of the apps whose models point to the model: their
migrations name it ``models_hub.model``, a name that exists only before this one.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0011_arena_battles"),
        ("leaderboards", "0010_score_main_resamples"),
        ("models_hub", "0005_daily_budget"),
    ]

    operations = [
        migrations.AlterModelTable(name="model", table="models_hub_model"),
        migrations.RenameModel(old_name="Model", new_name="RegisteredModel"),
    ]
