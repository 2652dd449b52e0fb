"""Management commands: load_task, import_contexts, seed_demo."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tasks.models import Context, Task
from tests.factories import TaskFactory, UserFactory
from tests.shared_files import shared_data_dir
from tests.tasks.config.samples import dynabench, own, param, supported_params

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("sample", supported_params())
def test_load_task_loads_each_config(sample):
    owner = UserFactory(username="loader")
    out = StringIO()
    code = sample.name.replace("_", "-")
    call_command(
        "load_task", str(sample.path()), code=code, name=sample.name, owner="loader", stdout=out
    )
    task = Task.objects.get(code=code)
    assert task.owners.filter(pk=owner.pk).exists()
    assert task.config is not None


def test_load_task_reports_errors_with_lines(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("input:\n  - name: x\n    type: nope\noutput: []\n")
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("load_task", str(bad), code="bad", name="Bad", stderr=err)
    assert "line 3" in err.getvalue()
    assert not Task.objects.filter(code="bad").exists()


@pytest.mark.parametrize(
    "sample", [param(own("training_file_track")), param(dynabench("dataperf_image_labelling"))]
)
def test_load_task_rejects_a_training_file_track_with_a_clear_code(sample):
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("load_task", str(sample.path()), code="dataperf", name="DataPerf", stderr=err)
    assert "[config.E016]" in err.getvalue()
    assert not Task.objects.filter(code="dataperf").exists()


def test_import_contexts_command(tmp_path):
    task = TaskFactory(code="ctx")
    path = tmp_path / "contexts.jsonl"
    path.write_text("\n".join(json.dumps({"context": {"context": f"c{i}"}}) for i in range(5)))
    call_command("import_contexts", "ctx", str(path), tag="batch", stdout=StringIO())
    assert Context.objects.filter(task=task, tag="batch").count() == 5


def test_import_contexts_command_names_bad_lines(tmp_path):
    TaskFactory(code="ctx2")
    path = tmp_path / "contexts.jsonl"
    path.write_text('{"context": {"context": "ok"}}\n{"context": {"nope": 1}}\n')
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("import_contexts", "ctx2", str(path), stderr=err)
    assert f"{path}:2:" in err.getvalue()
    assert Context.objects.count() == 0


def test_seed_demo_is_idempotent():
    out = StringIO()
    call_command("seed_demo", "--no-evaluate", stdout=out)
    codes = set(Task.objects.values_list("code", flat=True))
    assert {"sentiment", "nli", "qa", "hs", "chat", "arena"} <= codes
    counts = {task.code: task.contexts.count() for task in Task.objects.all()}
    # Chat and arena tasks need no contexts: the worker starts the conversation.
    without = ("chat", "arena")
    assert all(count > 0 for code, count in counts.items() if code not in without)
    assert counts["chat"] == 0 and Task.objects.get(code="chat").config.chat is not None
    assert counts["arena"] == 0 and Task.objects.get(code="arena").config.arena is not None
    call_command("seed_demo", "--no-evaluate", stdout=StringIO())
    assert {task.code: task.contexts.count() for task in Task.objects.all()} == counts
    assert "admin" in out.getvalue()


def test_seed_demo_with_shared_data_loads_real_contexts():
    shared_data = shared_data_dir()
    call_command("seed_demo", "--no-evaluate", "--shared-data", str(shared_data), stdout=StringIO())
    assert Task.objects.get(code="qa").contexts.filter(tag="Super_Bowl_50").exists()
    assert Task.objects.get(code="nli").contexts.filter(tag="anli-r1").count() >= 100
    assert Task.objects.filter(code="mt").exists()
