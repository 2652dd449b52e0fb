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
from tests.factories import CampaignWorkerFactory, TaskFactory, UserFactory

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
