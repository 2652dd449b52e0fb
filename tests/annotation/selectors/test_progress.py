"""The progress line's selector: today's examples of one worker on one task, how many fooled
the model, a campaign worker's quota; one bounded query."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.campaigns.actors import Actor
from annotation.models import Example
from annotation.selectors import progress
from annotation.selectors.progress import start_of_today, worker_progress
from tests.factories import (
    CampaignFactory,
    CampaignWorkerFactory,
    ExampleFactory,
    TaskFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def task():
    return TaskFactory(code="sentiment")


def written(task, count: int, *, fooled: int = 0, **fields) -> list[Example]:
    return [
        ExampleFactory(task=task, model_wrong=index < fooled, **fields) for index in range(count)
    ]


def test_counts_todays_examples_and_the_fooling_ones(task, django_assert_num_queries):
    worker = UserFactory(username="writer")
    written(task, 3, fooled=2, user=worker)
    yesterday = written(task, 2, fooled=2, user=worker)
    Example.objects.filter(pk__in=[e.pk for e in yesterday]).update(
        created_at=start_of_today() - timedelta(minutes=1)
    )
    written(task, 1, fooled=1, user=worker, retracted=True)  # withdrawn: not counted
    written(task, 4, fooled=4, user=UserFactory(username="other"))  # someone else's
    written(TaskFactory(code="nli", config_name="nli"), 2, user=worker)  # another task
    with django_assert_num_queries(1):
        line = worker_progress(task, Actor(user=worker))
    assert (line.written_today, line.fooled_today, line.capped) == (3, 2, False)
    assert line.quota is None


def test_an_example_waiting_for_its_model_counts_as_written_not_fooled(task):
    worker = UserFactory(username="writer")
    ExampleFactory(task=task, user=worker, status="awaiting_model", model_wrong=None)
    line = worker_progress(task, Actor(user=worker))
    assert (line.written_today, line.fooled_today) == (1, 0)


def test_the_count_stops_at_the_cap(task, monkeypatch):
    monkeypatch.setattr(progress, "PROGRESS_CAP", 3)
    worker = UserFactory(username="writer")
    written(task, 5, fooled=5, user=worker)
    line = worker_progress(task, Actor(user=worker))
    assert (line.written_today, line.capped) == (3, True)


def test_a_campaign_worker_sees_the_quota(task, django_assert_num_queries):
    campaign = CampaignFactory(task=task, quota=10)
    member = CampaignWorkerFactory(campaign=campaign)
    written(task, 3, fooled=1, user=None, campaign_worker=member)
    old = written(task, 1, user=None, campaign_worker=member)
    Example.objects.filter(pk=old[0].pk).update(created_at=timezone.now() - timedelta(days=2))
    written(task, 1, user=None, campaign_worker=member, retracted=True)
    actor = Actor(campaign_worker=member)
    with django_assert_num_queries(1):
        line = worker_progress(task, actor)
    assert (line.written_today, line.fooled_today) == (3, 1)
    assert (line.done, line.quota, line.quota_left) == (4, 10, 6)


def test_a_validation_campaign_has_no_writing_quota(task):
    member = CampaignWorkerFactory(campaign=CampaignFactory(task=task, kind="validate"))
    line = worker_progress(task, Actor(campaign_worker=member))
    assert (line.written_today, line.quota, line.done) == (0, None, None)


def test_today_starts_at_midnight_in_the_site_time_zone(settings):
    settings.TIME_ZONE = "Europe/Paris"
    now = timezone.make_aware(
        timezone.datetime(2026, 3, 10, 0, 30), timezone.get_fixed_timezone(60)
    )
    start = start_of_today(now)
    assert timezone.localtime(start).hour == 0
    assert start <= now < start + timedelta(days=1)
