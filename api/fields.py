"""Serializer fields every app's API uses."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers


@extend_schema_field({"type": "object", "additionalProperties": {}})
class JSONObjectField(serializers.JSONField):
    """A JSON object whose keys the task config names (inputs, contexts, metadata...).

    Read and written as ``JSONField`` does; the schema says it is an object, so that a
    generated client gets a mapping rather than an untyped value.
    """
