"""Add ``Score.covered_count``: how many of the dataset's examples the scored run answered.

Existing scores get the number of predictions of their run; a score whose run is gone
stays unknown (None).
"""

from django.db import migrations, models
from django.db.models import Count, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce


def count_covered_examples(apps, schema_editor):
    Prediction = apps.get_model("leaderboards", "Prediction")
    Score = apps.get_model("leaderboards", "Score")
    counted = (
        Prediction.objects.filter(run_id=OuterRef("run_id"), example__dataset_id=OuterRef("dataset_id"))
        .order_by()
        .values("run_id")
        .annotate(count=Count("pk"))
        .values("count")[:1]
    )
    Score.objects.filter(run__isnull=False).update(
        covered_count=Coalesce(Subquery(counted), Value(0))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboards", "0008_dataset_inputs_to_others"),
    ]

    operations = [
        migrations.AddField(
            model_name="score",
            name="covered_count",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(count_covered_examples, migrations.RunPython.noop),
    ]
