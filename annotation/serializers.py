"""API serializers of the annotation app: contexts, examples and validations.

Worker identities never leave through these: an example shows its writer nothing about
other people, and a validator sees the example without its writer.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import ExampleStatus, ValidationLabel
from api.fields import JSONObjectField
from tasks.permissions import can_manage_task

MAX_SYNC_TIMEOUT = 10.0


class SampledContextSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    round = serializers.IntegerField(source="round.number")
    data = JSONObjectField()
    tag = serializers.CharField()


class ExampleCreateSerializer(serializers.Serializer):
    context_id = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, help_text="From the context sample."
    )
    input = serializers.DictField(help_text="The worker inputs named by the task config.")
    goal_label = serializers.CharField(required=False, allow_blank=True, max_length=200)
    time_spent_ms = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=86_400_000
    )
    mode = serializers.ChoiceField(
        choices=["sync", "async"],
        default="sync",
        help_text="`sync` waits up to `timeout` seconds for the model's answer; `async` "
        "returns 202 at once with a `status_url` to poll.",
    )
    timeout = serializers.FloatField(
        default=5.0, min_value=0.0, max_value=MAX_SYNC_TIMEOUT, help_text="Seconds (sync mode)."
    )


class ExampleSerializer(serializers.Serializer):
    """An example as its writer (or the task's owners) see it."""

    id = serializers.IntegerField()
    task = serializers.CharField(source="task.code")
    round = serializers.IntegerField(source="round.number")
    context_id = serializers.IntegerField(allow_null=True)
    config_version = serializers.IntegerField(source="config_version.version")
    input = JSONObjectField()
    asked_label = serializers.CharField(help_text="The goal label the platform asked for.")
    goal_label = serializers.CharField(help_text="The goal label the worker chose.")
    status = serializers.ChoiceField(choices=ExampleStatus.choices)
    model = serializers.SerializerMethodField(
        help_text="The model's name; null when its card is hidden from you (unpublished)."
    )
    model_output = JSONObjectField(allow_null=True)
    model_latency_ms = serializers.FloatField(allow_null=True)
    model_error_code = serializers.CharField()
    model_error_message = serializers.CharField()
    model_attempts = serializers.IntegerField()
    model_wrong = serializers.BooleanField(
        allow_null=True, help_text="Whether the model was fooled (null: not decided)."
    )
    verdict_source = serializers.CharField()
    metadata = JSONObjectField()
    retracted = serializers.BooleanField()
    flagged = serializers.BooleanField(source="creator_flagged")
    validation_state = serializers.CharField()
    created_at = serializers.DateTimeField()
    status_url = serializers.SerializerMethodField()

    def get_model(self, example) -> str | None:
        model = example.model if example.model_id else None
        if model is None:
            return None
        return model.name if self._may_see(model, example) else None

    def _may_see(self, model, example) -> bool:
        """A model whose card is a 404 to the reader (unpublished, not theirs, and they do
        not own the task) is not named: an arena battle's example holds seat A's model.
        The task's ownership is read once per task and request."""
        request = self.context.get("request")
        user = getattr(request, "user", None)
        if model.is_published or (user is not None and user.pk and model.owner_id == user.pk):
            return True
        manages = self.context.setdefault("manages_task", {})
        if example.task_id not in manages:
            manages[example.task_id] = can_manage_task(user, example.task)
        return manages[example.task_id]

    def get_status_url(self, example) -> str:
        path = reverse("api:example-detail", args=[example.pk])
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class ExampleAcceptedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=ExampleStatus.choices)
    status_url = serializers.CharField()


class ExampleMetadataSerializer(serializers.Serializer):
    metadata = serializers.DictField(
        help_text="Answers to the config's `metadata.create` fields for the example's outcome."
    )


class ExampleFlagSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=500, default="")


class ExampleVerdictSerializer(serializers.Serializer):
    model_wrong = serializers.BooleanField()


class ExampleRetrySerializer(serializers.Serializer):
    timeout = serializers.FloatField(default=5.0, min_value=0.0, max_value=MAX_SYNC_TIMEOUT)


class ExampleToValidateSerializer(serializers.Serializer):
    """An example offered to a validator: no writer, no counts."""

    id = serializers.IntegerField()
    config_version = serializers.IntegerField(source="config_version.version")
    context = serializers.SerializerMethodField()
    input = JSONObjectField()
    goal_label = serializers.CharField()
    model_output = JSONObjectField(allow_null=True)
    model_wrong = serializers.BooleanField(allow_null=True)
    metadata = JSONObjectField()

    @extend_schema_field(JSONObjectField(allow_null=True))
    def get_context(self, example) -> dict | None:
        return example.context.data if example.context_id else None


class NextToValidateSerializer(serializers.Serializer):
    example = ExampleToValidateSerializer(allow_null=True)


class ValidationCreateSerializer(serializers.Serializer):
    example_id = serializers.IntegerField(min_value=1)
    label = serializers.ChoiceField(choices=ValidationLabel.choices)
    metadata = serializers.DictField(required=False, default=dict)
    time_spent_ms = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=86_400_000
    )


class ValidationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    example_id = serializers.IntegerField()
    label = serializers.CharField()
    is_owner_verdict = serializers.BooleanField()
    example_validation_state = serializers.CharField(source="example.validation_state")
    created_at = serializers.DateTimeField()


class ExportQuerySerializer(serializers.Serializer):
    round = serializers.IntegerField(required=False, min_value=1, max_value=999_999_999)
