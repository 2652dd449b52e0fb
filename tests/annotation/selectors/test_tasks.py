"""The task bundle: what the create and validate pages read, from a cache of rows that every
write to those rows forgets."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from annotation.campaigns.actors import Actor
from annotation.selectors.tasks import bundle_for_actor, round_for_actor, task_bundle
from core.errors import NotFound, PermissionDenied
from models_hub import calls as hub_calls
from models_hub import services as hub_services
from models_hub.models import ModelStatus, RegisteredModel
from tasks import services as task_services
from tasks.models import Round
from tasks.permissions import is_task_owner
from tests.factories import CampaignWorkerFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()


def _model(task, owner, name="m", **fields) -> RegisteredModel:
    fields.setdefault("status", ModelStatus.HEALTHY)
    return RegisteredModel.objects.create(
        task=task, owner=owner, name=name, endpoint_url="http://127.0.0.1:9/", **fields
    )


def test_a_bundle_holds_the_task_its_open_rounds_and_their_loop_models(django_assert_num_queries):
    owner = UserFactory()
    task = TaskFactory(owners=[owner])
    Round.objects.create(task=task, number=2)
    Round.objects.create(task=task, number=3, is_open=False)
    healthy, sick = _model(task, owner, "a"), _model(task, owner, "b", status="unhealthy")
    round_one = task.rounds.get(number=1)
    hub_services.model_set_in_loop(round_one, [healthy, sick], owner)

    bundle = task_bundle(task.code)
    assert [round_.number for round_ in bundle.open_rounds] == [2, 1]
    assert bundle.latest_round.number == 2
    assert bundle.loop_models[round_one.pk] == (healthy,)  # an unhealthy model is not asked
    assert bundle.pick_model(round_one) == healthy
    assert bundle.pick_model(bundle.latest_round) is None
    assert bundle.config == task.config and bundle.task.owner_ids == {owner.pk}
    assert bundle.open_round(round_one.pk).task is bundle.task
    with django_assert_num_queries(0):  # from the cache
        again = task_bundle(task.code)
        assert is_task_owner(owner, again.task)
        assert not is_task_owner(UserFactory.build(pk=10**9), again.task)
    assert task_bundle("no-such-task") is None


@pytest.mark.parametrize(
    "change",
    [
        "task saved",
        "owner added",
        "round opened",
        "round closed",
        "loop set",
        "model saved",
        "model health changed",
        "config changed",
    ],
)
def test_every_write_to_its_rows_forgets_the_bundle(change, model_server_factory):
    from models_hub.demo.sentiment import SentimentHandler

    owner = UserFactory()
    task = TaskFactory(owners=[owner], config_name="sentiment")
    round_one = task.rounds.get()
    server = model_server_factory(SentimentHandler)
    model = RegisteredModel.objects.create(
        task=task, owner=owner, name="m", endpoint_url=server.url, status=ModelStatus.HEALTHY
    )
    before = task_bundle(task.code)
    if change == "task saved":
        task.name = "Renamed"
        task.save()
        assert task_bundle(task.code).task.name == "Renamed"
    elif change == "owner added":
        other = UserFactory()
        task.owners.add(other)
        assert other.pk in task_bundle(task.code).task.owner_ids
    elif change == "round opened":
        task_services.round_open(task)
        assert task_bundle(task.code).latest_round.number == 2
    elif change == "round closed":
        round_one.is_open = False
        round_one.save()
        assert task_bundle(task.code).open_rounds == ()
    elif change == "loop set":
        hub_services.model_set_in_loop(round_one, [model], owner)
        assert task_bundle(task.code).loop_models[round_one.pk] == (model,)
    elif change == "model saved":
        hub_services.model_set_in_loop(round_one, [model], owner)
        task_bundle(task.code)
        model.status = ModelStatus.DISABLED
        model.save()
        assert task_bundle(task.code).loop_models[round_one.pk] == ()
    elif change == "model health changed":
        hub_services.model_set_in_loop(round_one, [model], owner)
        RegisteredModel.objects.filter(pk=model.pk).update(status=ModelStatus.UNKNOWN)
        cache.clear()
        assert task_bundle(task.code).loop_models[round_one.pk] == (model,)
        server.stop()  # the health check finds it down
        hub_calls.model_record_health(model.pk)
        assert task_bundle(task.code).loop_models[round_one.pk] == ()
    elif change == "config changed":
        text = task.current_config.yaml_text.replace("\n", "\n\n", 1)
        task_services.task_update_config(task, text, user=owner)
        assert task_bundle(task.code).version.yaml_text == text != before.version.yaml_text


def _outcome(code, actor):
    try:
        bundle = bundle_for_actor(code, actor)
    except (NotFound, PermissionDenied) as error:
        return type(error).__name__
    round_ = round_for_actor(bundle, actor)
    return bundle.task.code, round_ and round_.number


def test_who_may_work_on_which_task():
    owner, stranger = UserFactory(), UserFactory()
    plain = TaskFactory(owners=[owner])
    crowd = Actor(campaign_worker=CampaignWorkerFactory(campaign__task=plain))  # round 1
    Round.objects.create(task=plain, number=2)
    closed = TaskFactory(owners=[owner])
    for round_ in closed.rounds.all():
        round_.is_open = False
        round_.save()
    hidden = TaskFactory(owners=[owner], hidden=True)
    inactive = TaskFactory(owners=[owner], active=False)
    assert _outcome(plain.code, Actor(user=stranger)) == (plain.code, 2)
    assert _outcome(plain.code, crowd) == (plain.code, 1)  # the campaign's round
    assert _outcome(closed.code, Actor(user=stranger)) == (closed.code, None)
    assert _outcome(hidden.code, Actor(user=stranger)) == "NotFound"
    assert _outcome(hidden.code, Actor(user=owner)) == (hidden.code, 1)
    assert _outcome(inactive.code, Actor(user=stranger)) == "PermissionDenied"
    assert _outcome(closed.code, crowd) == "PermissionDenied"  # another task's campaign
    assert _outcome("no-such-task", Actor(user=owner)) == "NotFound"
    assert _outcome(plain.code, None) == "PermissionDenied"
