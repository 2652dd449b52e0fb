"""Datasets, evaluation runs, scores, the leaderboard, forks and snapshots over the API."""

from __future__ import annotations

import io
import json

import pytest

from leaderboards.models import Dataset, EvaluationRun, LeaderboardSnapshot, RunStatus
from leaderboards.services.datasets import dataset_import
from leaderboards.services.predictions import predictions_import
from leaderboards.services.runs import evaluation_run_create
from tests.api.conftest import ROLES, assert_error, client_for
from tests.factories import ModelFactory, UserFactory
from tests.leaderboards.evalkit import sentiment_rows

pytestmark = pytest.mark.django_db

OWNER_ONLY = {"anonymous": 401, "worker": 403, "other_owner": 403}


def _file(rows, name="rows.jsonl"):
    upload = io.BytesIO("".join(json.dumps(row) + "\n" for row in rows).encode())
    upload.name = name
    return upload


def _prediction(uid: str, label: str) -> dict:
    labels = ("negative", "positive", "neutral")
    return {"uid": uid, "label": label, "prob": {n: 0.8 if n == label else 0.1 for n in labels}}


def _import(task, slug, access_type="scoring", count=5):
    return dataset_import(
        task,
        _file(sentiment_rows(count)),
        filename="rows.jsonl",
        name=slug.title(),
        slug=slug,
        access_type=access_type,
        evaluate=False,
    )


@pytest.fixture
def datasets(api_task):
    return {"public": _import(api_task, "public"), "hidden": _import(api_task, "secret", "hidden")}


@pytest.fixture
def submitter(db):
    return UserFactory(username="api-submitter")


@pytest.fixture
def file_model(api_task, submitter):
    """A published predictions-file model."""
    return ModelFactory(task=api_task, owner=submitter, name="file-model")


@pytest.fixture
def scored(file_model, datasets, submitter):
    """The file model scored on both datasets from predictions files (all correct)."""
    for dataset in datasets.values():
        rows = [_prediction(row["uid"], row["label"]) for row in sentiment_rows(5)]
        predictions_import(file_model, dataset, _file(rows), filename="p.jsonl")
    return file_model


@pytest.mark.parametrize("role", ROLES)
def test_dataset_upload_is_for_owners(role, clients, api_task):
    response = clients[role].post(
        "/api/v1/tasks/api-task/datasets/",
        {"file": _file(sentiment_rows(3)), "name": "Round 1 test", "slug": "r1-test"},
        format="multipart",
    )
    if role in OWNER_ONLY:
        assert_error(response, OWNER_ONLY[role])
        assert not Dataset.objects.exists()
    else:
        assert response.status_code == 201, response.content
        body = response.json()
        assert body["slug"] == "r1-test" and body["row_count"] == 3
        assert body["access_type"] == "scoring"


def test_a_bad_dataset_upload_names_every_line(clients):
    rows = sentiment_rows(3)
    rows[1]["label"] = "furious"
    response = clients["owner"].post(
        "/api/v1/tasks/api-task/datasets/",
        {"file": _file(rows), "name": "Bad"},
        format="multipart",
    )
    error = assert_error(response, 400, "upload.invalid")
    assert [item["line"] for item in error["details"]["errors"]] == [2]


def _lines_with(bad_line: str, rows: list[dict]) -> io.BytesIO:
    """A JSON Lines file of ``rows`` with ``bad_line`` as its second line."""
    lines = [json.dumps(rows[0]), bad_line, *(json.dumps(row) for row in rows[1:])]
    upload = io.BytesIO("\n".join(lines).encode())
    upload.name = "rows.jsonl"
    return upload


def test_a_dataset_upload_with_invalid_json_names_its_line_and_column(clients):
    bad = '{"uid": "u9", "statement": "Fine." "label": "positive"}'
    response = clients["owner"].post(
        "/api/v1/tasks/api-task/datasets/",
        {"file": _lines_with(bad, sentiment_rows(3)), "name": "Bad"},
        format="multipart",
    )
    error = assert_error(response, 400, "upload.invalid")
    (problem,) = error["details"]["errors"]
    assert (problem["line"], problem["column"], problem["code"]) == (2, 36, "upload.E003")
    assert problem["message"] == "invalid JSON: Expecting ',' delimiter at column 36"


