"""Typed, immutable view of a parsed task config.

Contract: instances are built only by ``tasks.config.parse_task_config``. They hold no
raw YAML dicts; every other module asks these objects its questions (model input fields,
targets, resolved outputs, metadata fields with their conditions, metrics with their
directions and default weights). Pure: no DB, no HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING

from tasks.metrics.jobs import JOB_METRICS as JOB_METRIC_REGISTRY

if TYPE_CHECKING:
    from tasks.config.arena import ArenaConfig
    from tasks.config.chat import ChatConfig


class FieldType(StrEnum):
    STRING = "string"
    MULTICLASS = "multiclass"
    MULTILABEL = "multilabel"
    CONTEXT_STRING_SELECTION = "context_string_selection"
    IMAGE = "image"
    PROB = "prob"
    # A rating on a scale (Dynabench v2 ``simple-slider``): an integer from min to max.
    SLIDER = "slider"
    # One rating per label (v2 ``multi-slider-selection``): ``{label: integer}``.
    LABEL_SLIDERS = "label_sliders"
    # One label and its rating (v2 ``select-option-with-slider``): ``{"label", "score"}``.
    LABEL_WITH_SLIDER = "label_with_slider"
    # A text and its rating (v2 ``basic-input-with-slider``): ``{"text", "score"}``.
    TEXT_WITH_SLIDER = "text_with_slider"


# Field types whose value carries a rating on the field's scale (min_value..max_value).
SCALE_FIELD_TYPES = frozenset(
    {
        FieldType.SLIDER,
        FieldType.LABEL_SLIDERS,
        FieldType.LABEL_WITH_SLIDER,
        FieldType.TEXT_WITH_SLIDER,
    }
)
# Field types with a list of labels to choose from.
LABELLED_FIELD_TYPES = frozenset(
    {
        FieldType.MULTICLASS,
        FieldType.MULTILABEL,
        FieldType.LABEL_SLIDERS,
        FieldType.LABEL_WITH_SLIDER,
    }
)


class ChoiceWidget(StrEnum):
    """How a ``multiclass`` field is shown (``widget``); the default depends on its labels."""

    RADIO = "radio"
    INLINE_RADIO = "inline_radio"
    DROPDOWN = "dropdown"


class Verdict(StrEnum):
    """A validator's verdict on an example (``validated_label_condition`` values)."""

    CORRECT = "correct"
    INCORRECT = "incorrect"
    FLAGGED = "flagged"


class Direction(StrEnum):
    HIGHER = "higher"
    LOWER = "lower"


DEFAULT_MAX_LENGTH = 10_000
DEFAULT_SCALE = (0, 100)


@dataclass(frozen=True)
class FieldSpec:
    """One field of the config (context, input, output or metadata)."""

    name: str
    type: FieldType
    display_name: str
    placeholder: str = ""
    help_text: str = ""
    optional: bool = False
    max_length: int = DEFAULT_MAX_LENGTH
    multiline: bool = False
    labels: tuple[str, ...] = ()
    as_goal_message: bool = False
    reference_name: str | None = None
    single_prob: bool = False
    # metadata.create only: show when the model was (True) / was not (False) fooled.
    model_wrong_condition: bool | None = None
    # metadata.validate only: show only for this verdict.
    validated_label_condition: Verdict | None = None
    # Longer guidance shown above the box, folded unless ``instructions_open``.
    instructions: str = ""
    instructions_open: bool = False
    # multiclass only: radio buttons, inline radio buttons or a drop-down ("" = by size).
    widget: ChoiceWidget | None = None
    # Scale fields (SCALE_FIELD_TYPES): the integer range, the words at its two ends and the
    # question asked about the rating.
    min_value: int = DEFAULT_SCALE[0]
    max_value: int = DEFAULT_SCALE[1]
    scale_labels: tuple[str, ...] = ()
    scale_prompt: str = ""
    # 1-based line of the field in the YAML source, when known.
    line: int | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ModelWrongMetric:
    """How "the model was fooled" is decided: exact_match, string_f1 or ask_user."""

    type: str = "ask_user"
    reference_names: tuple[str, ...] = ()
    threshold: float | None = None


