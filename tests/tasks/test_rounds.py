"""Opening a round carries the previous one over (contexts here, loop models in the models
hub), by default and from every entry point; the open rounds' warnings."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from models_hub import services as hub_services
from models_hub.models import ModelStatus, RegisteredModel
from tasks import services
from tasks.models import Context, Round
from tasks.selectors import RoundWarning, register_round_check, round_warnings
from tasks.services import DEFAULT_PROPOSAL_CONFIG
from tests.factories import ContextFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/"


def _loop_model(task, owner, name="m", status=ModelStatus.HEALTHY) -> RegisteredModel:
    model = RegisteredModel.objects.create(
        task=task, owner=owner, name=name, endpoint_url=URL, status=status
    )
    hub_services.model_set_in_loop(task.rounds.order_by("-number").first(), [model], owner)
    return model


@pytest.fixture
def round_one(task, owner):
    first = task.rounds.get(number=1)
    for number in range(3):
        ContextFactory(
            task=task,
            data={"context": f"Prompt {number}"},
            tag="t" if number else "",
            metadata={"source": number},
        )
    Context.objects.filter(round=first).update(times_served=7, example_count=2, fooled_count=1)
    return first


def test_opening_a_round_copies_the_previous_rounds_contexts_by_default(task, round_one):
    second = services.round_open(task, description="harder")
    copies = list(second.contexts.order_by("pk"))
    originals = list(round_one.contexts.order_by("pk"))
    assert [c.data for c in copies] == [o.data for o in originals]
    assert [(c.tag, c.metadata) for c in copies] == [(o.tag, o.metadata) for o in originals]
    assert {c.config_version_id for c in copies} == {task.current_config_id}
    # The copies start their own counts; the old round's rows are untouched.
    assert {(c.times_served, c.example_count, c.fooled_count) for c in copies} == {(0, 0, 0)}
    assert {o.times_served for o in round_one.contexts.all()} == {7}
    assert {c.pk for c in copies}.isdisjoint(o.pk for o in originals)


def test_opening_a_round_carries_the_loop_models_over_by_default(task, owner, round_one):
    healthy = _loop_model(task, owner, "a")
    sick = _loop_model(task, owner, "b", status=ModelStatus.UNHEALTHY)
    hub_services.model_set_in_loop(round_one, [healthy, sick], owner)
    second = services.round_open(task)
    assert set(second.in_loop_models.all()) == {healthy, sick}
    assert set(round_one.in_loop_models.all()) == {healthy, sick}


def test_carry_over_can_be_switched_off(task, owner, round_one):
    _loop_model(task, owner)
    second = services.round_open(task, carry_over=False)
    assert second.contexts.count() == 0
    assert second.in_loop_models.count() == 0
    assert round_one.contexts.count() == 3


def test_carry_over_takes_the_latest_round_even_when_it_is_closed(task, owner, round_one):
    second = services.round_open(task, carry_over=False)
    ContextFactory(task=task, round=second, data={"context": "only in round two"})
    second.is_open = False
    second.save()
    third = services.round_open(task, close_previous=False)
    assert [c.data["context"] for c in third.contexts.all()] == ["only in round two"]


def test_a_round_is_copied_in_batches(task, round_one, monkeypatch):
    monkeypatch.setattr(services, "CONTEXT_BATCH_SIZE", 2)
    version = task.current_config
    Context.objects.bulk_create(
        Context(task=task, round=round_one, config_version=version, data={"context": f"c{n}"})
        for n in range(7)
    )
    second = services.round_open(task)
    assert sorted(c.data["context"] for c in second.contexts.all()) == sorted(
        c.data["context"] for c in round_one.contexts.all()
    )


def test_the_admin_form_offers_the_carry_over_checked(client, task, owner, round_one):
    client.force_login(owner)
    url = reverse("admin:tasks_task_open_round", args=[task.pk])
    page = client.get(url).content.decode()
    assert 'name="carry_over"' in page and "checked" in page.split('name="carry_over"')[1][:80]
    client.post(url, {"description": "two", "close_previous": "on", "carry_over": "on"})
    assert task.rounds.get(number=2).contexts.count() == 3
    client.post(url, {"description": "three", "close_previous": "on"})  # unticked
    assert task.rounds.get(number=3).contexts.count() == 0


def test_the_command_carries_over_unless_told_not_to(task, owner, round_one):
    _loop_model(task, owner)
    out = StringIO()
    call_command("open_round", task.code, description="two", stdout=out)
    second = task.rounds.get(number=2)
    assert second.contexts.count() == 3 and second.in_loop_models.count() == 1
    assert "3 contexts" in out.getvalue()
    assert not task.rounds.get(number=1).is_open
    call_command("open_round", task.code, "--no-carry-over", "--keep-previous-open", stdout=out)
    third = task.rounds.get(number=3)
    assert third.contexts.count() == 0 and third.in_loop_models.count() == 0
    assert list(task.rounds.filter(is_open=True).values_list("number", flat=True)) == [2, 3]


def _codes(task) -> list[tuple[str, int]]:
    return [(warning.code, warning.round_number) for warning in round_warnings(task)]


def test_warnings_name_a_round_without_contexts_or_models(task, owner):
    assert _codes(task) == [("round.no_contexts", 1), ("loop.empty", 1)]
    ContextFactory(task=task)
    assert _codes(task) == [("loop.empty", 1)]
    model = _loop_model(task, owner)
    assert _codes(task) == []
    RegisteredModel.objects.filter(pk=model.pk).update(status=ModelStatus.UNHEALTHY)
    assert _codes(task) == [("loop.silent", 1)]
    RegisteredModel.objects.filter(pk=model.pk).update(
        status=ModelStatus.UNKNOWN
    )  # not checked yet
    assert _codes(task) == []


def test_warnings_are_for_open_rounds_and_contexts_only_when_the_config_has_some(owner):
    task = TaskFactory(code="no-context", yaml_text=DEFAULT_PROPOSAL_CONFIG, owners=[owner])
    assert _codes(task) == [("loop.empty", 1)]
    Round.objects.filter(task=task).update(is_open=False)
    assert round_warnings(task) == []


def test_warnings_say_what_happens_without_naming_models(task, owner):
    ContextFactory(task=task)
    RegisteredModel.objects.filter(pk=_loop_model(task, owner, "secret-name").pk).update(
        status=ModelStatus.DISABLED
    )
    (warning,) = round_warnings(task)
    assert "round 1" in warning.message and "secret-name" not in warning.message


def test_round_warnings_cost_two_queries(task, owner, django_assert_num_queries):
    services.round_open(task, close_previous=False)
    _loop_model(task, owner)
    with django_assert_num_queries(2):
        round_warnings(task)


def test_a_check_registered_twice_runs_once(task, monkeypatch):
    from tasks import selectors

    monkeypatch.setattr(selectors, "_round_checks", list(selectors._round_checks))

    def check(task, rounds):
        return [RoundWarning("test.W001", round_.number, "test") for round_ in rounds]

    register_round_check(check)
    register_round_check(check)
    assert [code for code, _ in _codes(task)].count("test.W001") == 1


def test_the_task_page_and_the_admin_page_carry_the_warnings(client, task, owner):
    visitor = UserFactory(username="visitor")
    client.force_login(visitor)
    page = client.get(reverse("tasks:detail", args=[task.code])).content.decode()
    assert 'data-code="round.no_contexts"' in page and 'data-code="loop.empty"' in page
    assert 'id="loop-health"' not in page  # the models' health is for owners
    client.force_login(owner)
    admin_page = client.get(reverse("admin:tasks_task_change", args=[task.pk])).content.decode()
    assert 'class="warning" data-code="loop.empty"' in admin_page
    page = client.get(reverse("tasks:detail", args=[task.code])).content.decode()
    assert 'id="loop-health"' in page
    ContextFactory(task=task)
    _loop_model(task, owner)
    page = client.get(reverse("tasks:detail", args=[task.code])).content.decode()
    assert 'data-testid="round-warnings"' not in page


def test_the_task_page_links_to_its_datasets(client, task):
    page = client.get(reverse("tasks:detail", args=[task.code])).content.decode()
    assert f'href="{reverse("leaderboards:dataset_list", args=[task.code])}"' in page
