"""API serializers of the models hub. The endpoint's auth token is write-only everywhere."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from models_hub import selectors, services
from models_hub.models import RegisteredModel
from tasks.metrics.jobs import plausible_job_value


class ReportedMemoryField(serializers.FloatField):
    """The memory the endpoint last reported (GB), or null when none is plausible: a figure
    stored before the health probe checked them (an infinity, a negative value) is none."""

    def __init__(self, **kwargs):
        super().__init__(read_only=True, allow_null=True, **kwargs)

    def to_representation(self, value):
        return plausible_job_value("memory_utilization", value)


class ModelEndpointSerializer(serializers.ModelSerializer):
    """Endpoint settings: shown to the model's owner and the task's owners only."""

    has_token = serializers.BooleanField(read_only=True)
    # Plain strings: a blank URL is not a "uri" (the schema would say so).
    endpoint_url = serializers.CharField(read_only=True)

    class Meta:
        model = RegisteredModel
        fields = [
            "endpoint_url",
            "connect_timeout",
            "read_timeout",
            "batch_size",
            "max_concurrency",
            "options",
            "has_token",
            "last_health_error",
        ]
        read_only_fields = fields


class ModelSerializer(serializers.ModelSerializer):
    task = serializers.SlugRelatedField(slug_field="code", read_only=True)
    owner = serializers.SerializerMethodField()
    endpoint = serializers.SerializerMethodField()
    can_edit = serializers.SerializerMethodField()
    source_url = serializers.CharField(read_only=True)
    memory_gb = ReportedMemoryField()

    class Meta:
        model = RegisteredModel
        fields = [
            "id",
            "task",
            "name",
            "owner",
            "description",
            "params",
            "languages",
            "license",
            "source_url",
            "card",
            "protocol",
            "is_published",
            "is_anonymous",
            "status",
            "last_health_at",
            "last_health_latency_ms",
            "model_version",
            "memory_gb",
            "created_at",
            "updated_at",
            "endpoint",
            "can_edit",
        ]
        read_only_fields = fields

    def get_owner(self, model: RegisteredModel) -> str:
        """The owner's username, or "anonymous" (``model_list_for_task`` decides)."""
        return getattr(model, "owner_display", selectors.ANONYMOUS_OWNER)

    def _can_edit(self, model: RegisteredModel) -> bool:
        request = self.context.get("request")
        return bool(request) and selectors.model_can_edit(model, request.user)

    def get_can_edit(self, model: RegisteredModel) -> bool:
        return self._can_edit(model)

    @extend_schema_field(ModelEndpointSerializer(allow_null=True))
    def get_endpoint(self, model: RegisteredModel):
        if not self._can_edit(model):
            return None
        return ModelEndpointSerializer(model).data


class _ModelWriteSerializer(serializers.ModelSerializer):
    auth_token = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=2000,
        trim_whitespace=True,
        help_text="Write-only: sent to the endpoint as 'Authorization: Bearer ...'.",
    )
    options = serializers.DictField(required=False, help_text="Protocol options.")

    def validate_endpoint_url(self, value: str) -> str:
        return value.strip()


class ModelRegisterSerializer(_ModelWriteSerializer):
    in_loop = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Put the model in the loop of the task's current round. Left out: on for the "
        "task's owners registering a model with an endpoint, off otherwise; only the task's "
        "owners may ask for it.",
    )

    class Meta:
        model = RegisteredModel
        fields = [*services.REGISTER_FIELDS, "in_loop"]
        extra_kwargs = {"name": {"required": True}}


class ModelUpdateSerializer(_ModelWriteSerializer):
    clear_auth_token = serializers.BooleanField(
        required=False, default=False, help_text="Remove the stored token."
    )

    class Meta:
        model = RegisteredModel
        fields = list(services.UPDATE_FIELDS)
        extra_kwargs = {name: {"required": False} for name in services.UPDATE_FIELDS}


class ModelPublishSerializer(serializers.Serializer):
    published = serializers.BooleanField()


# Upper bounds keep every number inside the column's range on every database (SQLite cannot
# even bind an integer past 64 bits, so ``__in`` with one would be a 500 instead of a 404).
MAX_ROUND_NUMBER = 2_147_483_647  # Round.number is a PositiveIntegerField
MAX_ID = 9_223_372_036_854_775_807  # BigAutoField


class ModelRoundsSerializer(serializers.Serializer):
    rounds = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ROUND_NUMBER),
        max_length=1000,
        help_text="Round numbers whose loop includes the model (all others are removed).",
    )


class LoopSerializer(serializers.Serializer):
    models = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        max_length=1000,
        help_text="Ids of the models in the loop of this round (exactly these).",
    )


class LoopModelSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.CharField()
    last_health_at = serializers.DateTimeField(allow_null=True)
    last_health_latency_ms = serializers.FloatField(allow_null=True)
    last_health_error = serializers.CharField(allow_blank=True)


class RoundLoopSerializer(serializers.Serializer):
    round = serializers.IntegerField()
    is_open = serializers.BooleanField()
    models = LoopModelSerializer(many=True)
