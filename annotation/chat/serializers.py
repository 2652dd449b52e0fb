"""API serializers of chat collection: conversations, turns, replies, choices, the finish."""

from __future__ import annotations

from rest_framework import serializers

from annotation.chat.models import ConversationStatus, ReplyStatus
from tasks.config.chat import TURN_CHOICES

MAX_WAIT_SECONDS = 30.0


class ReplySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField()
    model = serializers.SerializerMethodField(help_text="Hidden as 'Model A'... until the end.")
    status = serializers.ChoiceField(choices=ReplyStatus.choices)
    attempt = serializers.IntegerField()
    text = serializers.CharField()
    model_version = serializers.SerializerMethodField(
        help_text="What the model says it is: empty while the identities are hidden."
    )
    latency_ms = serializers.FloatField(allow_null=True)
    first_token_ms = serializers.FloatField(allow_null=True)
    prompt_tokens = serializers.IntegerField(allow_null=True)
    completion_tokens = serializers.IntegerField(allow_null=True)
    finish_reason = serializers.CharField()
    error_code = serializers.CharField()
    error_message = serializers.CharField()
    stream_url = serializers.SerializerMethodField()

    def get_model(self, reply) -> str:
        return self.context["labels"].get(reply.position, "")

    def get_model_version(self, reply) -> str:
        # The version a server reports often names the model: hidden with the names.
        if reply.position in self.context.get("unlisted", ()):
            return ""
        return reply.model_version if self.context.get("reveal") else ""

    def get_stream_url(self, reply) -> str:
        conversation = self.context["conversation"]
        return (
            f"/api/v1/conversations/{conversation.pk}/replies/{reply.pk}/stream/"
            f"?attempt={reply.attempt}"
        )


class TurnSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    number = serializers.IntegerField()
    message = serializers.CharField()
    choice = serializers.CharField(help_text="best, tie, all_bad, or empty.")
    best_position = serializers.IntegerField(allow_null=True)
    slider = serializers.IntegerField(allow_null=True)
    replies = ReplySerializer(many=True, source="replies.all")


class SeatSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    model = serializers.CharField()
    fooled = serializers.BooleanField(allow_null=True)


class ConversationSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField()
    status = serializers.ChoiceField(choices=ConversationStatus.choices)
    example_id = serializers.IntegerField(allow_null=True)
    min_turns = serializers.IntegerField()
    max_turns = serializers.IntegerField()
    turn_choice = serializers.ListField(child=serializers.CharField())
    seats = SeatSerializer(many=True)
    turns = TurnSerializer(many=True)
    rating = serializers.IntegerField(allow_null=True)
    model_wrong = serializers.BooleanField(allow_null=True)


class TurnCreateSerializer(serializers.Serializer):
    message = serializers.CharField(max_length=20_000, trim_whitespace=False, allow_blank=True)


class ChoiceSerializer(serializers.Serializer):
    choice = serializers.ChoiceField(choices=TURN_CHOICES)
    best_position = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    slider = serializers.IntegerField(required=False, allow_null=True)


class FinishSerializer(serializers.Serializer):
    fooled_positions = serializers.ListField(
        child=serializers.IntegerField(min_value=0),
        required=False,
        allow_null=True,
        max_length=8,
        help_text="The positions of the models that were fooled ([] for none); required when "
        "the worker decides.",
    )
    rating = serializers.IntegerField(required=False, allow_null=True)
    free_text = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    metadata = serializers.DictField(required=False)
    time_spent_ms = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=86_400_000
    )


class ReplyWaitSerializer(serializers.Serializer):
    wait = serializers.FloatField(
        required=False,
        default=0.0,
        min_value=0.0,
        max_value=MAX_WAIT_SECONDS,
        help_text="Seconds to wait for a streaming reply to finish.",
    )


class ExportKindSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["conversations", "preferences"], default="conversations"
    )
    round = serializers.IntegerField(required=False, min_value=1)
    metadata = serializers.BooleanField(required=False, default=False)


class TranscriptSerializer(serializers.Serializer):
    example_id = serializers.IntegerField()
    conversation_id = serializers.IntegerField()
    messages = serializers.ListField(
        child=serializers.DictField(child=serializers.CharField()),
        help_text="The conversation in the OpenAI messages format.",
    )
    turns = TurnSerializer(many=True)
