"""Reads of the model page: a model's scores and runs, and the per-example browser.

Who browses which datasets' examples (``browsable_datasets``): the task's owners every
original dataset; the model's owner the datasets whose gold they may already read
(``dataset_gold_visible``: the public ones), and only aggregates elsewhere; nobody else.
The gold and per-example correctness of a scoring, standard or hidden dataset never reach
anyone but the task's owners.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from leaderboards.models import AccessType, Dataset, EvaluationRun, Prediction, Score
from leaderboards.selectors.datasets import dataset_gold_visible
from leaderboards.selectors.runs import runs_viewed, runs_visible_for_model
from models_hub.models import RegisteredModel
from tasks.metrics import MetricError, get_metric
from tasks.permissions import can_browse_predictions, can_manage_task


@dataclass(frozen=True)
class ModelResults:
    """What the model page shows besides the card."""

    scores: list[Score]
    runs: list[EvaluationRun]
    shows_hidden: bool


def model_results(model: RegisteredModel, user) -> ModelResults:
    """Return ``model``'s scores per dataset and its evaluation runs (two queries).

    Scores on hidden datasets are for the task's owners only. The model's owner also sees
    its runs on hidden datasets, masked (``leaderboards.selectors.runs``); others do not.
    """
    manages = can_manage_task(user, model.task)
    scores = Score.objects.filter(model=model).select_related("dataset", "dataset__round")
    if not manages:
        scores = scores.exclude(dataset__access_type=AccessType.HIDDEN)
    runs = runs_visible_for_model(model, user).order_by("-created_at")[:50]
    return ModelResults(
        scores=list(scores.order_by("dataset__round__number", "dataset__name")),
        runs=runs_viewed(list(runs), model, user),
        shows_hidden=manages,
    )


@dataclass(frozen=True)
class BrowsedExample:
    """One example of the per-example browser: the inputs, the gold, the predictions."""

    uid: str
    inputs: dict
    gold: Any
    prediction: Any
    correct: bool | None
    compare_prediction: Any = None
    compare_correct: bool | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExampleBrowser:
    dataset: Dataset | None
    datasets: list[Dataset]
    compare_model: RegisteredModel | None
    compare_choices: list[RegisteredModel]
    examples: list[BrowsedExample]
    wrong_only: bool
    page: int
    page_count: int
    total: int
    message: str = ""
    # True for the task's owners (every dataset); False for a model's owner (public ones).
    all_datasets: bool = False


BROWSER_PAGE_SIZE = 25


def _latest_predictions(model_id: int, dataset: Dataset) -> dict[int, Any]:
    """Return ``{example id: output}`` of the newest run of the model on ``dataset``."""
    run = (
        EvaluationRun.objects.filter(model_id=model_id, dataset=dataset, predictions__isnull=False)
        .order_by("-created_at", "-pk")
        .values_list("pk", flat=True)
        .first()
    )
    if run is None:
        return {}
    return dict(Prediction.objects.filter(run_id=run).values_list("example_id", "output"))


def browsable_datasets(model: RegisteredModel, user) -> list[Dataset]:
    """Return the original datasets of ``model``'s task whose examples ``user`` may browse
    with ``model``'s predictions (see the module), by name; one query, none for nobody."""
    task = model.task
    if can_browse_predictions(user, task):
        datasets = Dataset.objects.filter(task=task, perturbation_of__isnull=True)
    elif user.is_authenticated and model.owner_id == user.pk:
        datasets = Dataset.objects.filter(
            task=task, perturbation_of__isnull=True, access_type=AccessType.PUBLIC
        )
    else:
        return []
    found = list(datasets.order_by("name", "pk"))
    for dataset in found:
        dataset.task = task
    # The one gold rule decides, whatever the query above already left out.
    return [dataset for dataset in found if dataset_gold_visible(dataset, user)]


def _compare_choices(model: RegisteredModel, user) -> list[RegisteredModel]:
    """The task's owners compare with any model of the task; a model's owner with their own."""
    others = RegisteredModel.objects.filter(task=model.task).exclude(pk=model.pk)
    if not can_manage_task(user, model.task):
        others = others.filter(owner_id=user.pk)
    return list(others.order_by("name", "pk"))


