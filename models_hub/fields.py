"""Model fields of the models hub: ``SealedTokenField``, a token encrypted in its column."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models

from models_hub import sealing
from models_hub.keyring import site_key_ring

# The longest token accepted (before sealing, which makes it about a third longer plus 80).
TOKEN_MAX_CHARS = 2000


class SealedTokenField(models.TextField):
    """A secret (a model endpoint's token) whose column holds only its sealed form.

    Assign the plain token; saving seals it with the site's key ring and leaves the sealed
    value on the instance, and ``QuerySet.update`` seals too, so an instance read or saved
    holds ciphertext only. ``models_hub.selectors.endpoint_spec`` opens it where a request
    is built. A sealed value is kept as it is, and "" means no token.
    """

    description = "A token stored encrypted"

    def pre_save(self, model_instance, add):
        value = sealing.seal(getattr(model_instance, self.attname) or "", site_key_ring())
        setattr(model_instance, self.attname, value)
        return value

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if not value:
            return value
        return sealing.seal(value, site_key_ring())

    def validate(self, value, model_instance):
        super().validate(value, model_instance)
        if value and not sealing.is_sealed(value) and len(value) > TOKEN_MAX_CHARS:
            raise ValidationError(
                f"The token is longer than {TOKEN_MAX_CHARS} characters.", code="max_length"
            )
