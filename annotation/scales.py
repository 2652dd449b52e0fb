"""Form fields for the rating field types (sliders), server-rendered and checked on the server.

Contract: ``build_slider``, ``build_label_sliders``, ``build_label_with_slider`` and
``build_text_with_slider`` take a ``FieldSpec`` of the matching type and return a Django form
field whose cleaned value has the shape ``tasks.config.values`` checks (an integer; ``{label:
integer}``; ``{"label", "score"}``; ``{"text", "score"}``), or None when an optional field is
left empty. A scale is a native ``<input type="range">`` (arrow keys, Home and End move it)
between the scale's two end words; ``static/annotation/scales.js`` shows its current value
beside it. Every bound is checked again here, whatever the browser sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from tasks.config.types import FieldSpec


def _common(spec: FieldSpec) -> dict[str, Any]:
    return {
        "label": spec.display_name or spec.name,
        "required": not spec.optional,
        "help_text": spec.help_text,
    }


def _ends(spec: FieldSpec) -> tuple[str, str]:
    if len(spec.scale_labels) == 2:
        return spec.scale_labels[0], spec.scale_labels[1]
    return str(spec.min_value), str(spec.max_value)


class ScaleWidget(forms.NumberInput):
    """A range input between the scale's end words, with its value shown beside it."""

    input_type = "range"
    template_name = "annotation/widgets/scale.html"

    def __init__(self, spec: FieldSpec, *, caption: str = "", attrs=None):
        self.ends = _ends(spec)
        self.caption = caption
        attrs = {
            "min": spec.min_value,
            "max": spec.max_value,
            "step": 1,
            "class": "form-range",
            "data-scale": "",
            **(attrs or {}),
        }
        super().__init__(attrs)

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        context["widget"]["ends"] = self.ends
        context["widget"]["caption"] = self.caption
        return context


def _score_field(spec: FieldSpec, required: bool = True) -> forms.IntegerField:
    return forms.IntegerField(required=required, min_value=spec.min_value, max_value=spec.max_value)


def build_slider(spec: FieldSpec) -> forms.Field:
    """``slider``: one integer on the scale."""
    return forms.IntegerField(
        min_value=spec.min_value,
        max_value=spec.max_value,
        widget=ScaleWidget(spec, caption=spec.scale_prompt),
        **_common(spec),
    )


class GroupWidget(forms.MultiWidget):
    """Sub-widgets laid out one under the other, each with its caption."""

    template_name = "annotation/widgets/scale_group.html"

    def __init__(self, widgets, keys: tuple[str, ...], attrs=None):
        self.keys = keys
        super().__init__(widgets, attrs)

    def decompress(self, value):
        if isinstance(value, Mapping):
            return [value.get(key) for key in self.keys]
        return [None] * len(self.keys)


class LabelSlidersField(forms.MultiValueField):
    """``label_sliders``: one rating per label, cleaned to ``{label: integer}``."""

    def __init__(self, spec: FieldSpec, **kwargs):
        self.labels = spec.labels
        fields = tuple(_score_field(spec) for _label in spec.labels)
        widgets = [ScaleWidget(spec, caption=label) for label in spec.labels]
        kwargs.setdefault("widget", GroupWidget(widgets, spec.labels))
        super().__init__(fields, require_all_fields=True, **kwargs)

    def compress(self, data_list):
        if not data_list or all(value is None for value in data_list):
            return None
        return dict(zip(self.labels, data_list, strict=True))


def build_label_sliders(spec: FieldSpec) -> forms.Field:
    return LabelSlidersField(spec, **_common(spec))


class AnswerWithScoreField(forms.MultiValueField):
    """An answer (a label or a text) and its rating, cleaned to ``{key: ..., "score": n}``."""

    def __init__(self, key: str, answer: forms.Field, answer_widget, spec: FieldSpec, **kwargs):
        self.key = key
        widgets = [answer_widget, ScaleWidget(spec, caption=spec.scale_prompt)]
        kwargs.setdefault("widget", GroupWidget(widgets, (key, "score")))
        super().__init__((answer, _score_field(spec)), require_all_fields=True, **kwargs)

    def compress(self, data_list):
        if not data_list or data_list[0] in (None, ""):
            return None
        return {self.key: data_list[0], "score": data_list[1]}


def build_label_with_slider(spec: FieldSpec) -> forms.Field:
    """``label_with_slider``: one label and its rating."""
    choices = [(label, label) for label in spec.labels]
    answer = forms.ChoiceField(choices=choices)
    return AnswerWithScoreField(
        "label", answer, forms.RadioSelect(choices=choices), spec, **_common(spec)
    )


def build_text_with_slider(spec: FieldSpec) -> forms.Field:
    """``text_with_slider``: a text and its rating."""
    answer = forms.CharField(max_length=spec.max_length)
    widget = forms.TextInput(attrs={"placeholder": spec.placeholder, "class": "form-control"})
    return AnswerWithScoreField("text", answer, widget, spec, **_common(spec))