def model_example_browser(
    model: RegisteredModel,
    user,
    *,
    dataset_slug: str | None = None,
    compare_model_id: Any = None,
    wrong_only: bool = False,
    page: Any = 1,
) -> ExampleBrowser | None:
    """Return a page of ``model``'s predictions on one dataset with the gold labels, or None
    when ``user`` may browse none of its task's datasets (``browsable_datasets``).

    An example is wrong when the main perf metric scores it below 100, or when the model
    gave no output. ``compare_model_id`` adds another model's predictions on the same
    examples (one the user may compare with). Bad parameters fall back to defaults.
    """
    task = model.task
    config = task.config
    datasets = browsable_datasets(model, user)
    if not datasets:
        return None
    compare_choices = _compare_choices(model, user)
    dataset = next((item for item in datasets if item.slug == dataset_slug), datasets[0])
    compare_model = next(
        (item for item in compare_choices if str(item.pk) == str(compare_model_id)), None
    )
    all_datasets = can_browse_predictions(user, task)
    if config is None:
        return ExampleBrowser(
            dataset,
            datasets,
            compare_model,
            compare_choices,
            [],
            wrong_only,
            1,
            1,
            0,
            "",
            all_datasets,
        )
    predictions = _latest_predictions(model.pk, dataset)
    compared = _latest_predictions(compare_model.pk, dataset) if compare_model else {}
    examples = _browsed_examples(dataset, predictions, compared, _example_judge(config), wrong_only)
    page_number, page_count = _browser_page(page, len(examples))
    start = (page_number - 1) * BROWSER_PAGE_SIZE
    message = "" if predictions else "This model has no predictions on this dataset yet."
    return ExampleBrowser(
        dataset=dataset,
        datasets=datasets,
        compare_model=compare_model,
        compare_choices=compare_choices,
        examples=examples[start : start + BROWSER_PAGE_SIZE],
        wrong_only=wrong_only,
        page=page_number,
        page_count=page_count,
        total=len(examples),
        message=message,
        all_datasets=all_datasets,
    )


def _example_judge(config) -> Callable[[Any, Any], bool | None]:
    """Return ``correct(output, gold)``: whether the main perf metric scores an answer 100.

    False when the model gave no output; None when the metric cannot score one example
    (or fails on this one).
    """
    perf = config.main_perf_metric
    try:
        metric = get_metric(perf.type)
    except MetricError:
        metric = None

    def correct(output: Any, gold: Any) -> bool | None:
        if output is None or not isinstance(output, dict):
            return False
        if metric is None or metric.example_score is None or not isinstance(gold, dict):
            return None
        try:
            score = metric.example_score(
                output.get(perf.reference_name), gold.get(perf.reference_name), perf.options
            )
        except (MetricError, TypeError, ValueError):
            return None
        return float(score) >= 100.0

    return correct


def _browsed_examples(
    dataset: Dataset,
    predictions: Mapping[int, Any],
    compared: Mapping[int, Any],
    correct: Callable[[Any, Any], bool | None],
    wrong_only: bool,
) -> list[BrowsedExample]:
    """Return the examples of ``dataset`` the model answered (only the wrong ones if asked)."""
    examples = []
    for example_id, uid, inputs, gold, tags in _dataset_example_rows(dataset):
        if example_id not in predictions:
            continue
        output = predictions[example_id]
        is_correct = correct(output, gold)
        if wrong_only and is_correct is not False:
            continue
        compare_output = compared.get(example_id)
        examples.append(
            BrowsedExample(
                uid=uid,
                inputs=inputs,
                gold=gold,
                prediction=output,
                correct=is_correct,
                compare_prediction=compare_output,
                compare_correct=correct(compare_output, gold) if example_id in compared else None,
                tags=tuple(tags or ()),
            )
        )
    return examples


def _browser_page(page: Any, total: int) -> tuple[int, int]:
    """Return (page number, page count) of ``total`` examples; a bad ``page`` is the first,
    one beyond the end the last."""
    page_count = max(1, -(-total // BROWSER_PAGE_SIZE))
    try:
        page_number = min(max(1, int(str(page))), page_count)
    except ValueError:
        page_number = 1
    return page_number, page_count


def _dataset_example_rows(dataset: Dataset) -> list[tuple]:
    """Return ``(id, uid, inputs, gold, tags)`` of the dataset's examples by position."""
    return list(
        dataset.examples.order_by("position").values_list("pk", "uid", "inputs", "gold", "tags")
    )


@dataclass(frozen=True)
class ModelPage:
    """The model page: the scores and runs, and the example browser where the user may
    browse (``browsable_datasets``)."""

    results: ModelResults
    browser: ExampleBrowser | None


def model_page(
    model: RegisteredModel,
    user,
    *,
    dataset_slug: str | None = None,
    compare_model_id: Any = None,
    wrong_only: bool = False,
    page: Any = 1,
) -> ModelPage:
    """Return ``model``'s results and, where ``user`` may browse examples, the browser page."""
    browser = model_example_browser(
        model,
        user,
        dataset_slug=dataset_slug,
        compare_model_id=compare_model_id,
        wrong_only=wrong_only,
        page=page,
    )
    return ModelPage(results=model_results(model, user), browser=browser)
