"""API serializers of the leaderboards: datasets, runs, scores, the table, forks, snapshots.

The leaderboard table is rendered by ``LeaderboardTable.as_dict()`` (the JSON export's
code path); ``LeaderboardTableSerializer`` only documents that shape in the schema.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import JSONObjectField
from leaderboards.models import AccessType, PerturbationKind, RunStatus, RunTrigger
from leaderboards.selectors.datasets import dataset_inputs_to_others
from leaderboards.tables.results import DEFAULT_SORT

# -- datasets ----------------------------------------------------------------------------------


class DatasetSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    access_type = serializers.ChoiceField(choices=AccessType.choices)
    round = serializers.SerializerMethodField()
    description = serializers.CharField()
    source_url = serializers.CharField()
    weight = serializers.FloatField()
    row_count = serializers.IntegerField()
    perturbation_of = serializers.SerializerMethodField()
    perturbation_kind = serializers.CharField()
    generated = serializers.BooleanField()
    inputs_to_others = serializers.SerializerMethodField(
        help_text="Whether the inputs go to models whose owner does not own the task."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_inputs_to_others(self, dataset) -> bool:
        return dataset_inputs_to_others(dataset)

    def get_round(self, dataset) -> int | None:
        return dataset.round.number if dataset.round_id else None

    def get_perturbation_of(self, dataset) -> str | None:
        return dataset.perturbation_of.slug if dataset.perturbation_of_id else None


class DatasetUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="JSON Lines (.jsonl) or CSV (.csv).")
    name = serializers.CharField(max_length=200)
    slug = serializers.SlugField(
        max_length=100,
        required=False,
        help_text="Default: from the name. An existing slug is replaced.",
    )
    format = serializers.ChoiceField(choices=["jsonl", "csv"], required=False)
    access_type = serializers.ChoiceField(choices=AccessType.choices, default=AccessType.SCORING)
    round = serializers.IntegerField(required=False, min_value=1, max_value=1_000_000)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    source_url = serializers.URLField(required=False, allow_blank=True, default="")
    weight = serializers.FloatField(required=False, min_value=0, max_value=100)
    perturbation_of = serializers.SlugField(
        required=False, allow_blank=True, default="", help_text="Slug of the original dataset."
    )
    perturbation_kind = serializers.ChoiceField(
        choices=[kind for kind in PerturbationKind.values if kind], required=False
    )
    inputs_to_others = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Send the inputs to models whose owner does not own the task. Default: no "
        "for a hidden dataset, yes otherwise; a replaced dataset keeps its choice.",
    )


class DatasetExampleSerializer(serializers.Serializer):
    position = serializers.IntegerField()
    uid = serializers.CharField()
    inputs = JSONObjectField()
    tags = serializers.ListField(child=serializers.CharField())
    gold = JSONObjectField(
        allow_null=True,
        help_text="A public dataset's gold for everyone, every dataset's for the task's "
        "owners; else null.",
    )
    input_id = serializers.CharField()


class DatasetExamplePageSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    page = serializers.IntegerField()
    page_count = serializers.IntegerField()
    results = DatasetExampleSerializer(many=True)


# -- runs and scores ---------------------------------------------------------------------------


class RunProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    percent = serializers.FloatField(
        help_text="done / total in percent, rounded down: 100 only when done equals total."
    )
    rate = serializers.FloatField(allow_null=True, help_text="Examples per second.")
    eta_seconds = serializers.FloatField(allow_null=True)
    state = serializers.ChoiceField(choices=RunStatus.choices)
    state_label = serializers.CharField()
    finished = serializers.BooleanField()
    failed = serializers.BooleanField()
    partial = serializers.BooleanField(
        help_text="A done run with fewer predictions than the dataset has examples (a "
        "predictions file accepted with partial=true)."
    )
    counts = serializers.CharField(help_text='In words, e.g. "300 of 400 examples (partial)".')


@extend_schema_field(
    {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "description": "Examples of the dataset with the tag."}
        },
        "additionalProperties": {"type": "number", "format": "double", "nullable": True},
        "description": "The tag's example count, then its value of each metric by name.",
    }
)
class TagScoresField(serializers.Field):
    """One tag's figures: ``count`` (an integer) and a value (or null) per metric name."""

    def to_representation(self, value):
        return {
            name: (int(figure) if name == "count" else None if figure is None else float(figure))
            for name, figure in value.items()
        }


