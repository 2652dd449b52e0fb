"""Services of the tasks app: creation, config versions, rounds, contexts, proposals."""

from __future__ import annotations

import io
import json

import pytest

from core.errors import Conflict, InvalidConfig, InvalidUpload, ServiceError
from tasks import services
from tasks.models import Context, ProposalStatus, Round, Task, TaskConfigVersion
from tests.factories import ContextFactory, TaskFactory, UserFactory, demo_config

pytestmark = pytest.mark.django_db


def jsonl(*records) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(r) + "\n" for r in records).encode())


def test_task_create_makes_version_one_and_open_round_one(owner):
    task = services.task_create(
        code="nli", name="NLI", yaml_text=demo_config("nli"), owners=[owner]
    )
    assert task.current_config.version == 1
    assert list(task.rounds.values_list("number", "is_open")) == [(1, True)]
    assert list(task.owners.all()) == [owner]
    assert task.config.goal_field.name == "label"


def test_task_create_rejects_bad_config_with_every_issue():
    with pytest.raises(InvalidConfig) as caught:
        services.task_create(code="bad", name="Bad", yaml_text="input: 3\nbogus: 1\n")
    issues = caught.value.details["issues"]
    assert len(issues) >= 2
    assert all(issue["code"].startswith("config.") for issue in issues)
    assert not Task.objects.filter(code="bad").exists()


def test_task_create_refuses_duplicate_code(task):
    with pytest.raises(Conflict):
        services.task_create(code=task.code, name="x", yaml_text=demo_config("sentiment"))


def test_config_without_data_is_edited_in_place(task):
    new_yaml = demo_config("sentiment").replace("Write a statement", "Please write a statement")
    version = services.task_update_config(task, new_yaml)
    assert version.version == 1
    assert TaskConfigVersion.objects.filter(task=task).count() == 1
    task.refresh_from_db()
    assert "Please write" in task.current_config.yaml_text


def test_config_with_data_creates_a_new_version_and_keeps_the_old(task):
    context = ContextFactory(task=task)
    old_version = task.current_config
    new_yaml = demo_config("sentiment").replace("Write a statement", "Please write a statement")
    version = services.task_update_config(task, new_yaml)
    assert version.version == 2
    task.refresh_from_db()
    assert task.current_config == version
    context.refresh_from_db()
    # Old data keeps pointing at the version it was made under, unchanged.
    assert context.config_version == old_version
    assert "Please write" not in context.config_version.yaml_text


def test_unchanged_config_is_a_no_op(task):
    ContextFactory(task=task)
    version = services.task_update_config(task, task.current_config.yaml_text)
    assert version.version == 1


def test_invalid_config_update_saves_nothing(task):
    before = task.current_config.yaml_text
    with pytest.raises(InvalidConfig):
        services.task_update_config(task, "input: []\n")
    task.refresh_from_db()
    assert task.current_config.yaml_text == before


def test_round_open_numbers_and_closes_previous(task):
    second = services.round_open(task, description="harder")
    assert second.number == 2
    assert list(Round.objects.filter(task=task, is_open=True)) == [second]
    third = services.round_open(task, close_previous=False)
    assert Round.objects.filter(task=task, is_open=True).count() == 2
    assert third.number == 3


def test_contexts_import_jsonl(task):
    count = services.contexts_import(
        task,
        jsonl({"context": {"context": "a"}, "tag": "x"}, {"context": {"context": "b"}}),
        filename="c.jsonl",
    )
    assert count == 2
    assert list(Context.objects.filter(task=task).values_list("tag", flat=True)) == ["x", ""]


def test_contexts_import_csv_with_tag_override(task):
    data = io.BytesIO(b"context,tag\nhello,a\nworld,b\n")
    count = services.contexts_import(task, data, filename="c.csv", tag="forced")
    assert count == 2
    assert set(Context.objects.values_list("tag", flat=True)) == {"forced"}


def test_contexts_import_is_all_or_nothing_and_names_every_bad_line(task):
    stream = jsonl(
        {"context": {"context": "fine"}},
        {"context": {"wrong_field": "x"}},
        {"context": 5},
        {"context": {"context": "fine again"}},
    )
    stream = io.BytesIO(stream.getvalue() + b"{not json\n")
    with pytest.raises(InvalidUpload) as caught:
        services.contexts_import(task, stream, filename="c.jsonl")
    lines = sorted({error["line"] for error in caught.value.details["errors"]})
    assert lines == [2, 3, 5]
    assert Context.objects.count() == 0


def test_contexts_import_counts_every_problem_and_reports_the_first_100(task):
    stream = io.BytesIO(b'{"context": 5}\n' * 250 + b"{not json\n" * 150)
    with pytest.raises(InvalidUpload) as caught:
        services.contexts_import(task, stream, filename="c.jsonl")
    error = caught.value
    assert error.message == "the first 100 of 400 problems in the upload; nothing was imported"
    assert [item["line"] for item in error.details["errors"]] == list(range(1, 101))
    assert error.details["error_count"] == 400


def test_contexts_import_of_an_empty_file_names_line_1(task):
    with pytest.raises(InvalidUpload) as caught:
        services.contexts_import(task, io.BytesIO(b"\n\n"), filename="c.jsonl")
    assert caught.value.message == "1 problem in the upload; nothing was imported"
    assert [(e["line"], e["code"]) for e in caught.value.details["errors"]] == [(1, "upload.E008")]


