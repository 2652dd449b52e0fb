"""Encrypt the model endpoint tokens stored before 0003 (docs/security.md).

Forward: every plain token is sealed with the first key of the site's ring; sealed values are
left alone, so running it again changes nothing. Backward: every sealed token is decrypted
back to plain text for the code before 0003; it stops, changing nothing, when one cannot be
decrypted with the current keys (put its key back in DYNATASK_SECRET_KEYS, or clear the token).
"""

from django.db import migrations, models

from models_hub import sealing
from models_hub.keyring import site_key_ring


def _stored(value):
    # The value as it is to be stored: the field would seal a plain value on its way in.
    return models.Value(value, output_field=models.TextField())


def seal_tokens(apps, schema_editor):
    Model = apps.get_model("models_hub", "Model")
    ring = site_key_ring()
    rows = Model.objects.using(schema_editor.connection.alias).exclude(auth_token="")
    for pk, stored in rows.values_list("pk", "auth_token"):
        if not sealing.is_sealed(stored):
            rows.filter(pk=pk).update(auth_token=_stored(sealing.seal(stored, ring)))


def unseal_tokens(apps, schema_editor):
    Model = apps.get_model("models_hub", "Model")
    ring = site_key_ring()
    rows = Model.objects.using(schema_editor.connection.alias).exclude(auth_token="")
    plain = {}
    for pk, name, stored in rows.values_list("pk", "name", "auth_token"):
        if not sealing.is_sealed(stored):
            continue
        try:
            plain[pk] = sealing.unseal(stored, ring)
        except sealing.TokenUnreadable:
            raise RuntimeError(
                f"the token of model {pk} ({name}) cannot be decrypted with the keys of "
                "DYNATASK_SECRET_KEYS: add its key back or clear the token, then migrate back"
            ) from None
    for pk, token in plain.items():
        rows.filter(pk=pk).update(auth_token=_stored(token))


class Migration(migrations.Migration):
    dependencies = [
        ("models_hub", "0003_model_auth_token_sealed"),
    ]

    operations = [migrations.RunPython(seal_tokens, unseal_tokens, elidable=False)]