class ScoreSerializer(serializers.Serializer):
    dataset = serializers.CharField(source="dataset.slug")
    dataset_name = serializers.CharField(source="dataset.name")
    access_type = serializers.CharField(source="dataset.access_type")
    main_metric = serializers.CharField()
    main_value = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    metrics = serializers.DictField(child=serializers.FloatField(allow_null=True))
    per_tag = serializers.DictField(child=TagScoresField())
    example_count = serializers.IntegerField()
    covered = serializers.IntegerField(
        source="covered_count",
        allow_null=True,
        help_text="Examples with a prediction, of example_count (null: not known).",
    )
    partial = serializers.BooleanField(
        source="is_partial",
        help_text="True when examples had no prediction (a predictions file accepted as "
        "partial): they count as wrong.",
    )
    coverage = serializers.CharField(help_text='E.g. "300 of 400"; empty when not known.')
    updated_at = serializers.DateTimeField()


class RunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    model = serializers.IntegerField(source="model_id")
    model_name = serializers.CharField(source="model.name")
    dataset = serializers.CharField(
        source="dataset.slug", allow_null=True, help_text="Null on a sealed (hidden) dataset."
    )
    sealed = serializers.BooleanField(
        help_text="True when the run is on a hidden dataset whose figures you may not see: "
        "only its state and progress are given."
    )
    status = serializers.ChoiceField(choices=RunStatus.choices)
    trigger = serializers.ChoiceField(choices=RunTrigger.choices)
    total = serializers.IntegerField()
    done = serializers.IntegerField(help_text="Examples sent and answered.")
    failed_count = serializers.IntegerField(allow_null=True)
    error_code = serializers.CharField()
    error_message = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    progress = RunProgressSerializer()
    can_manage = serializers.BooleanField()
    score = ScoreSerializer(allow_null=True)


class RunCreateSerializer(serializers.Serializer):
    dataset = serializers.SlugField(help_text="Slug of a dataset of the model's task.")


class PredictionsUploadSerializer(serializers.Serializer):
    dataset = serializers.SlugField()
    file = serializers.FileField(help_text='JSON Lines or CSV: {"uid": ..., <output fields>}.')
    format = serializers.ChoiceField(choices=["jsonl", "csv"], required=False)
    partial = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Accept a file that misses examples: they count as wrong and the score is "
        "marked partial. Without it such a file is refused.",
    )


# -- the leaderboard table (documentation of ``LeaderboardTable.as_dict()``) --------------------

_NullableFloat = serializers.FloatField(allow_null=True)


class WeightsSerializer(serializers.Serializer):
    metrics = serializers.DictField(
        child=serializers.FloatField(), help_text="Weight per metric name (0-100)."
    )
    datasets = serializers.DictField(
        child=serializers.FloatField(), help_text="Weight per dataset slug (0-100)."
    )


class MetricColumnSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    kind = serializers.CharField()
    direction = serializers.CharField()
    weight = serializers.FloatField()
    default_weight = serializers.FloatField()
    is_main = serializers.BooleanField()
    offset = serializers.FloatField()
    amrs = serializers.FloatField(allow_null=True)
    contributes = serializers.BooleanField()
    resolution = serializers.FloatField(
        help_text="The step at which models are compared on this metric (0: exactly)."
    )
    relative_resolution = serializers.BooleanField(
        help_text="The resolution is a fraction of the value (10 % for 0.1)."
    )
    self_reported = serializers.BooleanField(
        help_text="A figure the model's endpoint states about itself (memory from /health)."
    )
    left_out = serializers.BooleanField(
        help_text="Left out of every Dynascore: a listed predictions-file model lacks it."
    )


class DatasetColumnSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    access_type = serializers.CharField()
    round = serializers.IntegerField(allow_null=True)
    weight = serializers.FloatField(allow_null=True)
    default_weight = serializers.FloatField(allow_null=True)


class DatasetCellSerializer(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)


