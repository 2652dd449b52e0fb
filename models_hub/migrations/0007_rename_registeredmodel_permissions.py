"""Rename the default permissions of ``RegisteredModel`` (``add_model`` -> ``add_registeredmodel``).

Django names a model's default permissions after the model, and creates missing ones after
``migrate``: without this, the old rows (and who holds them) would stay beside new, unheld
ones. A fresh database has none yet, so there is nothing to do there.
"""

from django.db import migrations

ACTIONS = ("add", "change", "delete", "view")


def _rename(apps, old: str, new: str, new_verbose: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    # 0006 renamed the content type in place (contenttypes' RenameContentType).
    content_type = ContentType.objects.filter(app_label="models_hub", model="registeredmodel")
    for action in ACTIONS:
        permissions = Permission.objects.filter(content_type__in=content_type)
        if permissions.filter(codename=f"{action}_{new}").exists():
            continue
        permissions.filter(codename=f"{action}_{old}").update(
            codename=f"{action}_{new}", name=f"Can {action} {new_verbose}"
        )


def forwards(apps, schema_editor):
    _rename(apps, "model", "registeredmodel", "registered model")


def backwards(apps, schema_editor):
    _rename(apps, "registeredmodel", "model", "model")


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("models_hub", "0006_rename_model_registeredmodel"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
