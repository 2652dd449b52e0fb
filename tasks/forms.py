"""Forms of the tasks app (admin builder, the public proposal form, self-sign-up)."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm

from tasks.config import TaskConfigError, parse_task_config
from tasks.models import Round, Task, TaskProposal


class ConfigEditorWidget(forms.Textarea):
    """A monospace YAML editor with a line-number gutter; error lines are marked."""

    template_name = "tasks/widgets/config_editor.html"

    def __init__(self, attrs=None):
        base = {"rows": 30, "spellcheck": "false", "class": "config-editor vLargeTextField"}
        base.update(attrs or {})
        super().__init__(attrs=base)
        self.error_lines: list[int] = []

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        context["widget"]["error_lines"] = ",".join(str(line) for line in self.error_lines)
        return context

    class Media:
        css = {"all": ["tasks/config_editor.css"]}
        js = ["tasks/config_editor.js"]


def config_validation_messages(error: TaskConfigError) -> list[str]:
    messages = []
    for issue in error.issues:
        where = f"Line {issue.line}" if issue.line is not None else "(no line)"
        if issue.column is not None and issue.line is not None:
            where += f", column {issue.column}"
        path = f" — {issue.path}" if issue.path else ""
        messages.append(f"{where}{path}: {issue.message} [{issue.code}]")
    return messages


class TaskConfigField(forms.CharField):
    """A YAML task config; cleaning parses it and reports every problem with its line."""

    def __init__(self, **kwargs):
        kwargs.setdefault("widget", ConfigEditorWidget())
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
            self.widget.error_lines = sorted({i.line for i in error.issues if i.line is not None})
            raise forms.ValidationError(config_validation_messages(error), code="config") from None


class TaskAdminForm(forms.ModelForm):
    config_yaml = TaskConfigField(label="Task config (YAML)")

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
