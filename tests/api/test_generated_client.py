"""A Python client generated from the live schema runs the README's walk-through.

openapi-python-client (a dev dependency) reads ``/api/schema/`` as served by a live server
and writes a client package into a temporary directory, offline; the test imports it and,
against the same live server, registers a model, uploads a dataset, watches the runs,
reads the leaderboard and the export. The generator must keep every operation and response
of the schema (it warns about each one it drops), and what the client parses must have the
types the schema promises: integers where counts are, mappings where objects are.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from api.auth import api_token_create
from tests.factories import ExampleFactory, TaskFactory, UserFactory
from tests.leaderboards.evalkit import KeywordSentiment, run_worker, sentiment_rows, serving

pytest.importorskip(
    "openapi_python_client", reason="openapi-python-client (requirements-dev.txt) is missing"
)

PACKAGE = "dynatask_api_client"


def generate_client(server_url: str, workdir: Path):
    """Generate the client from the schema ``server_url`` serves; yield its package."""
    with urllib.request.urlopen(f"{server_url}/api/schema/?format=json", timeout=30) as got:
        schema = workdir / "schema.json"
        schema.write_bytes(got.read())
    # The generator formats its code with ruff: the project's own (pinned) one, from the venv.
    bin_dir = str(Path(sys.executable).parent)
    output = workdir / PACKAGE
    finished = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--meta", "none"]
        + ["--path", str(schema), "--output-path", str(output)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=workdir,
        env={"PATH": bin_dir, "HOME": str(workdir), "NO_COLOR": "1"},
        check=False,
    )
    report = finished.stdout + finished.stderr
    assert finished.returncode == 0, report
    # Each operation or response the generator cannot read is dropped with a warning.
    assert "Warning" not in report and "WARNING" not in report, report
    sys.path.insert(0, str(workdir))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(workdir))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def generated_client(live_server, tmp_path_factory):
    """Generate the client from the live schema; yield its package, imported."""
    yield from generate_client(live_server.url, tmp_path_factory.mktemp("generated-client"))


def _api(package, name: str):
    return importlib.import_module(f"{package.__name__}.{name}")


def _client(package, live_server, token: str):
    """The generated client, signed in with ``token``; an undocumented status raises."""
    return _api(package, "client").AuthenticatedClient(
        base_url=live_server.url, token=token, prefix="Token", raise_on_unexpected_status=True
    )


@pytest.fixture
def platform(transactional_db, redis_connection):
    """The README's setting: a task, its owner's API token, a model server on loopback."""
    owner = UserFactory(username="client-owner")
    task = TaskFactory(code="sentiment", owners=[owner])
    for _ in range(2):
        ExampleFactory(task=task, user=owner)
    with serving(KeywordSentiment()) as server:
        yield {
            "task": task,
            "token": api_token_create(owner),
            "endpoint": f"http://127.0.0.1:{server.server_address[1]}/",
        }


def test_the_generated_client_walks_through_the_readme(generated_client, live_server, platform):
    models = _api(generated_client, "models")
    types = _api(generated_client, "types")
    client = _client(generated_client, live_server, platform["token"])
    code = platform["task"].code

    # 1. Register a model (published, so that the leaderboard lists it).
    register = _api(generated_client, "api.models.tasks_models_create")
    model = register.sync(
        code,
        client=client,
        body=models.ModelRegisterRequest(
            name="my-model",
            protocol=models.ProtocolEnum.DYNATASK,
            endpoint_url=platform["endpoint"],
            is_published=True,
        ),
    )
    assert isinstance(model, models.Model), model
    assert model.name == "my-model" and isinstance(model.id, int)

    # 2. Upload a dataset (JSON Lines, multipart): it queues a run of the model.
    rows = sentiment_rows(10)
    upload = _api(generated_client, "api.datasets.tasks_datasets_create")
    lines = "".join(json.dumps(row) + "\n" for row in rows).encode()
    dataset = upload.sync(
        code,
        client=client,
        body=models.DatasetUploadRequest(
            file=types.File(payload=lines, file_name="mine.jsonl"),
            name="My test set",
            slug="mine",
            access_type=models.AccessTypeEnum.SCORING,
        ),
    )
    assert isinstance(dataset, models.Dataset), dataset
    assert dataset.slug == "mine" and dataset.row_count == 10
    run_worker()

    # 3. Watch the evaluation runs: done, with a score whose per-tag counts are integers.
    runs = _api(generated_client, "api.evaluations.models_runs_list").sync(model.id, client=client)
    (run,) = [run for run in runs if run.dataset == "mine"]
    assert run.status == models.RunStatusEnum.DONE
    assert run.progress.done == run.progress.total == 10 and run.progress.finished
    score = run.score
    assert score.main_metric == "macro_f1" and isinstance(score.main_value, float)
    assert score.example_count == 10 and isinstance(score.example_count, int)
    per_tag = score.per_tag.additional_properties
    assert sorted(per_tag) == ["even", "odd"]
    for figures in per_tag.values():
        assert type(figures.count) is int and figures.count == 5
        assert isinstance(figures["macro_f1"], float)

    # 4. Read the leaderboard with the page's weights and sorting.
    weights = models.TasksLeaderboardRetrieveWeights()
    weights["w_macro_f1"] = 4
    board = _api(generated_client, "api.leaderboards.tasks_leaderboard_retrieve").sync(
        code, client=client, weights=weights, sort="-dynascore"
    )
    assert isinstance(board, models.LeaderboardTable), board
    assert board.weights.metrics["macro_f1"] == 4 and board.messages == []
    (row,) = board.rows
    assert row.model == "my-model" and row.rank == 1 and isinstance(row.dynascore, float)
    assert isinstance(row.datasets["mine"].value, float)
    assert type(board.total_rows) is int and board.total_rows == 1

    # The export: JSON Lines, kept by the client as bytes, one example per line.
    export = _api(generated_client, "api.exports.tasks_export_retrieve")
    exported = export.sync(code, client=client)
    assert isinstance(exported, types.File), exported
    body = exported.payload.read()
    examples = [json.loads(line) for line in body.splitlines()]
    assert len(examples) == 2 and all(isinstance(line, dict) for line in examples)
    as_bytes = export.sync_detailed(
        code, client=client.with_headers({"Accept": "application/octet-stream"})
    )
    assert as_bytes.headers["Content-Type"] == "application/octet-stream"
    assert as_bytes.parsed.payload.read() == body


def test_the_generated_client_reads_errors_in_their_shape(generated_client, live_server, platform):
    models = _api(generated_client, "models")
    types = _api(generated_client, "types")
    client = _client(generated_client, live_server, platform["token"])
    upload = _api(generated_client, "api.datasets.tasks_datasets_create")
    good = json.dumps(sentiment_rows(1)[0])
    lines = f'{good}\n{{"uid": "u2" "label": "positive"}}\n'.encode()
    refused = upload.sync(
        platform["task"].code,
        client=client,
        body=models.DatasetUploadRequest(
            file=types.File(payload=lines, file_name="bad.jsonl"), name="Bad"
        ),
    )
    assert isinstance(refused, models.Error), refused
    assert refused.error.code == "upload.invalid"
    (problem,) = refused.error.details["errors"]
    assert problem["line"] == 2 and problem["column"] == 14 and problem["code"] == "upload.E003"
