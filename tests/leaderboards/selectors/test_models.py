"""Who reads a model's per-example results: the task's owners on every dataset, the model's
owner on the datasets whose gold is public, nobody else; scoring, standard and hidden
datasets keep their gold and per-example correctness from everyone but the task's owners."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import AnonymousUser
from django.urls import reverse

from leaderboards.models import Dataset, DatasetExample, EvaluationRun, Prediction
from leaderboards.selectors.datasets import dataset_examples_page, dataset_gold_visible
from leaderboards.selectors.models import browsable_datasets, model_example_browser
from tests.api.conftest import client_for
from tests.factories import DatasetFactory, ModelFactory, UserFactory

pytestmark = pytest.mark.django_db

HOSTILE_INPUT = '<script>alert("input")</script>'
HOSTILE_LABEL = "<img src=x onerror=alert(1)>"
# The gold of each dataset, unique so that a leak is found anywhere in a page.
GOLD = {
    "dev": "GOLD-OF-DEV",
    "extra": "GOLD-OF-EXTRA",
    "test": "GOLD-OF-TEST",
    "secret": "GOLD-OF-SECRET",
}
ACCESS = {"dev": "public", "extra": "standard", "test": "scoring", "secret": "hidden"}


@pytest.fixture
def author(db):
    return UserFactory(username="author")


@pytest.fixture
def world(task, author):
    """A published model of ``author`` with predictions on a dataset of each access type,
    each dataset's gold unique."""
    model = ModelFactory(task=task, owner=author, name="authors-model")
    for slug, access in ACCESS.items():
        dataset = DatasetFactory(task=task, slug=slug, name=f"Set {slug}", access_type=access)
        right = DatasetExample.objects.create(
            dataset=dataset,
            position=0,
            uid=f"{slug}-right",
            inputs={"statement": f"{HOSTILE_INPUT} {slug}"},
            gold={"label": GOLD[slug]},
        )
        wrong = DatasetExample.objects.create(
            dataset=dataset,
            position=1,
            uid=f"{slug}-wrong",
            inputs={"statement": f"plain {slug}"},
            gold={"label": GOLD[slug]},
        )
        run = EvaluationRun.objects.create(
            model=model, dataset=dataset, config_version=dataset.config_version, trigger="rerun"
        )
        Prediction.objects.create(run=run, example=right, output={"label": GOLD[slug]})
        Prediction.objects.create(run=run, example=wrong, output={"label": HOSTILE_LABEL})
    return model


def _viewers(owner, author):
    return {
        "anonymous": AnonymousUser(),
        "stranger": UserFactory(username="stranger"),
        "model_owner": author,
        "task_owner": owner,
    }


@pytest.mark.parametrize(
    ("viewer", "browsable"),
    [
        ("anonymous", []),
        ("stranger", []),
        ("model_owner", ["dev"]),
        ("task_owner", ["dev", "extra", "secret", "test"]),
    ],
)
def test_the_browsable_datasets_per_viewer(world, owner, author, viewer, browsable):
    user = _viewers(owner, author)[viewer]
    assert [dataset.slug for dataset in browsable_datasets(world, user)] == browsable
    browser = model_example_browser(world, user, dataset_slug="secret")
    if not browsable:
        assert browser is None
        return
    # Asking for a dataset outside the user's reach falls back to one within it.
    assert browser.dataset.slug in browsable
    assert browser.all_datasets is (viewer == "task_owner")


@pytest.mark.parametrize("viewer", ["anonymous", "stranger", "model_owner", "task_owner"])
def test_the_model_page_never_shows_a_gold_the_viewer_may_not_read(
    client, world, owner, author, viewer
):
    user = _viewers(owner, author)[viewer]
    if user.is_authenticated:
        client.force_login(user)
    url = reverse("leaderboards:model", args=[world.pk])
    pages = [client.get(f"{url}?dataset={slug}").content.decode() for slug in (*ACCESS, "")]
    seen = {slug for slug, gold in GOLD.items() if any(gold in page for page in pages)}
    expected = {
        "anonymous": set(),
        "stranger": set(),
        "model_owner": {"dev"},
        "task_owner": {"dev", "extra", "test", "secret"},
    }[viewer]
    assert seen == expected
    rows = {slug for slug in ACCESS if any(f'data-uid="{slug}-wrong"' in p for p in pages)}
    assert rows == expected  # no per-example correctness elsewhere either
    if viewer == "model_owner":
        # Where the examples are sealed, the scores are not: the runs and scores list them.
        assert "Set test" in pages[0] and "Set extra" in pages[0]


def test_the_table_shows_input_gold_prediction_and_correctness_escaped(client, world, author):
    client.force_login(author)
    html = client.get(reverse("leaderboards:model", args=[world.pk]) + "?dataset=dev")
    html = html.content.decode()
    assert 'data-testid="example-table"' in html
    assert '<tr data-uid="dev-right" data-correct="yes">' in html
    assert '<tr data-uid="dev-wrong" data-correct="no">' in html
    escaped = "&lt;script&gt;alert(&quot;input&quot;)&lt;/script&gt; dev"
    assert f"<strong>statement</strong>: {escaped}" in html
    assert "<strong>label</strong>: GOLD-OF-DEV" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert HOSTILE_INPUT not in html and HOSTILE_LABEL not in html
    assert "{&quot;" not in html  # fields, not raw JSON


def test_a_model_owner_compares_only_with_their_own_models(client, world, task, author, owner):
    mine = ModelFactory(task=task, owner=author, name="my-other-model")
    theirs = ModelFactory(task=task, owner=owner, name="someone-elses-model")
    browser = model_example_browser(world, author)
    assert browser.compare_choices == [mine]
    assert model_example_browser(world, author, compare_model_id=theirs.pk).compare_model is None
    assert set(model_example_browser(world, owner).compare_choices) == {mine, theirs}


@pytest.mark.parametrize(
    ("access", "stranger_sees"),
    [("public", True), ("standard", False), ("scoring", False), ("hidden", False)],
)
def test_gold_follows_the_access_type_on_the_dataset_pages_and_the_api(
    client, world, owner, access, stranger_sees
):
    slug = {value: key for key, value in ACCESS.items()}[access]
    dataset = Dataset.objects.get(slug=slug)
    stranger = UserFactory(username="reader")
    assert dataset_gold_visible(dataset, stranger) is stranger_sees
    assert dataset_gold_visible(dataset, owner)
    _, rows = dataset_examples_page(dataset, stranger)
    assert all((row.gold is not None) is stranger_sees for row in rows)
    client.force_login(stranger)
    page = client.get(reverse("leaderboards:dataset_detail", args=[dataset.task.code, slug]))
    api = client_for(stranger).get(f"/api/v1/tasks/{dataset.task.code}/datasets/{slug}/examples/")
    if access == "hidden":
        assert page.status_code == 404 and api.status_code == 404
        return
    assert (GOLD[slug] in page.content.decode()) is stranger_sees
    assert (GOLD[slug] in json.dumps(api.json())) is stranger_sees