def test_dataset_upload_needs_multipart(clients):
    response = clients["owner"].post(
        "/api/v1/tasks/api-task/datasets/", {"name": "x"}, format="json"
    )
    assert_error(response, 415, "unsupported_media_type")


@pytest.mark.parametrize("role", ROLES)
def test_hidden_datasets_and_gold_are_for_owners(role, clients, datasets):
    listing = clients[role].get("/api/v1/tasks/api-task/datasets/").json()
    is_owner = role in {"owner", "admin"}
    assert {d["slug"] for d in listing} == ({"public", "secret"} if is_owner else {"public"})
    hidden = clients[role].get("/api/v1/tasks/api-task/datasets/secret/examples/")
    public = clients[role].get("/api/v1/tasks/api-task/datasets/public/examples/")
    assert public.status_code == 200
    rows = public.json()["results"]
    assert len(rows) == 5 and public.json()["count"] == 5
    if is_owner:
        assert hidden.status_code == 200
        assert rows[0]["gold"] == {"label": "positive"}
    else:
        assert_error(hidden, 404)
        assert all(row["gold"] is None for row in rows)
        assert "positive" not in json.dumps([row["gold"] for row in rows])


@pytest.mark.parametrize("role", ROLES)
def test_scores_on_hidden_datasets_do_not_leak(role, clients, scored):
    scores = clients[role].get(f"/api/v1/models/{scored.pk}/scores/").json()
    runs = clients[role].get(f"/api/v1/models/{scored.pk}/runs/").json()
    board = clients[role].get("/api/v1/tasks/api-task/leaderboard/").json()
    sees_hidden = role in {"owner", "admin"}
    assert {s["dataset"] for s in scores} == ({"public", "secret"} if sees_hidden else {"public"})
    assert {r["dataset"] for r in runs} == ({"public", "secret"} if sees_hidden else {"public"})
    assert ("secret" in json.dumps(board)) == sees_hidden
    assert board["rows"][0]["model"] == "file-model"
    assert board["rows"][0]["datasets"]["public"]["value"] == pytest.approx(100.0)


@pytest.mark.parametrize("role", ROLES)
def test_leaderboard_is_the_pages_table(role, clients, role_users, scored, client):
    query = "?w_macro_f1=3&d_public=2&sort=-dynascore&page=1&page_size=10&w_bogus=2&sort_x=1"
    api = clients[role].get(f"/api/v1/tasks/api-task/leaderboard/{query}")
    assert api.status_code == 200
    if role_users[role] is not None:
        client.force_login(role_users[role])
    page = client.get(f"/tasks/api-task/leaderboard.json{query}")
    assert page.status_code == 200
    assert api.json() == page.json()
    assert api.json()["weights"]["metrics"]["macro_f1"] == 3.0


def test_bad_leaderboard_parameters_are_explained_not_refused(clients, scored):
    body = clients["worker"].get("/api/v1/tasks/api-task/leaderboard/?page=-3&sort=nope").json()
    assert body["page"] == 1 and body["sort"] == "-dynascore"
    assert len(body["messages"]) == 2


@pytest.fixture
def endpoint_model(api_task, submitter):
    return ModelFactory(
        task=api_task,
        owner=submitter,
        name="endpoint-model",
        protocol="dynatask",
        endpoint_url="http://127.0.0.1:9/",
        auth_token="sk-secret",
    )


@pytest.mark.parametrize("role", [*ROLES, "submitter"])
def test_trigger_a_run(role, clients, submitter, endpoint_model, datasets):
    client = client_for(submitter) if role == "submitter" else clients[role]
    response = client.post(
        f"/api/v1/models/{endpoint_model.pk}/runs/", {"dataset": "public"}, format="json"
    )
    if role in OWNER_ONLY:
        assert_error(response, OWNER_ONLY[role])
        assert not EvaluationRun.objects.exists()
        return
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "queued" and body["total"] == 5
    assert body["progress"]["done"] == 0 and body["progress"]["finished"] is False
    status = client.get(f"/api/v1/runs/{body['id']}/")
    assert status.json()["id"] == body["id"]


def test_a_non_owner_cannot_run_on_a_hidden_dataset(submitter, endpoint_model, datasets):
    response = client_for(submitter).post(
        f"/api/v1/models/{endpoint_model.pk}/runs/", {"dataset": "secret"}, format="json"
    )
    assert_error(response, 404)


