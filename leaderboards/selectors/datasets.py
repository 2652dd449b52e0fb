"""Reads of datasets: a task's datasets and a page of a dataset's examples.

Gold answers follow ``dataset_gold_visible``: the task's owners see every dataset's; everyone
else sees those of **public** datasets only, which their owners published with their answers
(a public development set) and which never enter the ranking. The gold of scoring and
standard datasets stays with the owners, and hidden datasets (and their scores) are not
visible to non-owners at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Q

from leaderboards.models import AccessType, Dataset, DatasetExample
from tasks.errors import NotFound
from tasks.models import Task
from tasks.permissions import can_manage_task, can_view_task

EXAMPLES_PER_PAGE = 25


def datasets_for_task(task: Task, user) -> list[Dataset]:
    """Return the task's datasets that ``user`` may see (hidden ones: owners only)."""
    datasets = Dataset.objects.filter(task=task).select_related("round", "perturbation_of")
    if not can_manage_task(user, task):
        datasets = datasets.filter(~Q(access_type=AccessType.HIDDEN))
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
    if dataset.access_type == AccessType.HIDDEN and not can_manage_task(user, task):
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
    )