@dataclass(frozen=True)
class PerfMetric:
    """One ``perf_metric`` entry; ``name`` is how scores and weights refer to it."""

    type: str
    reference_name: str
    name: str
    # Extra options the metric accepts (e.g. ``spm_model`` for sp_bleu), read-only.
    options: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class MetricSpec:
    """A leaderboard metric: perf, delta (fairness/robustness) or job metric.

    ``resolution`` (with ``relative_resolution``) and ``self_reported`` come from the
    metric registry (``tasks.metrics.jobs``); perf and delta metrics are exact (0).
    """

    name: str
    kind: str  # "perf" | "delta" | "job"
    direction: Direction
    default_weight: float
    is_main: bool = False
    resolution: float = 0.0
    relative_resolution: bool = False
    self_reported: bool = False


@dataclass(frozen=True)
class ExternalValidator:
    """Dynabench's ``external_validator``: send the worker to ``url`` after N examples."""

    url: str
    required_examples: int
    # Extra query parameters added to the URL (``artifacts``).
    parameters: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class ModelMaps:
    """How the task's fields are named in a model's request and answer.

    ``request_keys`` renames model input fields in the request (``{field: key}``, only the
    renamed ones); ``answer_keys`` says which key of the answer carries an output field
    (``{output field: key}``); ``cast`` maps raw answer values of the prediction field to the
    task's labels (``{str(raw value): label}``).
    """

    request_keys: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    answer_keys: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    prediction_field: str = ""
    cast: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def request_key(self, name: str) -> str:
        return self.request_keys.get(name, name)

    def answer_key(self, name: str) -> str:
        return self.answer_keys.get(name, name)


@dataclass(frozen=True)
class AggregationMetric:
    type: str = "dynascore"
    default_weights: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    # Whether self-reported job metrics (the memory an endpoint states on /health) weigh
    # in the default weighting; off, they default to 0 and a visitor may still weigh them.
    count_self_reported: bool = False


JOB_METRICS: tuple[tuple[str, Direction], ...] = tuple(
    (metric.name, Direction(metric.direction)) for metric in JOB_METRIC_REGISTRY.values()
)
DELTA_METRIC_TYPES = ("fairness", "robustness")
MAIN_METRIC_DEFAULT_WEIGHT = 4.0
OTHER_METRIC_DEFAULT_WEIGHT = 1.0