@pytest.mark.parametrize("role", [*ROLES, "submitter"])
def test_retry_a_failed_run(role, clients, submitter, endpoint_model, datasets):
    run = evaluation_run_create(endpoint_model, datasets["public"])
    EvaluationRun.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED, error_code="model.timeout", error_message="slow"
    )
    client = client_for(submitter) if role == "submitter" else clients[role]
    response = client.post(f"/api/v1/runs/{run.pk}/retry/", {}, format="json")
    run.refresh_from_db()
    if role in OWNER_ONLY:
        assert_error(response, OWNER_ONLY[role])
        assert run.status == RunStatus.FAILED
    else:
        assert response.status_code == 200
        assert response.json()["status"] == "queued" and run.status == RunStatus.QUEUED
    assert_error(
        client.post(f"/api/v1/runs/{run.pk}/retry/", {}, format="json"),
        *((OWNER_ONLY[role],) if role in OWNER_ONLY else (400, "run.not_failed")),
    )


def test_run_error_messages_are_for_the_models_owners(clients, endpoint_model, datasets):
    endpoint_model.is_published = True
    endpoint_model.save()
    run = evaluation_run_create(endpoint_model, datasets["public"])
    EvaluationRun.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED, error_code="model.bad_response", error_message="body: secret"
    )
    public = clients["worker"].get(f"/api/v1/runs/{run.pk}/").json()
    assert public["error_code"] == "model.bad_response" and public["error_message"] == ""
    assert clients["owner"].get(f"/api/v1/runs/{run.pk}/").json()["error_message"]


@pytest.mark.parametrize("role", [*ROLES, "submitter"])
def test_predictions_upload(role, clients, submitter, file_model, datasets):
    client = client_for(submitter) if role == "submitter" else clients[role]
    rows = [_prediction(row["uid"], "positive") for row in sentiment_rows(5)]
    response = client.post(
        f"/api/v1/models/{file_model.pk}/predictions/",
        {"dataset": "public", "file": _file(rows)},
        format="multipart",
    )
    if role in OWNER_ONLY:
        assert_error(response, OWNER_ONLY[role])
        return
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "done" and body["score"]["dataset"] == "public"
    assert (body["score"]["partial"], body["score"]["coverage"]) == (False, "5 of 5")


def test_a_predictions_file_missing_ids_is_refused_unless_partial(
    clients, submitter, file_model, api_task
):
    _import(api_task, "big", count=400)
    client = client_for(submitter)
    rows = [_prediction(row["uid"], row["label"]) for row in sentiment_rows(300)]
    url = f"/api/v1/models/{file_model.pk}/predictions/"
    response = client.post(url, {"dataset": "big", "file": _file(rows)}, format="multipart")
    error = assert_error(response, 400, "upload.invalid")
    assert "missing 100 of 400 ids: u300, u301, u302, u303, u304, …" in error["message"]
    assert error["details"]["missing_count"] == 100
    assert error["details"]["errors"][0]["code"] == "upload.E024"
    assert not EvaluationRun.objects.filter(model=file_model).exists()

    response = client.post(
        url, {"dataset": "big", "file": _file(rows), "partial": "true"}, format="multipart"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["done"], body["total"]) == (300, 400)
    progress = body["progress"]
    assert progress["percent"] == 75.0 and progress["partial"]
    assert progress["counts"] == "300 of 400 examples (partial)"
    score = body["score"]
    assert (score["covered"], score["example_count"], score["partial"]) == (300, 400, True)
    assert score["coverage"] == "300 of 400"

    # The model's runs, its scores, and the leaderboard say the same.
    (run,) = clients["owner"].get(f"/api/v1/models/{file_model.pk}/runs/").json()
    assert run["progress"]["partial"] and run["score"]["coverage"] == "300 of 400"
    (listed,) = clients["owner"].get(f"/api/v1/models/{file_model.pk}/scores/").json()
    assert (listed["partial"], listed["coverage"]) == (True, "300 of 400")
    table = clients["anonymous"].get(f"/api/v1/tasks/{api_task.code}/leaderboard/").json()
    (row,) = table["rows"]
    assert row["partial"] and row["partial_datasets"] == ["big"]
    assert row["datasets"]["big"] == {
        **row["datasets"]["big"],
        "covered": 300,
        "total": 400,
        "partial": True,
    }


