"""Forms generated from the task config: one small builder function per field type.

Contract: ``FIELD_BUILDERS`` maps each ``FieldType`` to a function ``(spec) -> forms.Field``
(None for types that are never entered, such as ``prob``). ``ConfigForm`` subclasses build
their fields from a tuple of ``FieldSpec`` and lay them out with crispy; ``config_values()``
returns the submission as the JSON the config expects (a selection is
``{"text": ..., "start": ...}``), and ``add_issues()`` attaches ``check_*`` issues (from
``tasks.config.values``) to the field they name. The create page, the validate page and the
admin preview all use these forms; nothing here touches the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from crispy_forms.bootstrap import InlineRadios
from crispy_forms.helper import FormHelper
from crispy_forms.layout import HTML, Div, Field, Fieldset, Layout
from django import forms
from django.core import signing, validators
from django.utils import timezone
from django.utils.html import escape

from annotation.models import ValidationLabel
from annotation.scales import (
    build_label_sliders,
    build_label_with_slider,
    build_slider,
    build_text_with_slider,
)
from tasks.config.types import ChoiceWidget, FieldSpec, FieldType, TaskConfig
from tasks.markdown import render_markdown

STARTED_AT_SALT = "annotation.started_at"
# Radio buttons carrying this attribute are picked with the number keys (static/annotation/
# shortcuts.js numbers them in page order); the attribute's value names the group.
SHORTCUT_GROUP_ATTR = "data-shortcut-group"
MAX_TIME_SPENT_MS = 24 * 3600 * 1000


# -- time spent ----------
def sign_started_at() -> str:
    """Return a signed "now" (milliseconds) for a hidden field; the server checks it back."""
    return signing.dumps(int(timezone.now().timestamp() * 1000), salt=STARTED_AT_SALT)


def time_spent_ms(signed: str | None) -> int | None:
    """Return the milliseconds since ``signed`` was issued, or None if it is not valid."""
    if not signed:
        return None
    try:
        started = signing.loads(signed, salt=STARTED_AT_SALT, max_age=24 * 3600)
    except (signing.BadSignature, TypeError, ValueError):
        return None
    if not isinstance(started, int):
        return None
    spent = int(timezone.now().timestamp() * 1000) - started
    return max(0, min(spent, MAX_TIME_SPENT_MS))


# -- the span-selection field -------------------------------------------------------------------
class SelectionWidget(forms.MultiWidget):
    """The selected text (read-only, filled by the page's script) and its character offset."""

    template_name = "annotation/widgets/selection.html"

    def __init__(self, reference_name: str, attrs=None):
        self.reference_name = reference_name
        widgets = (
            forms.TextInput(
                attrs={
                    "readonly": "readonly",
                    "class": "form-control",
                    "data-span-text": reference_name,
                    "placeholder": "Select the answer in the text above with the mouse",
                }
            ),
            forms.HiddenInput(attrs={"data-span-start": reference_name}),
        )
        super().__init__(widgets, attrs)

    def decompress(self, value):
        if isinstance(value, Mapping):
            return [value.get("text", ""), value.get("start", "")]
        if isinstance(value, str):
            return [value, ""]
        return ["", ""]

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        context["widget"]["reference_name"] = self.reference_name
        return context


class SelectionField(forms.MultiValueField):
    """A ``context_string_selection``: cleans to ``{"text": str, "start": int}`` or None."""

    def __init__(self, reference_name: str, **kwargs):
        fields = (
            forms.CharField(required=False, strip=False, max_length=20_000),
            forms.IntegerField(required=False, min_value=0),
        )
        kwargs.setdefault("widget", SelectionWidget(reference_name))
        super().__init__(fields, require_all_fields=False, **kwargs)

    def compress(self, data_list):
        if not data_list or not data_list[0]:
            return None
        text, start = data_list[0], data_list[1]
        value: dict[str, Any] = {"text": text}
        if start is not None:
            value["start"] = start
        return value


# -- one builder per field type ----------
def _common(spec: FieldSpec) -> dict[str, Any]:
    return {
        "label": spec.display_name or spec.name,
        "required": not spec.optional,
        "help_text": spec.help_text,
    }


TOO_LONG_MESSAGE = (
    "This is %(show_value)d characters long; the limit is %(limit_value)d. "
    "Please shorten it and submit again."
)


class LimitedTextField(forms.CharField):
    """A config ``string`` whose ``max_length`` is counted on the page and checked here.

    The widget carries ``data-max-length`` (the page's counter reads it) instead of the
    ``maxlength`` attribute, with which a browser cuts a paste at the limit without a word.
    Line breaks count as one character, as the page counts them (a browser sends CR LF).
    """

    def __init__(self, *, max_length: int | None = None, **kwargs):
        super().__init__(max_length=max_length, **kwargs)
        if max_length is not None:
            self.validators = [
                validator
                for validator in self.validators
                if not isinstance(validator, validators.MaxLengthValidator)
            ]
            self.validators.append(
                validators.MaxLengthValidator(int(max_length), message=TOO_LONG_MESSAGE)
            )

    def widget_attrs(self, widget):
        attrs = super().widget_attrs(widget)
        limit = attrs.pop("maxlength", None)
        if limit is not None:
            attrs["data-max-length"] = limit
        return attrs

    def to_python(self, value):
        value = super().to_python(value)
        return value.replace("\r\n", "\n") if value else value


def build_string(spec: FieldSpec) -> forms.Field:
    rows = 4 if spec.multiline else 2
    return LimitedTextField(
        max_length=spec.max_length,
        widget=forms.Textarea(attrs={"rows": rows, "placeholder": spec.placeholder}),
        **_common(spec),
    )


CHOICE_WIDGETS = {
    ChoiceWidget.RADIO: lambda: forms.RadioSelect(),
    ChoiceWidget.INLINE_RADIO: lambda: forms.RadioSelect(),
    ChoiceWidget.DROPDOWN: lambda: forms.Select(),
}


def build_multiclass(spec: FieldSpec) -> forms.Field:
    choices = [(label, label) for label in spec.labels]
    if spec.widget is not None:
        widget = CHOICE_WIDGETS[spec.widget]()
        if spec.widget == ChoiceWidget.DROPDOWN:
            choices = [("", spec.placeholder or "Choose...")] + choices
    else:
        widget = forms.RadioSelect() if len(choices) <= 6 else forms.Select()
    return forms.ChoiceField(choices=choices, widget=widget, **_common(spec))


def build_multilabel(spec: FieldSpec) -> forms.Field:
    return forms.MultipleChoiceField(
        choices=[(label, label) for label in spec.labels],
        widget=forms.CheckboxSelectMultiple,
        **_common(spec),
    )


def build_selection(spec: FieldSpec) -> forms.Field:
    return SelectionField(spec.reference_name or "", **_common(spec))


def build_image(spec: FieldSpec) -> forms.Field:
    return forms.URLField(
        assume_scheme="https",
        max_length=2000,
        widget=forms.URLInput(attrs={"placeholder": spec.placeholder or "https://..."}),
        **_common(spec),
    )


def build_prob(spec: FieldSpec) -> None:
    """Probabilities come from the model: never an input (shown as bars instead)."""
    return None


FIELD_BUILDERS: dict[FieldType, Callable[[FieldSpec], forms.Field | None]] = {
    FieldType.STRING: build_string,
    FieldType.MULTICLASS: build_multiclass,
    FieldType.MULTILABEL: build_multilabel,
    FieldType.CONTEXT_STRING_SELECTION: build_selection,
    FieldType.IMAGE: build_image,
    FieldType.PROB: build_prob,
    FieldType.SLIDER: build_slider,
    FieldType.LABEL_SLIDERS: build_label_sliders,
    FieldType.LABEL_WITH_SLIDER: build_label_with_slider,
    FieldType.TEXT_WITH_SLIDER: build_text_with_slider,
}


def field_layout(spec: FieldSpec):
    """The crispy layout of one config field: the field, after its instructions if any."""
    field = (
        InlineRadios(spec.name) if spec.widget == ChoiceWidget.INLINE_RADIO else Field(spec.name)
    )
    if not spec.instructions:
        return field
    return Div(HTML(instructions_html(spec)), field, css_class="field-instructed")


def instructions_html(spec: FieldSpec) -> str:
    """The field's instructions as a folded block of sanitised Markdown.

    Crispy's ``HTML`` is a template: every brace is written as an entity, so an owner's text
    cannot reach the template language.
    """
    body = render_markdown(spec.instructions)
    body = body.replace("{", "&#123;").replace("}", "&#125;")
    label = escape(spec.display_name).replace("{", "&#123;").replace("}", "&#125;")
    opened = " open" if spec.instructions_open else ""
    return (
        f'<details class="field-instructions"{opened}><summary>Instructions: {label}'
        f"</summary>{body}</details>"
    )


def build_field(spec: FieldSpec) -> forms.Field | None:
    return FIELD_BUILDERS[spec.type](spec)


# -- forms ----------
class ConfigForm(forms.Form):
    """A form whose fields are config fields; subclasses add their own controls."""

    def __init__(self, *args, specs: Iterable[FieldSpec] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.specs: list[FieldSpec] = []
        for spec in specs:
            field = build_field(spec)
            if field is not None:
                self.fields[spec.name] = field
                self.specs.append(spec)
        self.helper = FormHelper()
        self.helper.form_tag = False
        self.helper.disable_csrf = True

    def config_values(self) -> dict[str, Any]:
        """Return the cleaned config values, leaving out blank optional answers."""
        values: dict[str, Any] = {}
        for spec in self.specs:
            value = self.cleaned_data.get(spec.name)
            if value in (None, "", []):
                continue
            if spec.type == FieldType.MULTILABEL:
                value = list(value)
            values[spec.name] = value
        return values

    def add_issues(self, issues) -> None:
        """Attach ``ConfigIssue``s to their fields (others become form errors)."""
        for issue in issues:
            field = issue.path if issue.path in self.fields else None
            self.add_error(field, issue.message)


class CreateForm(ConfigForm):
    """The worker's example: the config's inputs plus the page's own controls."""

    context_id = forms.IntegerField(required=False, widget=forms.HiddenInput)
    started_at = forms.CharField(required=False, widget=forms.HiddenInput)
    # The goal label the platform asked for when it showed the form (the goal field holds the
    # one the worker chose).
    asked_label = forms.CharField(required=False, max_length=200, widget=forms.HiddenInput)
    retain_input = forms.BooleanField(required=False, label="Retain my input for the same context")
    sandbox = forms.BooleanField(
        required=False,
        label="Sandbox: try the model without storing anything",
    )

    def __init__(self, *args, config: TaskConfig, goal_label: str = "", **kwargs):
        super().__init__(*args, specs=config.input, **kwargs)
        self.config = config
        goal = config.goal_field
        if goal is not None and goal_label and goal.name in self.fields:
            self.fields[goal.name].initial = goal_label
            self.fields["asked_label"].initial = goal_label
        shortcut_field = self.label_choice_field()
        if shortcut_field is not None:
            shortcut_field.widget.attrs[SHORTCUT_GROUP_ATTR] = "label"
        if not self.is_bound and "started_at" not in self.initial:
            self.initial["started_at"] = sign_started_at()
        self.helper.layout = Layout(
            *self._goal_first(),
            "context_id",
            "started_at",
            "asked_label",
            HTML('{% include "annotation/_next_context.html" %}'),
            Div(
                Field("retain_input", wrapper_class="form-check form-switch me-4"),
                Field("sandbox", wrapper_class="form-check form-switch"),
                css_class="d-flex flex-wrap mt-2",
            ),
        )

    def _goal_first(self) -> list:
        """The config's fields, the goal field first and inside the goal banner, so the banner
        and the label choice are one control (``static/annotation/goal_banner.js`` keeps the
        banner's label in step with the choice)."""
        goal = self.config.goal_field
        fields = [field_layout(spec) for spec in self.specs if goal is None or spec != goal]
        if goal is None or goal.name not in self.fields:
            return fields
        banner = Div(
            HTML('{% include "annotation/_goal_banner.html" with in_form=True %}'),
            field_layout(goal),
            css_class="alert alert-primary goal-banner",
            css_id="goal-banner",
            role="group",
            data_goal_field=goal.name,
        )
        return [banner, *fields]

    def label_choice_field(self) -> forms.Field | None:
        """The field the number keys choose in (``1`` its first choice...): the goal field,
        else the first single choice shown as radio buttons; None when there is none."""
        goal = self.config.goal_field
        names = [goal.name] if goal is not None else []
        names += [spec.name for spec in self.specs if spec.type == FieldType.MULTICLASS]
        for name in names:
            field = self.fields.get(name)
            if field is not None and isinstance(field.widget, forms.RadioSelect):
                return field
        return None


class MetadataForm(ConfigForm):
    """Metadata answers (``metadata.create`` or ``metadata.validate`` fields)."""

    def __init__(self, *args, specs: Iterable[FieldSpec], **kwargs):
        super().__init__(*args, specs=specs, **kwargs)
        self.helper.layout = Layout(*[field_layout(spec) for spec in self.specs])


VERDICT_HELP = {
    ValidationLabel.CORRECT: "The example is valid and its label is right.",
    ValidationLabel.INCORRECT: "The example's label is wrong.",
    ValidationLabel.FLAGGED: "The example breaks the instructions or is offensive.",
}


class ValidateForm(ConfigForm):
    """A verdict (correct, incorrect or flag) plus the metadata.validate fields.

    Every metadata field is shown, grouped by the verdict it belongs to; only the fields of
    the chosen verdict are kept (and checked) on submit.
    """

    label = forms.ChoiceField(
        choices=ValidationLabel.choices,
        # The number keys pick a verdict: 1 correct, 2 incorrect, 3 flag (shortcuts.js).
        widget=forms.RadioSelect(attrs={SHORTCUT_GROUP_ATTR: "verdict"}),
        label="Your verdict",
    )
    example_id = forms.IntegerField(widget=forms.HiddenInput)
    # The config version the example was written under: the POST is checked against it
    # without reading the example first (the service checks the example's own version).
    config_version = forms.IntegerField(widget=forms.HiddenInput, required=False)
    started_at = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, config: TaskConfig, **kwargs):
        super().__init__(*args, specs=config.metadata_validate, **kwargs)
        self.config = config
        # The config's validation_options may offer fewer verdicts than the three.
        offered = {verdict.value for verdict in config.verdicts}
        self.fields["label"].choices = [
            (value, label) for value, label in ValidationLabel.choices if value in offered
        ]
        # Required-ness depends on the verdict: checked in clean() against the chosen one.
        self.required_names = {spec.name for spec in self.specs if not spec.optional}
        for name in self.required_names:
            self.fields[name].required = False
        if not self.is_bound and "started_at" not in self.initial:
            self.initial["started_at"] = sign_started_at()
        groups: list = []
        unconditional = [field_layout(s) for s in self.specs if s.validated_label_condition is None]
        if unconditional:
            groups.append(Div(*unconditional))
        for verdict in config.verdicts:
            names = [field_layout(s) for s in self.specs if s.validated_label_condition == verdict]
            if names:
                groups.append(
                    Fieldset(
                        f"If {ValidationLabel(verdict.value).label.lower()}",
                        *names,
                        css_class=f"verdict-fields verdict-{verdict.value}",
                    )
                )
        self.helper.layout = Layout(
            "example_id",
            "config_version",
            "started_at",
            Field("label", css_class="verdict-choice"),
            *groups,
        )

    def verdict_specs(self) -> tuple[FieldSpec, ...]:
        label = self.cleaned_data.get("label")
        return self.config.validate_metadata_fields(label) if label else ()

    def clean(self):
        cleaned = super().clean()
        for spec in self.verdict_specs():
            if spec.name in self.required_names and cleaned.get(spec.name) in (None, "", []):
                self.add_error(spec.name, f"{spec.display_name} is required for this verdict")
        return cleaned

    def metadata_values(self) -> dict[str, Any]:
        keep = {spec.name for spec in self.verdict_specs()}
        return {name: value for name, value in self.config_values().items() if name in keep}


class ReviewFilterForm(forms.Form):
    min_flags = forms.IntegerField(required=False, min_value=0, initial=0, label="Flags at least")
    disagreement = forms.BooleanField(required=False, label="Only with disagreement")
    include_settled = forms.BooleanField(required=False, label="Include settled examples")


class OwnerVerdictForm(forms.Form):
    label = forms.ChoiceField(choices=ValidationLabel.choices, widget=forms.RadioSelect)
