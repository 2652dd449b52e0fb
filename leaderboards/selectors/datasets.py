"""Reads of datasets: a task's datasets and a page of a dataset's examples.

Gold answers follow ``dataset_gold_visible``: the task's owners see every dataset's; everyone
else sees those of **public** datasets only, which their owners published with their answers
(a public development set) and which never enter the ranking. The gold of scoring and
standard datasets stays with the owners, and hidden datasets (and their scores) are not
visible to non-owners at all.

Sealed datasets (``dataset_is_sealed``: hidden ones and the perturbed copies of hidden ones)
give no figure to anyone but the task's owners (superusers among them): no score, CI,
per-tag value, per-example result, nor count of correct or failed examples, on any surface
(``dataset_figures_visible``). Their inputs go to the endpoints of models whose owner does
not own the task only when the owners allow it (``dataset_inputs_go_to``; the
``inputs_to_others`` field, no by default for a hidden dataset).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Q

from core.errors import NotFound
from leaderboards.models import AccessType, Dataset, DatasetExample
from tasks.models import Task
from tasks.permissions import can_manage_task, can_view_task

EXAMPLES_PER_PAGE = 25


SEALED = Q(access_type=AccessType.HIDDEN) | Q(perturbation_of__access_type=AccessType.HIDDEN)


def dataset_is_sealed(dataset: Dataset) -> bool:
    """Return True for a hidden dataset and for a perturbed copy of one.

    Reads ``dataset.perturbation_of`` of a copy: select it with the dataset.
    """
    if dataset.access_type == AccessType.HIDDEN:
        return True
    return (
        dataset.perturbation_of_id is not None
        and dataset.perturbation_of.access_type == AccessType.HIDDEN
    )


def dataset_figures_visible(dataset: Dataset, user) -> bool:
    """Return True when ``user`` may see figures of ``dataset`` (see the module)."""
    return not dataset_is_sealed(dataset) or can_manage_task(user, dataset.task)


def dataset_inputs_to_others(dataset: Dataset) -> bool:
    """Return True when the inputs of ``dataset`` may go to others' endpoints.

    A perturbed copy follows its original (select ``perturbation_of`` with it).
    """
    source = dataset.perturbation_of if dataset.perturbation_of_id is not None else dataset
    return source.inputs_to_others


# The refusal of a run whose dataset keeps its inputs from the model (the code is stable).
INPUTS_PRIVATE = "run.inputs_private"
INPUTS_PRIVATE_MESSAGE = (
    "the task's owners send the inputs of this dataset only to their own models"
)


def task_owner_ids(task: Task) -> set[int]:
    """Return the ids of the users who own ``task`` (superusers excepted: check them apart)."""
    return set(task.owners.values_list("pk", flat=True))


def dataset_inputs_go_to(dataset: Dataset, model, owner_ids: set[int]) -> bool:
    """Return True when the inputs of ``dataset`` may go to ``model``'s endpoint.

    Yes for a model of the task's owners (``owner_ids``, from ``task_owner_ids``) or of a
    superuser (select ``owner`` with the model); for others' models, as the dataset says.
    """
    if model.owner_id in owner_ids or model.owner.is_superuser:
        return True
    return dataset_inputs_to_others(dataset)


def datasets_for_task(task: Task, user) -> list[Dataset]:
    """Return the task's datasets that ``user`` may see (sealed ones: owners only)."""
    datasets = Dataset.objects.filter(task=task).select_related("round", "perturbation_of")
    if not can_manage_task(user, task):
        datasets = datasets.filter(~SEALED)
    return list(datasets.order_by("perturbation_of_id", "name", "pk"))


def dataset_gold_visible(dataset: Dataset, user) -> bool:
    """Return True when ``user`` may read the gold answers of ``dataset`` (see the module)."""
    return dataset.access_type == AccessType.PUBLIC or can_manage_task(user, dataset.task)