def test_a_predictions_file_with_invalid_json_names_its_line_and_column(
    clients, submitter, file_model, datasets
):
    rows = [_prediction(row["uid"], "positive") for row in sentiment_rows(5)]
    bad = '{"uid": "u1", "label": "positive" "prob": {}}'
    response = client_for(submitter).post(
        f"/api/v1/models/{file_model.pk}/predictions/",
        {"dataset": "public", "file": _lines_with(bad, rows)},
        format="multipart",
    )
    error = assert_error(response, 400, "upload.invalid")
    problems = [(e["line"], e["column"], e["code"]) for e in error["details"]["errors"]]
    assert (2, 35, "upload.E003") in problems


def test_per_tag_counts_are_integers(clients, scored):
    body = clients["owner"].get(f"/api/v1/models/{scored.pk}/scores/").json()
    assert body, body
    for score in body:
        assert score["per_tag"], score
        for figures in score["per_tag"].values():
            assert type(figures["count"]) is int
            metric_values = [value for name, value in figures.items() if name != "count"]
            assert all(value is None or type(value) is float for value in metric_values)


@pytest.mark.parametrize("role", ROLES)
def test_forks(role, clients, scored):
    response = clients[role].post(
        "/api/v1/tasks/api-task/leaderboard/forks/",
        {
            "name": "Fairness first",
            "weights": {"metrics": {"fairness": 5}, "datasets": {"secret": 9, "public": 2}},
        },
        format="json",
    )
    if role == "anonymous":
        assert_error(response, 401)
        return
    assert response.status_code == 201, response.content
    fork = response.json()
    assert fork["weights"]["metrics"]["fairness"] == 5
    # A fork is public: it never names a hidden dataset.
    assert "secret" not in fork["weights"]["datasets"]
    detail = clients["anonymous"].get(f"/api/v1/tasks/api-task/leaderboard/forks/{fork['slug']}/")
    assert detail.status_code == 200
    assert detail.json()["table"]["weights"]["metrics"]["fairness"] == 5
    listing = clients["anonymous"].get("/api/v1/tasks/api-task/leaderboard/forks/").json()
    assert [f["slug"] for f in listing] == [fork["slug"]]


@pytest.mark.parametrize("role", ROLES)
def test_snapshots_are_taken_by_owners_and_public(role, clients, scored):
    response = clients[role].post(
        "/api/v1/tasks/api-task/leaderboard/snapshots/", {"name": "v1"}, format="json"
    )
    if role in OWNER_ONLY:
        assert_error(response, OWNER_ONLY[role])
        assert not LeaderboardSnapshot.objects.exists()
        return
    assert response.status_code == 201
    snapshot = response.json()
    assert "secret" not in json.dumps(snapshot["table"])
    detail = clients["anonymous"].get(
        f"/api/v1/tasks/api-task/leaderboard/snapshots/{snapshot['id']}/"
    )
    assert detail.json()["table"] == snapshot["table"]
    assert (
        clients["worker"].get("/api/v1/tasks/api-task/leaderboard/snapshots/").json()[0]["name"]
        == "v1"
    )


def test_unknown_fork_and_snapshot_are_404(clients):
    assert_error(clients["worker"].get("/api/v1/tasks/api-task/leaderboard/forks/nope/"), 404)
    assert_error(clients["worker"].get("/api/v1/tasks/api-task/leaderboard/snapshots/9/"), 404)


# -- hidden datasets: the sealed view and where their inputs go --------------------------------
def _hidden_run(model, dataset, **fields):
    return EvaluationRun.objects.create(
        model=model,
        dataset=dataset,
        config_version=dataset.config_version,
        trigger="model_registered",
        total=dataset.row_count,
        **fields,
    )


