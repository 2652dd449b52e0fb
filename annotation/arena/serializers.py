"""API serializers of the arena: battles, votes, the board, snapshots and exclusions."""

from __future__ import annotations

from rest_framework import serializers

from annotation.arena.models import Vote

# What a voter (or a visitor of an unsealed export) reads for a model whose card they may not
# see (unpublished, not theirs): the name never reaches them.
UNLISTED_NAME = "an unpublished model"
# A void reason quotes the word that named a model: for a battle with such a model, not quoted.
UNLISTED_VOID_REASON = "an answer names a model"


def shown_void_reason(reason: str, unlisted) -> str:
    """The void reason as a voter who may not see one of the battle's models reads it."""
    return UNLISTED_VOID_REASON if reason and unlisted else reason


class ArenaBattleSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    task = serializers.CharField()
    conversation_id = serializers.IntegerField(
        help_text="Send turns and read replies through the conversations API."
    )
    model_a = serializers.CharField(
        help_text="'Model A' until the vote, then its name ('an unpublished model' when its "
        "card is hidden from you)."
    )
    model_b = serializers.CharField(help_text="'Model B' until the vote, then as model_a.")
    revealed = serializers.BooleanField()
    vote = serializers.CharField(help_text="a, b, tie, both_bad, or empty before the vote.")
    void_reason = serializers.CharField(help_text="Why the vote does not count, or empty.")
    voted_at = serializers.DateTimeField(allow_null=True)


class ArenaVoteSerializer(serializers.Serializer):
    vote = serializers.ChoiceField(choices=Vote.choices)


class ArenaBoardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    model_id = serializers.IntegerField()
    model = serializers.CharField()
    rating = serializers.FloatField(help_text="Bradley-Terry, base 10, scale 400, mean 1000.")
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    ahead_of_next = serializers.FloatField(
        allow_null=True, help_text="Share of resamples rated above the next row."
    )
    tie_with_next = serializers.BooleanField(help_text="Ahead in fewer than 95% of resamples.")
    elo = serializers.FloatField(allow_null=True, help_text="Online Elo, K = 4.")
    battles = serializers.IntegerField()
    identified = serializers.BooleanField()
    style_controlled_rating = serializers.FloatField(allow_null=True)


class ArenaBoardSerializer(serializers.Serializer):
    task = serializers.CharField()
    battles = serializers.IntegerField(help_text="Counted votes.")
    resamples = serializers.IntegerField()
    scale = serializers.DictField(child=serializers.FloatField())
    style_control = serializers.BooleanField()
    length_coefficient = serializers.FloatField(allow_null=True)
    rows = ArenaBoardRowSerializer(many=True)
    models = serializers.ListField(child=serializers.CharField(), help_text="The rows' order.")
    battle_matrix = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField())
    )
    win_fraction_matrix = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(allow_null=True))
    )


class ArenaBoardQuerySerializer(serializers.Serializer):
    style = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Style control on (true) or off (false); the task's config by default.",
    )


class ArenaSnapshotSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)


class ArenaSnapshotDetailSerializer(ArenaSnapshotSerializer):
    board = ArenaBoardSerializer()


class ArenaSnapshotCreateSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")


class ArenaExclusionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    rater = serializers.SerializerMethodField()
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)

    def get_rater(self, exclusion) -> str:
        if exclusion.user_id:
            return f"u:{exclusion.user_id}"
        return f"c:{exclusion.campaign_worker_id}"


class ArenaExclusionCreateSerializer(serializers.Serializer):
    rater = serializers.CharField(help_text="u:<user id> or c:<campaign worker id>")
    reason = serializers.CharField(max_length=2000)


class ArenaRaterSerializer(serializers.Serializer):
    rater = serializers.CharField(help_text="u:<user id> or c:<campaign worker id>")
    label = serializers.CharField()
    agreeing = serializers.IntegerField(help_text="Decisive votes that go the crowd's way.")
    counted = serializers.IntegerField(help_text="Decisive votes on pairs the others judged.")
    share = serializers.FloatField(allow_null=True)
    flagged = serializers.BooleanField(help_text="Far below the other raters' agreement.")
