"""``task_and_round_for_actor``: one query on the hot path, the same answers as
``task_for_actor`` followed by ``round_for_actor`` in every case."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from annotation import selectors
from annotation.actors import Actor
from tasks.errors import NotFound, PermissionDenied
from tasks.models import Round
from tasks.permissions import is_task_owner
from tests.factories import CampaignWorkerFactory, ContextFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


def _two_steps(code, actor):
    task = selectors.task_for_actor(code, actor)
    return task, selectors.round_for_actor(task, actor)


def _outcome(lookup, code, actor):
    """What a lookup answers: the task, the round, whether the actor owns the task; or the
    error it raised."""
    try:
        task, round_ = lookup(code, actor)
    except (NotFound, PermissionDenied) as error:
        return type(error), str(error)
    owns = actor.user is not None and is_task_owner(actor.user, task)
    return (
        task.pk,
        task.current_config_id,
        round_ and (round_.pk, round_.number, round_.task_id),
        round_ is None or round_.task is task,
        owns,
    )


def _cases():
    owner, stranger = UserFactory(), UserFactory()
    plain = TaskFactory(owners=[owner])
    worker = CampaignWorkerFactory(campaign__task=plain)  # on round 1
    Round.objects.create(task=plain, number=2)  # the latest open round is number 2
    Round.objects.create(task=plain, number=3, is_open=False)
    closed = TaskFactory(owners=[owner])
    closed.rounds.update(is_open=False)
    hidden = TaskFactory(owners=[owner], hidden=True)
    inactive = TaskFactory(owners=[owner], active=False)
    people = {
        "owner": Actor(user=owner),
        "stranger": Actor(user=stranger),
        "campaign worker": Actor(campaign_worker=worker),
    }
    codes = [plain.code, closed.code, hidden.code, inactive.code, "no-such-task"]
    return people, codes


def test_one_lookup_answers_as_the_two_do_for_every_actor_and_task():
    people, codes = _cases()
    answers = {}
    for name, actor in people.items():
        for code in codes:
            combined = _outcome(selectors.task_and_round_for_actor, code, actor)
            assert combined == _outcome(_two_steps, code, actor), (name, code)
            answers[name, code] = combined
    plain, closed, hidden, inactive, missing = codes
    # The cases cover what they mean to: the latest open round, owning, no open round,
    # hidden and inactive tasks, no task, a campaign worker on its campaign's round.
    assert answers["owner", plain][2][1] == 2 and answers["owner", plain][4] is True
    assert answers["stranger", plain][2][1] == 2 and answers["stranger", plain][4] is False
    assert answers["owner", closed][2] is None
    assert answers["stranger", hidden][0] is NotFound
    assert answers["owner", hidden][4] is True
    assert answers["stranger", inactive][0] is PermissionDenied
    assert answers["owner", missing][0] is NotFound
    assert answers["campaign worker", plain][2][1] == 1
    assert answers["campaign worker", closed][0] is PermissionDenied
    with pytest.raises(PermissionDenied):
        selectors.task_and_round_for_actor(plain, None)
    anonymous = Actor(user=AnonymousUser())
    assert _outcome(selectors.task_and_round_for_actor, plain, anonymous) == _outcome(
        _two_steps, plain, anonymous
    )


def test_a_signed_in_user_with_an_open_round_takes_one_query(django_assert_num_queries):
    owner = UserFactory()
    task = TaskFactory(owners=[owner])
    actor = Actor(user=owner)
    with django_assert_num_queries(1):
        found, round_ = selectors.task_and_round_for_actor(task.code, actor)
        assert is_task_owner(owner, found)  # from the same row: no owners query
        assert (found.current_config.version, round_.number) == (1, 1)


def test_rows_read_for_one_user_and_task_serve_no_other():
    owner, stranger = UserFactory(), UserFactory()
    task = TaskFactory(owners=[owner])
    other = TaskFactory()
    context = ContextFactory(task=other)
    read = selectors.prefetch(str(owner.pk), task.code, with_round=True, context_id=str(context.pk))
    assert read.user == owner and read.task.pk == task.pk and read.round.number == 1
    # Another user, another task, a campaign worker: each reads for itself.
    assert selectors.task_for_actor(task.code, Actor(user=stranger), read).viewer_owns is False
    with pytest.raises(NotFound):
        selectors.task_for_actor(other.code + "x", Actor(user=owner), read)
    assert selectors.task_for_actor(other.code, Actor(user=owner), read).pk == other.pk
    worker = CampaignWorkerFactory(campaign__task=other)
    assert not read.serves(task.code, Actor(campaign_worker=worker))
    # A context read by its key belongs to the round only if it is the round's.
    assert selectors.context_get(read.round, str(context.pk), read) is None
    mine = ContextFactory(task=task)
    read = selectors.prefetch(owner.pk, task.code, with_round=True, context_id=str(mine.pk))
    assert selectors.context_get(read.round, str(mine.pk), read) == mine
    # Nothing for a user that does not exist, or a key that is not one.
    assert selectors.prefetch(10**9, task.code) is None
    assert selectors.prefetch("1 OR 1=1", task.code) is None


@pytest.mark.parametrize("path", ["create", "validate"])
def test_a_user_read_with_the_task_is_checked_as_django_checks_any(client, path):
    """The create and validate pages read the session's user with their task: Django still
    refuses a user whose password changed since the sign-in (the session's hash) or who was
    deactivated, and a signed-in user who may not see the task."""
    owner, worker = UserFactory(), UserFactory()
    task = TaskFactory(owners=[owner], hidden=True)
    ContextFactory(task=task)
    url = f"/tasks/{task.code}/{path}"
    client.force_login(owner)
    assert client.get(url).status_code == 200
    owner.set_password("changed elsewhere")
    owner.save()
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login")
    client.force_login(owner)
    assert client.get(url).status_code == 200
    type(owner).objects.filter(pk=owner.pk).update(is_active=False)
    assert client.get(url).status_code == 302
    client.force_login(worker)
    assert client.get(url).status_code == 404  # hidden from a user who does not own it
