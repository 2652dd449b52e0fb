"""Add ``Dataset.inputs_to_others``; existing hidden datasets (and their copies) say no."""

from django.db import migrations, models


def hidden_datasets_keep_their_inputs(apps, schema_editor):
    Dataset = apps.get_model("leaderboards", "Dataset")
    Dataset.objects.filter(access_type="hidden").update(inputs_to_others=False)
    Dataset.objects.filter(perturbation_of__access_type="hidden").update(inputs_to_others=False)


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboards", "0007_dataset_access_type_public"),
    ]

    operations = [
        migrations.AddField(
            model_name="dataset",
            name="inputs_to_others",
            field=models.BooleanField(
                default=True,
                help_text="Send the inputs to models whose owner does not own the task.",
            ),
        ),
        migrations.RunPython(hidden_datasets_keep_their_inputs, migrations.RunPython.noop),
    ]
