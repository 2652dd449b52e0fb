"""Forms of the leaderboards app: dataset uploads, perturbation generation, predictions files."""

from __future__ import annotations

from django import forms

from leaderboards.models import AccessType, Dataset, PerturbationKind
from leaderboards.selectors.datasets import SEALED
from leaderboards.services.datasets import DEFAULT_PERTURBATION_SEED
from tasks.permissions import can_manage_task

INPUTS_TO_OTHERS_CHOICES = [
    ("", "As the access type says (no for hidden datasets, yes otherwise)"),
    ("yes", "Yes: every registered model is evaluated on it"),
    ("no", "No: only the models of the task's owners"),
]

KIND_CHOICES = [
    (PerturbationKind.ROBUSTNESS.value, "Robustness"),
    (PerturbationKind.FAIRNESS.value, "Fairness"),
]


class DatasetUploadForm(forms.Form):
    file = forms.FileField(help_text="JSON Lines (.jsonl) or CSV (.csv).")
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(max_length=100, help_text="Uploading to an existing slug replaces it.")
    access_type = forms.ChoiceField(choices=AccessType.choices, initial=AccessType.SCORING)
    round = forms.IntegerField(min_value=1, required=False, help_text="Round number (optional).")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    source_url = forms.URLField(required=False, assume_scheme="https")
    perturbation_of = forms.ModelChoiceField(
        queryset=Dataset.objects.none(),
        required=False,
        to_field_name="slug",
        help_text="Upload a perturbed copy of this dataset (lines carry input_id).",
    )
    perturbation_kind = forms.ChoiceField(
        choices=[("", "---------"), *KIND_CHOICES], required=False
    )
    inputs_to_others = forms.ChoiceField(
        choices=INPUTS_TO_OTHERS_CHOICES,
        required=False,
        label="Send the inputs to others' models",
        help_text="Whether the inputs go to the endpoints of models whose owner does not own "
        "the task. A replaced dataset keeps its choice unless it becomes hidden.",
    )

    def __init__(self, *args, task=None, **kwargs):
        super().__init__(*args, **kwargs)
        if task is not None:
            self.fields["perturbation_of"].queryset = Dataset.objects.filter(
                task=task, perturbation_of__isnull=True
            )

    def import_arguments(self) -> dict:
        """Return the keyword arguments of ``dataset_import`` that this form collects."""
        data = self.cleaned_data
        names = ("name", "slug", "access_type", "description", "source_url")
        return {
            **{name: data[name] for name in names},
            "round_number": data["round"],
            "perturbation_of": data["perturbation_of"],
            "perturbation_kind": data["perturbation_kind"],
            "inputs_to_others": {"yes": True, "no": False}.get(data["inputs_to_others"]),
        }

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("perturbation_of") and not cleaned.get("perturbation_kind"):
            self.add_error("perturbation_kind", "Choose the kind of the perturbed copy.")
        return cleaned


class PerturbationForm(forms.Form):
    kind = forms.ChoiceField(choices=KIND_CHOICES)
    seed = forms.CharField(max_length=64, initial=DEFAULT_PERTURBATION_SEED)


class PredictionsUploadForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.none(), to_field_name="slug")
    file = forms.FileField(help_text='JSON Lines or CSV: {"uid": ..., <output fields>}.')
    partial = forms.BooleanField(
        required=False,
        label="Accept a partial file",
        help_text="Score a file that misses examples of the dataset: the missing ones count "
        "as wrong, and the score is shown as partial (e.g. 300 of 400) everywhere.",
    )

    def __init__(self, *args, task=None, user=None, **kwargs):
        """Offer the datasets of ``task``; hidden ones only to the task's owners (``user``)."""
        super().__init__(*args, **kwargs)
        if task is not None:
            datasets = Dataset.objects.filter(task=task)
            if not can_manage_task(user, task):
                datasets = datasets.exclude(SEALED)
            self.fields["dataset"].queryset = datasets.order_by("perturbation_of_id", "name")
            self.fields["dataset"].label_from_instance = lambda dataset: dataset.name