class NextComparisonSerializer(serializers.Serializer):
    model = serializers.CharField(help_text="The model ranked just below this one.")
    main_metric_share = serializers.FloatField(
        allow_null=True,
        help_text="Share (0-1) of the 1,000 bootstrap resamples in which this model's main "
        "metric aggregate beats the next model's (a draw counts half).",
    )
    main_metric_tie = serializers.BooleanField(
        allow_null=True,
        help_text="True when neither model is ahead on the main metric in 95% of the "
        "resamples (the share is above 0.05 and below 0.95): a statistical tie.",
    )
    main_metric_next_ahead = serializers.BooleanField(
        allow_null=True,
        help_text="True when the next model is ahead on the main metric in 95% of the "
        "resamples or more (the share is 0.05 or less).",
    )
    dynascore_share = serializers.FloatField(
        allow_null=True,
        help_text="Share (0-1) of the resamples in which this model's Dynascore beats the next.",
    )
    dynascore_tie = serializers.BooleanField(
        allow_null=True,
        help_text="True when neither model is ahead on the Dynascore in 95% of the "
        "resamples: a statistical tie.",
    )
    dynascore_next_ahead = serializers.BooleanField(
        allow_null=True,
        help_text="True when the next model is ahead on the Dynascore in 95% of the "
        "resamples or more.",
    )


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True)
    model_id = serializers.IntegerField(allow_null=True, help_text="Null for anonymous models.")
    model = serializers.CharField()
    owner = serializers.CharField()
    anonymous = serializers.BooleanField()
    dynascore = serializers.FloatField(allow_null=True)
    dynascore_ci_low = serializers.FloatField(
        allow_null=True,
        help_text="95% bootstrap interval of the Dynascore (4 decimals). It covers the "
        "main metric's sampling noise only: the other metrics (robustness, fairness, job "
        "metrics) and the AMRS keep their point values.",
    )
    dynascore_ci_high = serializers.FloatField(allow_null=True)
    metrics = serializers.DictField(child=serializers.FloatField(allow_null=True))
    ci_low = serializers.FloatField(
        allow_null=True,
        help_text="95% bootstrap interval of the main metric's weighted aggregate.",
    )
    ci_high = serializers.FloatField(allow_null=True)
    ahead_of_next = NextComparisonSerializer(
        allow_null=True, help_text="Against the next ranked model; null for the last one."
    )
    datasets = serializers.DictField(child=DatasetCellSerializer())
    incomplete = serializers.BooleanField()
    missing_metrics = serializers.ListField(child=serializers.CharField())
    contributions = serializers.DictField(child=serializers.FloatField())
    predictions_file = serializers.BooleanField(
        help_text="Scored from predictions files: its job metrics are null (n/a)."
    )
    shares = serializers.DictField(
        child=serializers.FloatField(), help_text="Each metric's share of the Dynascore (0-1)."
    )
    dominant_metric = serializers.CharField(
        allow_null=True,
        help_text="A metric other than the main one making up more than half of the score.",
    )


class TableErrorSerializer(serializers.Serializer):
    code = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class TagLeaderSerializer(serializers.Serializer):
    tag = serializers.CharField()
    model = serializers.CharField()
    value = serializers.FloatField()


class TrendSeriesSerializer(serializers.Serializer):
    model = serializers.CharField()
    values = serializers.ListField(child=serializers.FloatField(allow_null=True))


class TrendsSerializer(serializers.Serializer):
    rounds = serializers.ListField(child=serializers.IntegerField())
    series = TrendSeriesSerializer(many=True)


class LeaderboardTableSerializer(serializers.Serializer):
    task = serializers.CharField()
    main_metric = serializers.CharField()
    weights = WeightsSerializer()
    sort = serializers.CharField()
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    page_count = serializers.IntegerField()
    total_rows = serializers.IntegerField()
    metrics = MetricColumnSerializer(many=True)
    hidden_metrics = serializers.ListField(child=serializers.CharField())
    datasets = DatasetColumnSerializer(many=True)
    rows = LeaderboardRowSerializer(many=True)
    error = TableErrorSerializer(allow_null=True)
    messages = serializers.ListField(
        child=serializers.CharField(), help_text="Query parameters that were ignored, and why."
    )
    best_per_tag = TagLeaderSerializer(many=True)
    trends = TrendsSerializer()
    predictions_file_models = serializers.IntegerField(
        help_text="Listed models scored from predictions files (no job metrics)."
    )
    left_out_metrics = serializers.ListField(
        child=serializers.CharField(),
        help_text="Job metrics left out of every Dynascore because of those models.",
    )


# -- forks and snapshots -----------------------------------------------------------------------


class WeightingInputSerializer(serializers.Serializer):
    weights = WeightsSerializer(
        required=False,
        help_text="Weights to save; missing or unknown entries keep the defaults.",
    )


class ForkCreateSerializer(WeightingInputSerializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(
        required=False, allow_blank=True, max_length=5000, default=""
    )


class SnapshotCreateSerializer(WeightingInputSerializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
    sort = serializers.CharField(required=False, max_length=200, default=DEFAULT_SORT)


class ForkSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    weights = WeightsSerializer()
    created_by = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_created_by(self, fork) -> str | None:
        return fork.created_by.get_username() if fork.created_by_id else None


class ForkDetailSerializer(ForkSerializer):
    table = LeaderboardTableSerializer()


class SnapshotSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    weights = WeightsSerializer()
    created_by = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_created_by(self, snapshot) -> str | None:
        return snapshot.created_by.get_username() if snapshot.created_by_id else None


class SnapshotDetailSerializer(SnapshotSerializer):
    table = LeaderboardTableSerializer()
