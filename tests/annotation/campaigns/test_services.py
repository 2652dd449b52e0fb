"""Crowd campaigns: signed links, workers without accounts, quota, time, the bonus CSV."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from annotation.campaigns import identities, links
from annotation.campaigns import services as campaigns
from annotation.campaigns.actors import SESSION_CAMPAIGN_KEY, SESSION_WORKER_KEY, Actor
from annotation.models import Campaign, CampaignWorker, Example, WorkerStats
from core.errors import ServiceError
from tasks import services as task_services
from tests.annotation.conftest import flush_counters
from tests.factories import (
    CampaignFactory,
    CampaignWorkerFactory,
    ExampleFactory,
    TaskFactory,
    ValidationFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(task, owner):
    return CampaignFactory(task=task, quota=2, completion_code="C0MPLETE", created_by=owner)


def enter(client, campaign, external_id="PID1", param=None):
    path = links.campaign_link_path(campaign)
    assert path.endswith(f"?{campaign.worker_id_param}=")
    if external_id is None:
        return client.get(path.split("?")[0])
    return client.get(path.split("?")[0], {param or campaign.worker_id_param: external_id})


def work(worker, count, **kwargs):
    task = worker.campaign.task
    return [
        ExampleFactory(
            task=task, round=worker.campaign.round, user=None, campaign_worker=worker, **kwargs
        )
        for _ in range(count)
    ]


# -- creation -------------------------------------------------------------------------------


def test_campaign_create_reports_every_problem_with_a_code(task, owner):
    other_round = TaskFactory().rounds.get()
    with pytest.raises(ServiceError) as caught:
        campaigns.campaign_create(
            task=task,
            round=other_round,
            name="x",
            completion_code=" ",
            quota=0,
            worker_id_param="bad param!",
            kind="nope",
        )
    codes = {problem["code"] for problem in caught.value.details["errors"]}
    assert codes == {
        "campaign.round_of_other_task",
        "campaign.no_completion_code",
        "campaign.bad_quota",
        "campaign.bad_param_name",
        "campaign.bad_kind",
    }
    created = campaigns.campaign_create(
        task=task, round=task.rounds.get(), name="", completion_code="ABC", created_by=owner
    )
    assert created.name == "sentiment round 1"
    assert created.quota == 10 and created.worker_id_param == "PROLIFIC_PID"


def test_owner_page_lists_links_and_creates_campaigns(client, task, owner, campaign):
    client.force_login(owner)
    url = reverse("annotation:campaigns", args=[task.code])
    page = client.get(url)
    assert page.status_code == 200
    assert links.campaign_signed_token(campaign) in page.content.decode()
    response = client.post(
        url,
        {
            "name": "Pilot",
            "round": 1,
            "kind": "validate",
            "quota": 5,
            "worker_id_param": "workerId",
            "completion_code": "XYZ",
        },
    )
    assert response.status_code == 302
    created = Campaign.objects.get(name="Pilot")
    assert (created.kind, created.quota, created.worker_id_param, created.created_by) == (
        "validate",
        5,
        "workerId",
        owner,
    )
    bad = client.post(
        url,
        {
            "round": 1,
            "kind": "create",
            "quota": 5,
            "worker_id_param": "a b",
            "completion_code": "Z",
        },
    )
    assert bad.status_code == 400
    assert "campaign.bad_param_name" in bad.content.decode()
    client.post(reverse("annotation:campaign_toggle", args=[task.code, campaign.pk]))
    campaign.refresh_from_db()
    assert not campaign.is_active


def test_owner_pages_are_closed_to_other_users(client, task, user, campaign):
    urls = [
        reverse("annotation:campaigns", args=[task.code]),
        reverse("annotation:campaign_csv", args=[task.code, campaign.pk]),
    ]
    for url in urls:
        assert client.get(url).status_code == 403
    client.force_login(user)
    for url in urls:
        assert client.get(url).status_code == 403
    assert (
        client.post(
            reverse("annotation:campaign_toggle", args=[task.code, campaign.pk])
        ).status_code
        == 403
    )


def test_csv_of_another_tasks_campaign_is_not_found(client, owner, task):
    other = CampaignFactory()
    client.force_login(owner)
    url = reverse("annotation:campaign_csv", args=[task.code, other.pk])
    assert client.get(url).status_code == 404


# -- the link -------------------------------------------------------------------------------


def test_entering_identifies_the_worker_in_a_fresh_session(client, campaign):
    session = client.session
    session["earlier"] = True
    session.save()
    old_key = session.session_key
    response = enter(client, campaign, "5f3a9c_PID")
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:create", args=[campaign.task.code])
    worker = CampaignWorker.objects.get(campaign=campaign)
    assert worker.external_id == "5f3a9c_PID"
    assert client.session[SESSION_WORKER_KEY] == worker.pk
    assert client.session[SESSION_CAMPAIGN_KEY] == campaign.pk
    assert client.session.session_key != old_key
    # The same id again is the same worker.
    enter(client, campaign, "5f3a9c_PID")
    assert CampaignWorker.objects.filter(campaign=campaign).count() == 1


def test_validate_campaign_sends_workers_to_the_validate_page(client, task):
    campaign = CampaignFactory(task=task, kind="validate")
    response = enter(client, campaign)
    assert response["Location"] == reverse("annotation:validate", args=[task.code])


@pytest.mark.parametrize(
    "signed",
    [
        "not-a-token",
        "TOKEN",  # the raw token, unsigned
        "TOKEN:forged-signature",
    ],
)
def test_forged_links_are_refused(client, campaign, signed):
    signed = signed.replace("TOKEN", campaign.token)
    response = client.get(
        reverse("annotation:campaign_enter", args=[signed]), {"PROLIFIC_PID": "p"}
    )
    assert response.status_code == 404
    assert not CampaignWorker.objects.exists()
    assert SESSION_WORKER_KEY not in client.session


def test_closed_campaign_and_inactive_task_are_refused(client, campaign):
    campaign.is_active = False
    campaign.save()
    assert enter(client, campaign).status_code == 404
    campaign.is_active = True
    campaign.save()
    campaign.task.active = False
    campaign.task.save()
    assert enter(client, campaign).status_code == 404


@pytest.mark.parametrize("external_id", [None, "", "has space", "<script>", "x" * 129, "é"])
def test_bad_or_missing_worker_ids_are_refused(client, campaign, external_id):
    response = enter(client, campaign, external_id)
    assert response.status_code == 400
    assert "PROLIFIC_PID" in response.content.decode()
    assert not CampaignWorker.objects.exists()


def test_the_id_must_come_in_the_campaigns_parameter(client, campaign):
    assert enter(client, campaign, "PID1", param="workerId").status_code == 400


# -- quota and completion -------------------------------------------------------------------


def test_completion_code_only_after_the_quota(client, campaign):
    enter(client, campaign, "PID1")
    worker = CampaignWorker.objects.get()
    done_url = reverse("annotation:campaign_done")
    page = client.get(done_url)
    assert page.status_code == 200
    assert "C0MPLETE" not in page.content.decode()
    assert not campaigns.campaign_quota_reached(Actor(campaign_worker=worker))

    work(worker, 1)
    work(worker, 1, retracted=True)  # a retracted example does not count
    assert "C0MPLETE" not in client.get(done_url).content.decode()
    work(worker, 1)
    assert campaigns.campaign_quota_reached(Actor(campaign_worker=worker))
    page = client.get(done_url)
    assert "C0MPLETE" in page.content.decode()
    worker.refresh_from_db()
    assert worker.completed_at is not None
    # Coming back through the link after the quota goes straight to the code.
    assert enter(client, campaign, "PID1")["Location"] == done_url


def test_validation_campaign_quota_counts_validations(campaign):
    campaign.kind = "validate"
    campaign.save()
    worker = CampaignWorkerFactory(campaign=campaign)
    actor = Actor(campaign_worker=worker)
    work(worker, 3)  # examples do not count in a validation campaign
    assert not campaigns.campaign_quota_reached(actor)
    for example in ExampleFactory.create_batch(2, task=campaign.task):
        ValidationFactory(example=example, user=None, campaign_worker=worker)
    assert campaigns.campaign_quota_reached(actor)


def test_users_never_have_a_quota(user):
    assert not campaigns.campaign_quota_reached(Actor(user=user))
    assert not campaigns.campaign_quota_reached(None)


def test_a_worker_cannot_see_another_workers_progress_or_code(client, campaign):
    done_worker = CampaignWorkerFactory(campaign=campaign, external_id="DONE")
    work(done_worker, 2)
    enter(client, campaign, "FRESH")
    page = client.get(reverse("annotation:campaign_done")).content.decode()
    assert "C0MPLETE" not in page
    assert "done 0 of 2" in page


def test_done_page_needs_a_campaign_session(client, user):
    assert client.get(reverse("annotation:campaign_done")).status_code == 403
    client.force_login(user)
    assert client.get(reverse("annotation:campaign_done")).status_code == 403


def test_a_campaign_session_opens_no_owner_page(client, campaign, task):
    enter(client, campaign)
    for url in [
        reverse("annotation:campaigns", args=[task.code]),
        reverse("annotation:campaign_csv", args=[task.code, campaign.pk]),
        reverse("annotation:export", args=[task.code]),
    ]:
        assert client.get(url).status_code == 403
    stats_page = client.get(reverse("annotation:stats", args=[task.code]))
    assert stats_page.status_code == 200
    assert stats_page.context["workers"] is None


def test_a_second_campaign_link_replaces_the_identity(client, campaign, task):
    other = CampaignFactory(task=task)
    enter(client, campaign, "PID1")
    enter(client, other, "PID1")
    worker = CampaignWorker.objects.get(campaign=other)
    assert client.session[SESSION_WORKER_KEY] == worker.pk
    assert client.session[SESSION_CAMPAIGN_KEY] == other.pk


# -- time -----------------------------------------------------------------------------------


def test_record_time_fills_a_missing_time_once(
    campaign, redis_connection, django_capture_on_commit_callbacks
):
    worker = CampaignWorkerFactory(campaign=campaign)
    actor = Actor(campaign_worker=worker)
    (example,) = work(worker, 1)
    with django_capture_on_commit_callbacks(execute=True):
        campaigns.campaign_record_time(actor, 12_345)
    example.refresh_from_db()
    assert example.time_spent_ms == 12_345
    flush_counters()
    stats_row = WorkerStats.objects.get(campaign_worker=worker)
    assert stats_row.time_spent_ms == 12_345
    with django_capture_on_commit_callbacks(execute=True):
        campaigns.campaign_record_time(actor, 999)  # already recorded: not counted twice
    flush_counters()
    example.refresh_from_db()
    stats_row.refresh_from_db()
    assert (example.time_spent_ms, stats_row.time_spent_ms) == (12_345, 12_345)


def test_record_time_is_capped_and_ignores_nonsense(campaign):
    worker = CampaignWorkerFactory(campaign=campaign)
    actor = Actor(campaign_worker=worker)
    (example,) = work(worker, 1)
    campaigns.campaign_record_time(actor, -5)
    campaigns.campaign_record_time(actor, 0)
    example.refresh_from_db()
    assert example.time_spent_ms is None
    campaigns.campaign_record_time(actor, 10**9)
    example.refresh_from_db()
    assert example.time_spent_ms == campaigns.MAX_RECORDED_MS
    campaigns.campaign_record_time(None, 100)  # no actor: nothing happens


# -- the bonus CSV ----------------------------------------------------------------------------


def read_csv(response) -> list[dict]:
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_bonus_csv_counts_from_the_data(client, owner, campaign, task):
    alice = CampaignWorkerFactory(campaign=campaign, external_id="ALICE")
    work(alice, 2, time_spent_ms=30_000, validation_state="correct", model_wrong=True)
    work(alice, 1, time_spent_ms=10_000, validation_state="incorrect", model_wrong=True)
    work(alice, 1, time_spent_ms=5_000, retracted=True, validation_state="correct")
    ValidationFactory(
        example=ExampleFactory(task=task), user=None, campaign_worker=alice, time_spent_ms=2_500
    )
    CampaignWorkerFactory(campaign=campaign, external_id="=HYPERLINK(1)")
    CampaignWorkerFactory(external_id="OTHER-CAMPAIGN")
    client.force_login(owner)
    response = client.get(reverse("annotation:campaign_csv", args=[task.code, campaign.pk]))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = read_csv(response)
    assert [row["worker_id"] for row in rows] == ["ALICE", "'=HYPERLINK(1)"]
    alice_row = rows[0]
    assert alice_row["examples"] == "3"
    assert alice_row["verified_fooling_examples"] == "2"
    assert alice_row["validations"] == "1"
    # The retracted example's time was spent too: 30 + 30 + 10 + 5 + 2.5 seconds.
    assert alice_row["time_spent_seconds"] == "77.5"
    assert rows[1]["examples"] == "0"


def test_admin_csv_action_and_changelist(client, owner, campaign):
    CampaignWorkerFactory(campaign=campaign, external_id="W1")
    client.force_login(owner)
    changelist = reverse("admin:annotation_campaign_changelist")
    assert client.get(changelist).status_code == 200
    response = client.post(
        changelist, {"action": "download_csv", "_selected_action": [campaign.pk]}
    )
    assert response.status_code == 200
    assert [row["worker_id"] for row in read_csv(response)] == ["W1"]
    change = client.get(reverse("admin:annotation_campaign_change", args=[campaign.pk]))
    assert links.campaign_signed_token(campaign) in change.content.decode()
    round_two = task_services.round_open(campaign.task)
    assert Example.objects.count() == 0 and round_two.number == 2


# -- identities: the owner's pages ------------------------------------------------------------


def test_a_campaign_can_be_created_with_signed_worker_links(client, task, owner):
    client.force_login(owner)
    url = reverse("annotation:campaigns", args=[task.code])
    data = {
        "name": "Signed",
        "round": 1,
        "kind": "create",
        "quota": 3,
        "worker_id_param": "workerId",
        "completion_code": "XYZ",
        "signed_worker_links": "on",
    }
    assert client.post(url, data).status_code == 302
    created = Campaign.objects.get(name="Signed")
    assert created.signed_worker_links
    page = client.get(url).content.decode()
    detail = reverse("annotation:campaign_detail", args=[task.code, created.pk])
    assert f'href="{detail}">Signed worker links<' in page
    assert links.campaign_signed_token(created) not in page


def test_worker_ids_parse_reports_every_bad_id_with_its_line():
    assert identities.worker_ids_parse("a1\nb2, c3  a1\n\n") == ["a1", "b2", "c3"]
    with pytest.raises(ServiceError) as caught:
        identities.worker_ids_parse("ok\nnot ok!\n<x>")
    assert [(error["line"], error["code"]) for error in caught.value.details["errors"]] == [
        (2, "campaign.bad_worker_id"),
        (3, "campaign.bad_worker_id"),
    ]
    with pytest.raises(ServiceError) as caught:
        identities.worker_ids_parse("  \n")
    assert caught.value.details["errors"][0]["code"] == "campaign.no_worker_ids"


def test_the_owner_page_finds_a_worker_by_id(client, task, owner, campaign):
    CampaignWorkerFactory(campaign=campaign, external_id="ALICE-1")
    CampaignWorkerFactory(campaign=campaign, external_id="BOB-2")
    client.force_login(owner)
    url = reverse("annotation:campaign_detail", args=[task.code, campaign.pk])
    page = client.get(url, {"q": "alice"})
    assert [worker.external_id for worker in page.context["workers"]] == ["ALICE-1"]
    assert (
        client.get(reverse("annotation:campaign_detail", args=[task.code, 999999])).status_code
        == 404
    )


def test_the_admin_lists_campaign_workers_and_their_binding(client, owner, campaign):
    enter(client, campaign, "W1")
    admin_client = type(client)()
    admin_client.force_login(owner)
    page = admin_client.get(reverse("admin:annotation_campaignworker_changelist"))
    assert page.status_code == 200 and "W1" in page.content.decode()
    worker = CampaignWorker.objects.get(external_id="W1")
    change = admin_client.get(reverse("admin:annotation_campaignworker_change", args=[worker.pk]))
    assert change.status_code == 200
    assert worker.binding_hash not in change.content.decode()