@dataclass(frozen=True)
class TaskConfig:
    """A validated task config. Build it with ``parse_task_config``."""

    schema_version: int
    context: tuple[FieldSpec, ...]
    input: tuple[FieldSpec, ...]
    # Resolved: abbreviated ``{name: X}`` entries carry X's full definition.
    output: tuple[FieldSpec, ...]
    metadata_create: tuple[FieldSpec, ...]
    metadata_validate: tuple[FieldSpec, ...]
    model_wrong_metric: ModelWrongMetric
    perf_metrics: tuple[PerfMetric, ...]
    delta_metrics: tuple[str, ...]
    aggregation_metric: AggregationMetric
    goal_message: str = ""
    content_warning: str = ""
    instructions: str = ""
    # "v1" (fields in ``input``) or "v2" (Dynabench's components: goal, user_input...).
    source_format: str = "v1"
    model_maps: ModelMaps = field(default_factory=ModelMaps)
    # The verdicts a validator may give, in order (v2 ``validation_options``).
    verdicts: tuple[Verdict, ...] = tuple(Verdict)
    external_validator: ExternalValidator | None = None
    # The create page's title (v2 ``creation_samples_title``); "" keeps the task's name.
    creation_title: str = ""
    # The input shown as "your input" beside the model's answer (v2 ``response_fields``).
    response_field: str = ""
    # Problems that do not stop the config from loading (upstream slips), with codes.
    warnings: tuple = field(default=(), compare=False)
    # The ``chat`` section (``tasks.config.chat``): None for a task without conversations.
    chat: ChatConfig | None = None
    # The ``arena`` section (``tasks.config.arena``): None for a task without battles.
    arena: ArenaConfig | None = None

    # -- fields -------------------------------------------------------------------------
    def field(self, name: str) -> FieldSpec | None:
        """Return the context/input/output field called ``name`` (input wins), or None."""
        for group in (self.input, self.context, self.output):
            for spec in group:
                if spec.name == name:
                    return spec
        return None

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.output)

    @property
    def target_fields(self) -> tuple[FieldSpec, ...]:
        """Inputs that are also outputs: the gold answer the worker writes."""
        outs = set(self.output_names)
        return tuple(f for f in self.input if f.name in outs)

    @property
    def worker_input_fields(self) -> tuple[FieldSpec, ...]:
        """Inputs that are not targets: sent to the model."""
        outs = set(self.output_names)
        return tuple(f for f in self.input if f.name not in outs)

    @property
    def model_input_fields(self) -> tuple[FieldSpec, ...]:
        """Fields sent to the model (besides ``uid``): non-target inputs, then contexts."""
        return self.worker_input_fields + self.context

    @property
    def model_input_names(self) -> tuple[str, ...]:
        """Keys of one model input: ``uid`` plus the model input fields."""
        return ("uid",) + tuple(f.name for f in self.model_input_fields)

    @property
    def model_request_names(self) -> tuple[str, ...]:
        """The keys a model receives: ``model_input_names`` renamed by ``model_input``."""
        return ("uid",) + tuple(
            self.model_maps.request_key(f.name) for f in self.model_input_fields
        )

    @property
    def gold_fields(self) -> tuple[FieldSpec, ...]:
        """Outputs a dataset row carries as gold: the targets and the perf metric references."""
        names = {f.name for f in self.target_fields}
        names.update(metric.reference_name for metric in self.perf_metrics)
        return tuple(f for f in self.output if f.name in names)

    @property
    def goal_field(self) -> FieldSpec | None:
        """The multiclass input whose label is preset as the worker's goal, if any."""
        for spec in self.input:
            if spec.type == FieldType.MULTICLASS and spec.as_goal_message:
                return spec
        return None

    def create_metadata_fields(self, model_wrong: bool | None) -> tuple[FieldSpec, ...]:
        """Metadata asked after the model answered; None means no verdict is known."""
        return tuple(
            f
            for f in self.metadata_create
            if f.model_wrong_condition is None or f.model_wrong_condition == model_wrong
        )

    def validate_metadata_fields(self, verdict: Verdict | str | None) -> tuple[FieldSpec, ...]:
        """Metadata asked of a validator for ``verdict`` (None: the unconditional ones)."""
        return tuple(
            f
            for f in self.metadata_validate
            if f.validated_label_condition is None or f.validated_label_condition == verdict
        )

    # -- metrics ------------------------------------------------------------------------
    @property
    def main_perf_metric(self) -> PerfMetric:
        return self.perf_metrics[0]

    def metrics(self) -> tuple[MetricSpec, ...]:
        """Every leaderboard metric with its direction and default Dynascore weight.

        Default weights: 4 for the main perf metric and 1 for every other metric, unless
        ``aggregation_metric.default_weights`` names the metric. A self-reported metric
        (memory) weighs 0 unless ``aggregation_metric.count_self_reported`` is true.
        """
        aggregation = self.aggregation_metric
        overrides = aggregation.default_weights
        specs: list[MetricSpec] = []

        def add(name: str, kind: str, direction: Direction, is_main: bool = False) -> None:
            default = MAIN_METRIC_DEFAULT_WEIGHT if is_main else OTHER_METRIC_DEFAULT_WEIGHT
            weight = float(overrides.get(name, default))
            job = JOB_METRIC_REGISTRY.get(name) if kind == "job" else None
            self_reported = job is not None and job.self_reported
            if self_reported and not aggregation.count_self_reported:
                weight = 0.0
            specs.append(
                MetricSpec(
                    name,
                    kind,
                    direction,
                    weight,
                    is_main,
                    resolution=job.resolution if job is not None else 0.0,
                    relative_resolution=job is not None and job.relative,
                    self_reported=self_reported,
                )
            )

        for index, perf in enumerate(self.perf_metrics):
            add(perf.name, "perf", Direction.HIGHER, is_main=index == 0)
        for delta in self.delta_metrics:
            add(delta, "delta", Direction.HIGHER)
        for name, direction in JOB_METRICS:
            add(name, "job", direction)
        return tuple(specs)
