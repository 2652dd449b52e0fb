"""Every CSV the platform serves is safe to open in a spreadsheet (CSV injection).

``CSV_URLS`` and ``CSV_ADMIN_ACTIONS`` list every CSV download, each with a function that
fills the text fields it shows with hostile strings and returns the file and its numeric
columns. ``test_every_csv_download_is_listed`` fails when a URL whose name ends in ``_csv``
(or whose path ends in ``.csv``) or an admin action named like ``*csv*`` is added without an
entry here, so a new download is checked the day it is written.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from core.csv_export import FORMULA_PREFIXES, csv_cell
from tests.factories import (
    HOSTILE_CSV_CELLS,
    HOSTILE_SEPARATED_CSV_CELLS,
    CampaignFactory,
    CampaignWorkerFactory,
    DatasetFactory,
    ExampleFactory,
    ModelFactory,
    ScoreFactory,
    TaskFactory,
    UserFactory,
    cells_split_on,
)
from tests.leaderboards.boardkit import MAIN
from tests.security.urlwalk import all_routes

# Texts that start like a formula, then texts that hide one behind a separator.
HOSTILE = [*HOSTILE_CSV_CELLS, *HOSTILE_SEPARATED_CSV_CELLS]


@dataclass
class Download:
    text: str
    text_columns: frozenset[str]  # every other column holds numbers (or is empty)
    # The hostile texts the download must show neutralised (a form may refuse some).
    hostile: tuple[str, ...] = tuple(HOSTILE)
    has_numbers: bool = True


def _owner_client(owner) -> Client:
    client = Client()
    client.force_login(owner)
    return client


def _content(response) -> str:
    assert response.status_code == 200, response.status_code
    assert response["Content-Type"].startswith("text/csv")
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def _hostile_campaign():
    owner = UserFactory(username="csv-owner", is_staff=True)
    task = TaskFactory(code="csvtask", owners=[owner])
    campaign = CampaignFactory(task=task, name=HOSTILE[0])
    for text in HOSTILE:
        worker = CampaignWorkerFactory(campaign=campaign, external_id=text)
        ExampleFactory(task=task, user=None, campaign_worker=worker, time_spent_ms=1500)
    return owner, task, campaign


CAMPAIGN_TEXT_COLUMNS = frozenset({"worker_id", "completed_at"})


def leaderboard_csv() -> Download:
    owner = UserFactory(username=HOSTILE[0], is_staff=True)
    task = TaskFactory(code="csvboard", owners=[owner])
    datasets = [DatasetFactory(task=task, slug="alpha"), DatasetFactory(task=task, slug="beta")]
    for index, text in enumerate(HOSTILE):
        model = ModelFactory(task=task, owner=owner, name=text)
        metrics = {
            MAIN: -0.5 - index,
            "examples_per_second": -1.25,
            "latency_p95_ms": 100.0 + index,
            "memory_utilization": 2.0,
        }
        for dataset in datasets:
            ScoreFactory(
                model=model,
                dataset=dataset,
                metrics=metrics,
                main_metric=MAIN,
                main_value=metrics[MAIN],
                ci_low=metrics[MAIN] - 1,
                ci_high=metrics[MAIN] + 1,
            )
    response = Client().get(reverse("leaderboards:task_csv", args=[task.code]))
    return Download(
        _content(response),
        frozenset({"model", "owner", "incomplete", "missing_metrics", "partial", "coverage"}),
    )


def arena_board_csv() -> Download:
    """The arena board: one row per model, every model named with a hostile text."""
    from annotation.arena.synthetic import synthetic_battles
    from tests.factories import demo_config

    owner = UserFactory(username="csv-arena-owner", is_staff=True)
    task = TaskFactory(code="csvarena", yaml_text=demo_config("arena"), owners=[owner])
    models = [ModelFactory(task=task, owner=owner, name=text) for text in HOSTILE]
    strengths = {model.pk: 1000.0 + 25.0 * index for index, model in enumerate(models)}
    round_ = task.rounds.get(number=1)
    synthetic_battles(task, round_, models, [owner], strengths, 20 * len(models), seed=3)
    response = Client().get(reverse("annotation:arena_board_csv", args=[task.code]))
    return Download(_content(response), frozenset({"model", "tie_with_next", "identified"}))


def campaign_csv() -> Download:
    owner, task, campaign = _hostile_campaign()
    response = _owner_client(owner).get(
        reverse("annotation:campaign_csv", args=[task.code, campaign.pk])
    )
    return Download(_content(response), CAMPAIGN_TEXT_COLUMNS)


def admin_campaign_csv() -> Download:
    owner, _task, campaign = _hostile_campaign()
    response = _owner_client(owner).post(
        reverse("admin:annotation_campaign_changelist"),
        {"action": "download_csv", "_selected_action": [campaign.pk]},
    )
    return Download(_content(response), CAMPAIGN_TEXT_COLUMNS)


# Worker ids take letters, digits and _ . : @ - only: the hostile ones that pass that check.
HOSTILE_WORKER_IDS = ("-0.5", "-2", "@SUM", "@A1:A9", "-cmd")


def campaign_links_csv() -> Download:
    owner, task, campaign = _hostile_campaign()
    campaign.signed_worker_links = True
    campaign.save()
    response = _owner_client(owner).post(
        reverse("annotation:campaign_links_csv", args=[task.code, campaign.pk]),
        {"worker_ids": "\n".join(HOSTILE_WORKER_IDS)},
    )
    return Download(
        _content(response),
        frozenset({"worker_id", "link"}),
        hostile=HOSTILE_WORKER_IDS,
        has_numbers=False,
    )


CSV_URLS: dict[str, Callable[[], Download]] = {
    "leaderboards:task_csv": leaderboard_csv,
    "annotation:arena_board_csv": arena_board_csv,
    "annotation:campaign_csv": campaign_csv,
    "annotation:campaign_links_csv": campaign_links_csv,
}
CSV_ADMIN_ACTIONS: dict[str, Callable[[], Download]] = {
    "annotation.campaign:download_csv": admin_campaign_csv,
}
DOWNLOADS = {**CSV_URLS, **CSV_ADMIN_ACTIONS}


def _action_name(action) -> str:
    return action if isinstance(action, str) else action.__name__


def csv_admin_actions() -> set[str]:
    """Return ``app_label.model:action`` for every admin action whose name mentions csv."""
    found = set()
    for model in apps.get_models():
        if not admin.site.is_registered(model):
            continue
        model_admin = admin.site.get_model_admin(model)
        for action in model_admin.actions or ():
            name = _action_name(action)
            if "csv" in name.lower():
                found.add(f"{model._meta.label_lower}:{name}")
    for name, _action in admin.site.actions:
        if "csv" in name.lower():
            found.add(f"site:{name}")
    return found


def test_every_csv_download_is_listed():
    urls = {
        route.key
        for route in all_routes()
        if route.key.endswith("_csv") or ".csv" in route.pattern.lower()
    }
    assert urls == set(CSV_URLS), "list every CSV URL in CSV_URLS (and test it below)"
    assert csv_admin_actions() == set(CSV_ADMIN_ACTIONS)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(DOWNLOADS))
def test_no_cell_of_a_csv_download_is_a_formula(name):
    download = DOWNLOADS[name]()
    rows = list(csv.reader(io.StringIO(download.text)))
    header, body = rows[0], rows[1:]
    assert len(body) >= len(download.hostile)
    cells = [cell for row in rows for cell in row]
    for cell in cells:
        assert not cell.startswith(FORMULA_PREFIXES) or _is_number(cell), repr(cell)
    for text in download.hostile:
        assert any(cell.startswith(csv_cell(text)) for cell in cells), text
    numeric = [index for index, column in enumerate(header) if column not in download.text_columns]
    assert bool(numeric) == download.has_numbers
    for row in body:
        assert len(row) == len(header)
        for index in numeric:
            assert row[index] == "" or _is_number(row[index]), (header[index], row[index])
    negatives = [row[index] for row in body for index in numeric if row[index].startswith("-")]
    if name == "leaderboards:task_csv":
        assert negatives, "negative scores are written as numbers"


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(DOWNLOADS))
@pytest.mark.parametrize("separator", [";", "\t"], ids=["semicolon", "tab"])
def test_no_cell_is_a_formula_where_a_spreadsheet_splits_on_another_separator(name, separator):
    """A spreadsheet set to ";" (or tabs) splits the text at it, quoted or not."""
    download = DOWNLOADS[name]()
    for cell in cells_split_on(download.text, separator):
        # A cell that starts with one of our numbers (a negative score) is that number,
        # followed by the rest of the comma-separated line.
        assert not cell.startswith(FORMULA_PREFIXES) or _is_number(cell.split(",")[0]), cell