def dataset_get_visible(task: Task, slug: str, user) -> Dataset:
    dataset = (
        Dataset.objects.select_related("task", "round", "perturbation_of")
        .filter(task=task, slug=slug)
        .first()
    )
    if dataset is None or not can_view_task(user, task):
        raise NotFound(f"no dataset {slug}")
    if not dataset_figures_visible(dataset, user):
        raise NotFound(f"no dataset {slug}")
    return dataset


@dataclass(frozen=True)
class ExampleRow:
    position: int
    uid: str
    inputs: dict
    tags: list
    gold: dict | None  # None unless ``dataset_gold_visible``
    input_id: str = ""
    original_inputs: dict | None = None  # perturbed copies: the original's inputs
    changed_fields: tuple[str, ...] = ()


INPUT_LINES_CHUNK = 2000


def dataset_input_lines(dataset: Dataset) -> Iterator[str]:
    """Yield one JSON line per example of ``dataset``, in position order: its ``uid`` and
    model inputs (a perturbed copy's ``input_id`` too), never its gold. Read in chunks, so
    memory stays flat whatever the size. Check who may read them first
    (``dataset_get_visible``, as the API's examples)."""
    rows = (
        DatasetExample.objects.filter(dataset=dataset)
        .order_by("position")
        .values_list("uid", "inputs", "input_id")
    )
    for uid, inputs, input_id in rows.iterator(chunk_size=INPUT_LINES_CHUNK):
        line = {"uid": uid, **{k: v for k, v in (inputs or {}).items() if k != "uid"}}
        if input_id:
            line["input_id"] = input_id
        yield json.dumps(line, ensure_ascii=False) + "\n"


def dataset_examples_page(dataset: Dataset, user, page: int = 1, per_page: int = EXAMPLES_PER_PAGE):
    """Return ``(page_object, rows)`` of examples; gold when ``dataset_gold_visible``.

    For a perturbed copy each row also carries the original example's inputs and the names
    of the fields the perturbation changed (the perturbation browser).
    """
    shows_gold = dataset_gold_visible(dataset, user)
    paginator = Paginator(
        DatasetExample.objects.filter(dataset=dataset)
        .order_by("position")
        .only("position", "uid", "inputs", "tags", "gold", "input_id"),
        per_page,
    )
    page_object = paginator.get_page(page)
    examples = list(page_object.object_list)
    originals: dict[str, dict] = {}
    if dataset.perturbation_of_id:
        originals = dict(
            DatasetExample.objects.filter(
                dataset_id=dataset.perturbation_of_id,
                uid__in=[example.input_id for example in examples],
            ).values_list("uid", "inputs")
        )
    rows = []
    for example in examples:
        original = originals.get(example.input_id)
        changed = ()
        if original is not None:
            changed = tuple(
                name
                for name, value in example.inputs.items()
                if name != "uid" and original.get(name) != value
            )
        rows.append(
            ExampleRow(
                position=example.position,
                uid=example.uid,
                inputs=example.inputs,
                tags=example.tags,
                gold=example.gold if shows_gold else None,
                input_id=example.input_id,
                original_inputs=original,
                changed_fields=changed,
            )
        )
    return page_object, rows


@dataclass(frozen=True)
class DatasetDetail:
    """What the dataset page shows: a page of examples and, for owners, the perturbed copies."""

    dataset: Dataset
    page: Any
    rows: list[ExampleRow]
    is_owner: bool
    perturbations: list[Dataset]
    shows_gold: bool = False
    inputs_to_others: bool = True


def dataset_detail(task: Task, slug: str, user, page: Any = 1) -> DatasetDetail:
    """Return dataset ``slug`` of ``task`` with a page of examples (raises NotFound)."""
    dataset = dataset_get_visible(task, slug, user)
    page_object, rows = dataset_examples_page(dataset, user, page)
    is_owner = can_manage_task(user, task)
    return DatasetDetail(
        dataset=dataset,
        page=page_object,
        rows=rows,
        is_owner=is_owner,
        perturbations=list(dataset.perturbations.all()) if is_owner else [],
        shows_gold=dataset_gold_visible(dataset, user),
        inputs_to_others=dataset_inputs_to_others(dataset),
    )
