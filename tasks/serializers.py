"""API serializers of the tasks app: tasks, rounds, contexts and context uploads."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import JSONObjectField
from tasks.models import ContextSampling, Round, Task
from tasks.permissions import can_manage_task


class UploadLineErrorSerializer(serializers.Serializer):
    """One bad line of a refused upload (``core.uploads.UploadLineError``)."""

    line = serializers.IntegerField(help_text="1-based line of the file.")
    column = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="1-based column (characters) within the line, when the problem has one.",
    )
    path = serializers.CharField(help_text="The field, when the problem is in one.")
    code = serializers.CharField()
    message = serializers.CharField()


class RoundSerializer(serializers.ModelSerializer):
    class Meta:
        model = Round
        fields = ["number", "description", "is_open", "created_at"]
        read_only_fields = fields


class TaskSerializer(serializers.ModelSerializer):
    """A task as everyone who may see it sees it."""

    config_version = serializers.SerializerMethodField()
    config_yaml = serializers.SerializerMethodField()
    current_round = serializers.SerializerMethodField()
    is_owner = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = [
            "code",
            "name",
            "description",
            "instructions",
            "hidden",
            "active",
            "accepts_models",
            "num_matching_validations",
            "validate_non_fooling",
            "context_sampling",
            "context_sampling_tag",
            "config_version",
            "config_yaml",
            "current_round",
            "is_owner",
            "created_at",
        ]
        read_only_fields = fields

    def get_config_version(self, task: Task) -> int | None:
        return task.current_config.version if task.current_config_id else None

    def get_config_yaml(self, task: Task) -> str:
        return task.current_config.yaml_text if task.current_config_id else ""

    def get_current_round(self, task: Task) -> int | None:
        rounds = self.context.get("current_rounds")
        if rounds is not None:
            return rounds.get(task.pk)
        current = task.rounds.filter(is_open=True).order_by("-number").first()
        return current.number if current else None

    def get_is_owner(self, task: Task) -> bool:
        owned = self.context.get("owned_task_ids")
        if owned is not None:
            return task.pk in owned
        return can_manage_task(self.context["request"].user, task)


class TaskSettingsSerializer(serializers.ModelSerializer):
    """The settings a task's owners may change (``config_yaml`` makes a new config version)."""

    config_yaml = serializers.CharField(
        required=False, trim_whitespace=False, help_text="The task config (YAML)."
    )
    context_sampling = serializers.ChoiceField(choices=ContextSampling.choices, required=False)

    class Meta:
        model = Task
        fields = [
            "name",
            "description",
            "instructions",
            "hidden",
            "active",
            "accepts_models",
            "num_matching_validations",
            "validate_non_fooling",
            "context_sampling",
            "context_sampling_tag",
            "config_yaml",
        ]
        extra_kwargs = {name: {"required": False} for name in fields}


class RoundOpenSerializer(serializers.Serializer):
    description = serializers.CharField(required=False, allow_blank=True, default="")
    close_previous = serializers.BooleanField(required=False, default=True)
    carry_over = serializers.BooleanField(
        required=False,
        default=True,
        help_text="Copy the previous round's contexts and put its loop models in the new loop.",
    )


class ContextSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    round = serializers.IntegerField(source="round.number")
    data = JSONObjectField()
    tag = serializers.CharField()
    metadata = JSONObjectField()


class ContextUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="JSON Lines (.jsonl) or CSV (.csv).")
    format = serializers.ChoiceField(
        choices=["jsonl", "csv"], required=False, help_text="Default: from the file name."
    )
    round = serializers.IntegerField(
        required=False, min_value=1, help_text="Round number (default: the open round)."
    )
    tag = serializers.CharField(required=False, allow_blank=True, max_length=100, default="")


class ImportResultSerializer(serializers.Serializer):
    imported = serializers.IntegerField()


class UploadProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField(help_text="Bytes of the file read.")
    total = serializers.IntegerField(help_text="Bytes of the file.")
    percent = serializers.FloatField()
    rate = serializers.FloatField(allow_null=True, help_text="Bytes per second.")
    eta_seconds = serializers.FloatField(allow_null=True)
    state = serializers.CharField()
    state_label = serializers.CharField()
    finished = serializers.BooleanField()
    failed = serializers.BooleanField()


class UploadJobSerializer(serializers.Serializer):
    """A big upload imported by a job (``202`` from an upload endpoint; poll ``url``)."""

    id = serializers.IntegerField()
    kind = serializers.CharField()
    task = serializers.CharField(source="task.code")
    filename = serializers.CharField()
    size = serializers.IntegerField()
    status = serializers.CharField()
    rows = serializers.IntegerField(help_text="Rows imported (once done).")
    result_url = serializers.CharField(help_text="The page of what was imported (once done).")
    error_code = serializers.CharField()
    error_message = serializers.CharField()
    errors = UploadLineErrorSerializer(many=True, help_text="Every bad line of a refused file.")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField(help_text="This status, to poll.")
    page = serializers.SerializerMethodField(help_text="The progress page.")
    progress = serializers.SerializerMethodField()

    @extend_schema_field(UploadProgressSerializer)
    def get_progress(self, upload) -> dict:
        return vars(self.context["progress"])

    def get_url(self, upload) -> str:
        return reverse("api:upload-detail", kwargs={"pk": upload.pk})

    def get_page(self, upload) -> str:
        return reverse("tasks:upload", kwargs={"pk": upload.pk})


def upload_job_body(upload, progress) -> dict:
    """The API body of an upload job: the job and its progress."""
    return UploadJobSerializer(upload, context={"progress": progress}).data