@pytest.mark.parametrize(
    ("error_code", "shown"),
    [("model.timeout", "the model timed out"), ("run.finalize_failed", None)],
)
def test_a_models_owner_sees_a_hidden_run_sealed(
    error_code, shown, clients, submitter, endpoint_model, datasets
):
    from leaderboards.models import Score
    from leaderboards.selectors.runs import SEALED_ERROR_MESSAGE

    hidden = datasets["hidden"]
    run = _hidden_run(
        endpoint_model,
        hidden,
        status=RunStatus.FAILED,
        done=3,
        failed_count=2,
        error_code=error_code,
        error_message="the model timed out" if shown else "macro_f1 of tag x: 0.42",
    )
    Score.objects.create(
        model=endpoint_model,
        dataset=hidden,
        run=run,
        config_version=hidden.config_version,
        metrics={"macro_f1": 0.42},
        per_tag={"x": {"macro_f1": 0.42}},
        main_metric="macro_f1",
        main_value=0.42,
        ci_low=0.3,
        ci_high=0.5,
    )
    body = client_for(submitter).get(f"/api/v1/runs/{run.pk}/").json()
    assert body["sealed"] is True and body["dataset"] is None
    assert body["score"] is None and body["failed_count"] is None
    assert (body["done"], body["total"], body["progress"]["done"]) == (3, 5, 3)
    assert body["status"] == "failed" and body["error_code"] == error_code
    assert body["error_message"] == (shown or SEALED_ERROR_MESSAGE)
    listed = client_for(submitter).get(f"/api/v1/models/{endpoint_model.pk}/runs/").json()
    assert [(item["id"], item["sealed"], item["score"]) for item in listed] == [
        (run.pk, True, None)
    ]
    owner = clients["owner"].get(f"/api/v1/runs/{run.pk}/").json()
    assert owner["sealed"] is False and owner["dataset"] == "secret"
    assert owner["score"]["main_value"] == 0.42 and owner["failed_count"] == 2
    for role in ("anonymous", "worker", "other_owner"):
        assert_error(clients[role].get(f"/api/v1/runs/{run.pk}/"), 404)


