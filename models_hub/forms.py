"""Forms of the models hub; the auth token is write-only everywhere (never rendered back)."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.db import models

from core.errors import ServiceError
from core.forms import BoundedJSONField
from models_hub import services
from models_hub.models import Protocol, RegisteredModel
from models_hub.trial import model_trial
from tasks.models import Round

CARD_AND_ENDPOINT_FIELDS = [*services.CARD_FIELDS, *services.ENDPOINT_FIELDS, "is_anonymous"]


def url_formfield(field: models.Field, **kwargs) -> forms.Field | None:
    """Build form fields; a URL typed without a scheme means https (Django 6's default).

    JSON (the options) is nested at most ``MAX_JSON_DEPTH`` levels (``BoundedJSONField``).
    """
    if isinstance(field, models.URLField):
        kwargs.setdefault("assume_scheme", "https")
    if isinstance(field, models.JSONField):
        kwargs.setdefault("form_class", BoundedJSONField)
    return field.formfield(**kwargs)


TOKEN_HELP = "Write-only: sent as 'Authorization: Bearer ...'. Leave blank to keep it."
NEW_TOKEN_HELP = (
    "Optional: the token your endpoint expects, sent with every call as "
    "'Authorization: Bearer ...'. It is stored encrypted and never shown again; leave it "
    "blank if the endpoint needs none."
)


def token_field(*, new: bool = False) -> forms.CharField:
    """Return the write-only token field: a password input that never renders its value;
    ``new`` for a model being registered (there is no stored token to keep yet)."""
    return forms.CharField(
        label="Auth token",
        required=False,
        strip=True,
        max_length=2000,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=NEW_TOKEN_HELP if new else TOKEN_HELP,
    )


def clear_token_field() -> forms.BooleanField:
    """Return the explicit "remove the stored token" checkbox."""
    return forms.BooleanField(label="Clear the stored token", required=False)


class EndpointCheckMixin:
    """Check the endpoint (scheme, SSRF rules), the read timeout's cap and, for an existing
    model edited by ``editor``, where its token may go (``services.token_move_problem``), as
    field errors before any write."""

    editor = None  # the signed-in user (edit forms; the admin sets it per request)

    def clean(self):
        cleaned = super().clean()
        self.check_token_move(cleaned)
        # A stored timeout above a cap set later stands until it is changed (calls use the
        # lower of the two: ``models_hub.selectors.endpoint_spec``).
        if self.instance.pk is None or {"read_timeout", "read_timeout_cap"} & set(
            self.changed_data
        ):
            cap = cleaned.get("read_timeout_cap", self.instance.read_timeout_cap)
            if cap is None:
                cap = settings.MODELS_HUB_READ_TIMEOUT_CAP
            problem = services.read_timeout_problem(cleaned.get("read_timeout"), cap)
            if problem and "read_timeout" not in self.errors:
                self.add_error("read_timeout", problem)
        protocol = cleaned.get("protocol")
        if protocol and "endpoint_url" not in self.errors:
            try:
                cleaned["endpoint_url"] = services.model_check_endpoint(
                    protocol, cleaned.get("endpoint_url") or ""
                )
            except ServiceError as error:
                self.add_error("endpoint_url", error.message)
        return cleaned

    def check_token_move(self, cleaned: dict) -> None:
        """Refuse moving the stored token to another address or owner (see the service)."""
        if self.editor is None or self.instance.pk is None:
            return
        keeps_token = not (cleaned.get("auth_token") or cleaned.get("clear_auth_token"))
        owner = cleaned.get("owner") if "owner" in self.changed_data else None
        problem = services.token_move_problem(
            self.instance,
            self.editor,
            endpoint_url=cleaned.get("endpoint_url")
            if "endpoint_url" in self.changed_data
            else None,
            owner=owner,
            keeps_token=keeps_token,
        )
        if problem:
            self.add_error("owner" if owner is not None else "endpoint_url", problem)


class ModelRegisterForm(EndpointCheckMixin, forms.ModelForm):
    """Registration on the site; the view passes ``instance=Model(task=..., owner=...)``
    and ``loop_round``: the round whose loop a task owner's model joins (None for others,
    who get no such field)."""

    auth_token = token_field(new=True)
    in_loop = forms.BooleanField(initial=True, required=False)

    class Meta:
        model = RegisteredModel
        formfield_callback = url_formfield
        fields = [*CARD_AND_ENDPOINT_FIELDS, "is_published"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, loop_round: Round | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        if loop_round is None:
            del self.fields["in_loop"]
        else:
            self.fields["in_loop"].label = f"Put it in the loop of round {loop_round.number}"
            self.fields[
                "in_loop"
            ].help_text = (
                "Workers' examples are then sent to it (models without an endpoint never are)."
            )

    def service_fields(self) -> dict:
        """Return the cleaned values ``services.model_register`` takes."""
        fields = {name: self.cleaned_data[name] for name in [*self.Meta.fields, "auth_token"]}
        if "in_loop" in self.fields:
            protocol_none = self.cleaned_data.get("protocol") == Protocol.NONE
            fields["in_loop"] = self.cleaned_data["in_loop"] and not protocol_none
        return fields


class ModelEditForm(EndpointCheckMixin, forms.ModelForm):
    """The owner's edit page: card, endpoint, write-only token and the publish toggle; the
    view passes ``editor`` (the signed-in user)."""

    auth_token = token_field()
    clear_auth_token = clear_token_field()

    def __init__(self, *args, editor=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.editor = editor

    class Meta:
        model = RegisteredModel
        formfield_callback = url_formfield
        fields = [*CARD_AND_ENDPOINT_FIELDS, "is_published"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def card_fields(self) -> dict:
        """Return the cleaned values ``services.model_update_card`` takes."""
        names = [*CARD_AND_ENDPOINT_FIELDS, "auth_token", "clear_auth_token"]
        return {name: self.cleaned_data[name] for name in names}


class ModelAdminForm(EndpointCheckMixin, forms.ModelForm):
    """The admin form: the token is write-only and the in-the-loop rounds are chosen here.

    Adding a model asks whether it joins the loop of the task's current round (``in_loop``,
    off unless ticked) and sends its endpoint the registration's trial request
    (``models_hub.trial``): an answer that cannot fit the task is an error of the URL field.
    """

    auth_token = token_field()
    clear_auth_token = clear_token_field()
    in_loop = forms.BooleanField(
        required=False,
        initial=False,
        label="Put it in the loop of the task's current round",
        help_text="Workers' examples are then sent to it. Task owners only; models without an "
        "endpoint never are. The rounds can be changed later on this page or on the task's "
        "loop page.",
    )
    loop_rounds = forms.ModelMultipleChoiceField(
        queryset=Round.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="In the loop of rounds",
        help_text="Task owners only. Models without an endpoint cannot be in the loop.",
    )

    class Meta:
        model = RegisteredModel
        formfield_callback = url_formfield
        fields = [
            "task",
            "owner",
            *CARD_AND_ENDPOINT_FIELDS,
            "read_timeout_cap",
            "is_published",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            self.fields["auth_token"].help_text = NEW_TOKEN_HELP
        if self.instance.pk and "loop_rounds" in self.fields:
            self.fields["loop_rounds"].queryset = Round.objects.filter(task=self.instance.task_id)
            self.fields["loop_rounds"].initial = list(
                self.instance.in_loop_rounds.values_list("pk", flat=True)
            )

    def clean(self):
        cleaned = super().clean()
        task = cleaned.get("task")
        if cleaned.get("in_loop") and cleaned.get("protocol") == Protocol.NONE:
            self.add_error("in_loop", "A model without an endpoint cannot answer in the loop.")
        if self.instance.pk is None and task is not None and not self.errors:
            fields = {name: cleaned[name] for name in services.ENDPOINT_FIELDS if name in cleaned}
            trial_model = RegisteredModel(
                task=task, auth_token=cleaned.get("auth_token", ""), **fields
            )
            try:
                model_trial(trial_model, task.config, task.code)
            except ServiceError as error:
                self.add_error("endpoint_url", error.message)
        return cleaned


class LoopForm(forms.Form):
    """One multi-select per round of a task: the models in that round's loop."""

    def __init__(self, *args, rounds_with_models, models, **kwargs):
        super().__init__(*args, **kwargs)
        choices = [(model.pk, model.name) for model in models]
        self.models_by_pk = {model.pk: model for model in models}
        self.rounds = {}
        for round, in_loop in rounds_with_models:
            name = f"round_{round.pk}"
            self.rounds[name] = round
            self.fields[name] = forms.TypedMultipleChoiceField(
                label=f"Round {round.number}" + ("" if round.is_open else " (closed)"),
                choices=choices,
                coerce=int,
                required=False,
                widget=forms.CheckboxSelectMultiple,
                initial=[model.pk for model in in_loop],
            )

    def selections(self):
        """Yield ``(round, [models])`` for every round of the form."""
        for name, round in self.rounds.items():
            yield round, [self.models_by_pk[pk] for pk in self.cleaned_data.get(name, [])]