PASSAGE_CONFIG = (
    demo_config("nli")
    .replace("  - name: context\n", "  - name: passage\n")
    .replace("reference_name: context", "reference_name: passage")
)


def errors_of(caught) -> list[tuple[int, str, str]]:
    return [(e["line"], e["code"], e["path"]) for e in caught.value.details["errors"]]


def test_contexts_import_takes_flat_lines_keyed_by_the_field_names(owner):
    task = TaskFactory(code="flat", yaml_text=PASSAGE_CONFIG, owners=[owner])
    count = services.contexts_import(
        task,
        jsonl(
            {"passage": "A flat line.", "tag": "news", "metadata": {"source": "wire"}},
            {"context": {"passage": "A nested line."}, "tag": "daily"},
            {"passage": "Flat, untagged."},
        ),
        filename="c.jsonl",
    )
    assert count == 3
    rows = list(Context.objects.filter(task=task).order_by("id").values("data", "tag", "metadata"))
    assert rows == [
        {"data": {"passage": "A flat line."}, "tag": "news", "metadata": {"source": "wire"}},
        {"data": {"passage": "A nested line."}, "tag": "daily", "metadata": {}},
        {"data": {"passage": "Flat, untagged."}, "tag": "", "metadata": {}},
    ]


def test_a_field_named_context_takes_the_flat_form_too(task):
    # The demo sentiment config's context field is called "context".
    count = services.contexts_import(
        task,
        jsonl({"context": "Flat: the field itself."}, {"context": {"context": "Nested."}}),
        filename="c.jsonl",
    )
    assert count == 2
    assert [c.data for c in Context.objects.order_by("id")] == [
        {"context": "Flat: the field itself."},
        {"context": "Nested."},
    ]


def test_flat_lines_with_mistakes_name_their_line_and_field(owner):
    task = TaskFactory(code="flat-bad", yaml_text=PASSAGE_CONFIG, owners=[owner])
    stream = jsonl(
        {"passage": "fine"},
        {"passage": 12},
        {"pasage": "typo"},
        {"passage": "x", "tag": 3, "metadata": "no"},
        {"context": "not an object, and no field is called context"},
    )
    with pytest.raises(InvalidUpload) as caught:
        services.contexts_import(task, stream, filename="c.jsonl")
    assert errors_of(caught) == [
        (2, "value.E103", "passage"),
        (3, "value.E102", "pasage"),
        (3, "value.E101", "passage"),
        (4, "upload.E012", "tag"),
        (4, "upload.E013", "metadata"),
        (5, "upload.E011", "context"),
    ]
    assert not Context.objects.filter(task=task).exists()


def test_nested_lines_keep_their_paths_under_context(owner):
    task = TaskFactory(code="nested-bad", yaml_text=PASSAGE_CONFIG, owners=[owner])
    with pytest.raises(InvalidUpload) as caught:
        services.contexts_import(
            task, jsonl({"context": {"passage": 1}, "extra": 1}), filename="c.jsonl"
        )
    assert errors_of(caught) == [
        (1, "upload.E010", "extra"),
        (1, "value.E103", "context.passage"),
    ]


def test_contexts_import_large_batches(task):
    records = [{"context": {"context": f"passage {i}"}} for i in range(2500)]
    assert services.contexts_import(task, jsonl(*records), filename="c.jsonl") == 2500
    assert Context.objects.filter(task=task).count() == 2500


def test_contexts_import_empty_file_is_an_error(task):
    with pytest.raises(InvalidUpload):
        services.contexts_import(task, io.BytesIO(b"\n\n"), filename="c.jsonl")


def test_contexts_import_unknown_round(task):
    with pytest.raises(ServiceError):
        services.contexts_import(task, jsonl({"context": {"context": "a"}}), round_number=9)


def test_proposal_accept_creates_task_with_owner_and_round(admin_user_obj):
    proposer = UserFactory()
    proposal = services.proposal_submit(
        proposer=proposer, code="newtask", name="New", description="Why it matters"
    )
    task = services.proposal_accept(proposal, decided_by=admin_user_obj, reason="good")
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.ACCEPTED
    assert proposal.task == task
    assert list(task.owners.all()) == [proposer]
    assert task.rounds.get().number == 1
    proposer.refresh_from_db()
    assert proposer.is_staff
    with pytest.raises(Conflict):
        services.proposal_accept(proposal, decided_by=admin_user_obj)


def test_proposal_reject_needs_a_reason(admin_user_obj):
    proposal = services.proposal_submit(
        proposer=UserFactory(), code="p2", name="P", description="d"
    )
    with pytest.raises(ServiceError):
        services.proposal_reject(proposal, decided_by=admin_user_obj, reason=" ")
    services.proposal_reject(proposal, decided_by=admin_user_obj, reason="out of scope")
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.REJECTED
    assert proposal.reason == "out of scope"


def test_proposal_with_invalid_config_is_refused():
    with pytest.raises(InvalidConfig):
        services.proposal_submit(
            proposer=UserFactory(), code="p3", name="P", description="d", config_yaml="input: 1"
        )


def test_duplicate_pending_proposal_is_refused():
    user = UserFactory()
    services.proposal_submit(proposer=user, code="same", name="P", description="d")
    with pytest.raises(Conflict):
        services.proposal_submit(proposer=user, code="same", name="P", description="d")


def test_task_factory_helper():
    task = TaskFactory(config_name="qa")
    assert task.config.main_perf_metric.type == "squad_f1"
