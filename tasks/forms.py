"""Forms of the tasks app (admin builder, the public proposal form, self-sign-up)."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm
from django.urls import reverse_lazy

from tasks.config import ConfigIssue, TaskConfig, TaskConfigError, parse_task_config
from tasks.documentation import documentation_url, error_code_anchor
from tasks.models import Round, Task, TaskProposal
from tasks.starter_configs import STARTERS


class ConfigEditorWidget(forms.Textarea):
    """A monospace YAML editor: a line-number gutter with the lines that have problems marked,
    the list of problems under it, links to the reference and one-click starter configs.

    ``check_url`` (optional) is an endpoint that checks the text as it is typed (see
    ``TaskAdmin.config_check_view``); without it the problems are those of the last submit.
    """

    template_name = "tasks/widgets/config_editor.html"

    def __init__(self, attrs=None, *, check_url=None):
        base = {
            "rows": 30,
            "spellcheck": "false",
            "autocapitalize": "off",
            "autocomplete": "off",
            "wrap": "off",
            "class": "config-editor vLargeTextField",
        }
        base.update(attrs or {})
        super().__init__(attrs=base)
        self.check_url = check_url
        self.issues: tuple[ConfigIssue, ...] = ()

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        widget_id = context["widget"]["attrs"].get("id") or f"id_{name}"
        context["widget"].update(
            check_url=str(self.check_url) if self.check_url else "",
            panel_id=f"{widget_id}-check",
            starters=STARTERS,
            starters_id=f"{widget_id}-starters",
            starter_texts={starter.slug: starter.text for starter in STARTERS},
            reference_url=documentation_url("task-config"),
            check=config_check_context(self.issues) if self.issues else None,
        )
        return context

    class Media:
        css = {"all": ["tasks/config_editor.css"]}
        # htmx posts the text as it is typed (the admin does not load it by itself).
        js = ["vendor/htmx/htmx.min.js", "tasks/config_editor.js"]


def config_check_context(issues, config: TaskConfig | None = None) -> dict:
    """Return what ``tasks/widgets/config_check.html`` shows for one check of a config."""
    return {
        "issues": [
            {
                "code": issue.code,
                "path": issue.path,
                "line": issue.line,
                "column": issue.column,
                "message": issue.message,
                "help_url": documentation_url("task-config-errors", error_code_anchor(issue.code)),
            }
            for issue in issues
        ],
        "error_lines": ",".join(
            str(line) for line in sorted({i.line for i in issues if i.line is not None})
        ),
        "config": config,
        "outline": config_outline(config) if config is not None else [],
        "warnings": [
            {
                "code": issue.code,
                "path": issue.path,
                "line": issue.line,
                "message": issue.message,
                "help_url": documentation_url("task-config-errors", error_code_anchor(issue.code)),
            }
            for issue in (config.warnings if config is not None else ())
        ],
    }


def config_outline(config: TaskConfig) -> list[tuple[str, list[str]]]:
    """Return what a valid config makes of a task, as (label, field or metric names)."""
    return [
        ("Contexts (uploaded by the owner)", _names(config.context)),
        ("The worker fills", _names(config.input)),
        ("Targets (the worker's answer the model must match)", _names(config.target_fields)),
        ("Sent to the model", list(config.model_request_names)),
        ("The model answers", list(config.output_names)),
        ("Metrics (the first ranks the leaderboard)", [m.name for m in config.perf_metrics]),
    ]


def _names(specs) -> list[str]:
    return [spec.name for spec in specs]


class TaskConfigField(forms.CharField):
    """A YAML task config; cleaning parses it and keeps every problem with its line.

    The field's error is one summary sentence; the problems themselves are listed by the
    widget under the editor (``widget.issues``), each with its line, column and code.
    """

    def __init__(self, *, check_url=None, **kwargs):
        kwargs.setdefault("widget", ConfigEditorWidget(check_url=check_url))
        kwargs.setdefault("strip", False)
        super().__init__(**kwargs)

    def to_python(self, value):
        # Browsers submit textareas with CRLF; store the YAML with plain newlines.
        value = super().to_python(value)
        return value.replace("\r\n", "\n").replace("\r", "\n") if value else value

    def validate(self, value):
        super().validate(value)
        if not value and not self.required:
            return
        try:
            parse_task_config(value)
        except TaskConfigError as error:
            self.widget.issues = error.issues
            count = len(error.issues)
            raise forms.ValidationError(
                f"The config has {count} problem{'s' if count != 1 else ''}: "
                "each is listed under the editor with its line.",
                code="config",
            ) from None


class TaskAdminForm(forms.ModelForm):
    config_yaml = TaskConfigField(
        label="Task config (YAML)", check_url=reverse_lazy("admin:tasks_task_config_check")
    )

    class Meta:
        model = Task
        fields = [
            "code",
            "name",
            "description",
            "instructions",
            "owners",
            "hidden",
            "active",
            "accepts_models",
            "num_matching_validations",
            "validate_non_fooling",
            "context_sampling",
            "context_sampling_tag",
        ]
        widgets = {"instructions": forms.Textarea(attrs={"rows": 6, "class": "vLargeTextField"})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.current_config_id:
            self.fields["config_yaml"].initial = self.instance.current_config.yaml_text


class ContextUploadForm(forms.Form):
    file = forms.FileField(help_text="JSON Lines (.jsonl) or CSV (.csv)")
    round = forms.ModelChoiceField(queryset=Round.objects.none(), required=False)
    tag = forms.CharField(max_length=100, required=False, help_text="Tag every context (optional)")

    def __init__(self, *args, task: Task, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["round"].queryset = task.rounds.all()
        self.fields["round"].empty_label = "Current open round"


class OpenRoundForm(forms.Form):
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    close_previous = forms.BooleanField(initial=True, required=False)
    carry_over = forms.BooleanField(
        initial=True,
        required=False,
        label="Carry over the previous round",
        help_text="Copy its contexts and put its models in the new round's loop.",
    )


class ProposalDecisionForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)


class TaskProposalForm(forms.ModelForm):
    config_yaml = TaskConfigField(label="Task config (YAML, optional)", required=False)

    class Meta:
        model = TaskProposal
        fields = ["code", "name", "description", "config_yaml"]


class SignUpForm(UserCreationForm):
    """A worker's own account: a username, an optional email and the password twice.

    Django's ``AUTH_PASSWORD_VALIDATORS`` run on the password (``UserCreationForm``); a
    username is refused when one differing only in case exists.
    """

    email = forms.EmailField(
        required=False,
        help_text="Optional: only to reset a forgotten password.",
    )

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "email")