def test_hidden_inputs_go_to_the_owners_models_only(clients, submitter, api_owner, api_task):
    from leaderboards.services.runs import evaluation_runs_for_dataset

    others = ModelFactory(
        task=api_task,
        owner=submitter,
        name="others",
        protocol="dynatask",
        endpoint_url="http://127.0.0.1:9/",
    )
    owners = ModelFactory(
        task=api_task,
        owner=api_owner,
        name="owners",
        protocol="dynatask",
        endpoint_url="http://127.0.0.1:9/",
    )
    hidden = _import(api_task, "secret", "hidden")
    assert hidden.inputs_to_others is False
    runs = evaluation_runs_for_dataset(hidden)
    assert [run.model for run in runs] == [owners]
    # The owners run the other model on it by hand: refused, with the reason.
    response = clients["owner"].post(
        f"/api/v1/models/{others.pk}/runs/", {"dataset": "secret"}, format="json"
    )
    assert_error(response, 403, "run.inputs_private")
    listed = clients["owner"].get(f"/api/v1/tasks/{api_task.code}/datasets/secret/").json()
    assert listed["inputs_to_others"] is False
    # Allowed explicitly at upload: the other model is evaluated too.
    response = clients["owner"].post(
        f"/api/v1/tasks/{api_task.code}/datasets/",
        {
            "file": _file(sentiment_rows(3)),
            "name": "Secret",
            "slug": "secret",
            "access_type": "hidden",
            "inputs_to_others": "true",
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    assert response.json()["inputs_to_others"] is True
    assert set(EvaluationRun.objects.filter(dataset=hidden).values_list("model", flat=True)) == {
        others.pk,
        owners.pk,
    }


def test_a_dataset_upload_without_the_choice_takes_the_default(clients, api_task):
    for slug, access_type, expected in (("open", "scoring", True), ("closed", "hidden", False)):
        response = clients["owner"].post(
            f"/api/v1/tasks/{api_task.code}/datasets/",
            {"file": _file(sentiment_rows(2)), "name": slug, "access_type": access_type},
            format="multipart",
        )
        assert response.status_code == 201, response.content
        assert response.json()["inputs_to_others"] is expected


def test_a_big_dataset_upload_answers_202_and_the_caps_a_clear_error(clients, api_task, settings):
    settings.UPLOAD_INLINE_MAX_BYTES = 100
    url = f"/api/v1/tasks/{api_task.code}/datasets/"
    body = {"file": _file(sentiment_rows(20)), "name": "Big"}
    response = clients["owner"].post(url, body, format="multipart")
    assert response.status_code == 202, response.content
    upload = response.json()
    assert (upload["kind"], upload["status"], upload["task"]) == ("dataset", "queued", "api-task")
    assert clients["owner"].get(upload["url"]).json()["id"] == upload["id"]
    assert_error(clients["worker"].get(upload["url"]), 404)
    settings.UPLOAD_INLINE_MAX_BYTES = 10**9
    settings.UPLOAD_MAX_ROWS = 10
    body = {"file": _file(sentiment_rows(20)), "name": "Big"}
    error = assert_error(clients["owner"].post(url, body, format="multipart"), 400)
    assert error["details"]["errors"][-1]["code"] == "upload.E030"
    settings.UPLOAD_MAX_BYTES = 50
    body = {"file": _file(sentiment_rows(20)), "name": "Big"}
    assert_error(clients["owner"].post(url, body, format="multipart"), 413, "upload.too_large")


def test_the_leaderboard_gives_intervals_and_the_confidence_of_each_rank(
    clients, scored, datasets, submitter, api_task
):
    """Scored from predictions files: a twin of the all-correct model, and one all wrong."""
    labels = ("negative", "positive", "neutral")
    twin = ModelFactory(task=api_task, owner=submitter, name="twin-model")
    wrong = ModelFactory(task=api_task, owner=submitter, name="wrong-model")
    for dataset in datasets.values():
        right_rows = [_prediction(row["uid"], row["label"]) for row in sentiment_rows(5)]
        wrong_rows = [
            _prediction(row["uid"], labels[(labels.index(row["label"]) + 1) % 3])
            for row in sentiment_rows(5)
        ]
        predictions_import(twin, dataset, _file(right_rows), filename="p.jsonl")
        predictions_import(wrong, dataset, _file(wrong_rows), filename="p.jsonl")
    body = clients["anonymous"].get("/api/v1/tasks/api-task/leaderboard/").json()
    rows = {row["model"]: row for row in body["rows"]}
    assert [row["model"] for row in body["rows"]] == ["file-model", "twin-model", "wrong-model"]
    assert (rows["file-model"]["ci_low"], rows["file-model"]["ci_high"]) == (100.0, 100.0)
    assert rows["file-model"]["dynascore_ci_low"] == rows["file-model"]["dynascore_ci_high"]
    # Identical models: ahead in half the resamples (a draw counts half), a tie.
    assert rows["file-model"]["ahead_of_next"] == {
        "model": "twin-model",
        "main_metric_share": 0.5,
        "main_metric_tie": True,
        "main_metric_next_ahead": False,
        "dynascore_share": 0.5,
        "dynascore_tie": True,
        "dynascore_next_ahead": False,
    }
    assert rows["twin-model"]["ahead_of_next"] == {
        "model": "wrong-model",
        "main_metric_share": 1.0,
        "main_metric_tie": False,
        "main_metric_next_ahead": False,
        "dynascore_share": 1.0,
        "dynascore_tie": False,
        "dynascore_next_ahead": False,
    }
    assert rows["wrong-model"]["ahead_of_next"] is None


@pytest.mark.django_db
def test_the_schema_says_which_noise_the_dynascore_interval_covers_and_names_next_ahead(client):
    schemas = client.get("/api/schema/?format=json").json()["components"]["schemas"]
    row = schemas["LeaderboardRow"]["properties"]
    assert "main metric's sampling noise only" in row["dynascore_ci_low"]["description"]
    comparison = schemas["NextComparison"]["properties"]
    assert "next model is ahead" in comparison["main_metric_next_ahead"]["description"]
    assert "neither model is ahead" in comparison["main_metric_tie"]["description"]


def test_reruns_beyond_the_daily_budget_get_a_429(
    clients, settings, submitter, endpoint_model, datasets
):
    settings.MODELS_HUB_REGISTRATIONS_PER_DAY = 2
    url = f"/api/v1/models/{endpoint_model.pk}/runs/"
    client = client_for(submitter)
    for _ in range(2):
        assert client.post(url, {"dataset": "public"}, format="json").status_code == 201
    response = client.post(url, {"dataset": "public"}, format="json")
    error = assert_error(response, 429, "run.daily_limit")
    assert error["details"]["limit"] == 2 and error["details"]["wait_seconds"] > 0
    assert int(response["Retry-After"]) == error["details"]["wait_seconds"]
    assert EvaluationRun.objects.filter(requested_by=submitter).count() == 2
    # The task's owners are not limited.
    assert clients["owner"].post(url, {"dataset": "public"}, format="json").status_code == 201
