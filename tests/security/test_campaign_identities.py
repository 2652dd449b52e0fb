"""Who may act as a campaign's worker id (``annotation.campaigns.identities``).

A worker id belongs to the first browser session that opens the campaign link with it;
another browser with the same id is refused until an owner releases it. A campaign may also
require signed worker links. Each test plays browsers with separate clients (sessions).
"""

from __future__ import annotations

import threading

import pytest
from django.db import close_old_connections, connection
from django.test import Client
from django.urls import reverse

from annotation.campaigns import identities, links
from annotation.campaigns import services as campaigns
from annotation.campaigns.actors import SESSION_WORKER_KEY
from annotation.models import CampaignWorker
from tests.factories import CampaignFactory, CampaignWorkerFactory, TaskFactory, UserFactory
from tests.security.world import ROLES, build_world, role_client

IN_USE = "is already in use in another browser"


@pytest.fixture
def owner(db):
    return UserFactory(username="crowd-owner", is_staff=True)


@pytest.fixture
def campaign(owner):
    task = TaskFactory(code="crowd", owners=[owner])
    return CampaignFactory(task=task, quota=5, created_by=owner)


def enter(client, campaign, external_id="PID1", **query):
    path = links.campaign_link_path(campaign).split("?")[0]
    return client.get(path, {campaign.worker_id_param: external_id, **query})


def create_page(client, campaign):
    return client.get(reverse("annotation:create", args=[campaign.task.code]))


def release(client, campaign, external_id="PID1"):
    return client.post(
        reverse("annotation:campaign_release", args=[campaign.task.code, campaign.pk]),
        {"external_id": external_id},
    )


def bound(campaign, external_id="PID1") -> bool:
    return bool(CampaignWorker.objects.get(campaign=campaign, external_id=external_id).binding_hash)


# -- binding ----------------------------------------------------------------------------------


def test_a_second_browser_with_the_same_worker_id_is_refused(campaign):
    first, second = Client(), Client()
    assert enter(first, campaign).status_code == 302
    refused = enter(second, campaign)
    assert refused.status_code == 403
    page = refused.content.decode()
    assert "This worker id is in use in another browser" in page
    assert IN_USE in page and "owner can release" in page
    assert SESSION_WORKER_KEY not in second.session
    assert create_page(second, campaign).status_code == 302  # nobody: sign in
    assert CampaignWorker.objects.filter(campaign=campaign).count() == 1


def test_the_same_browser_keeps_working_across_requests_and_new_session_keys(campaign):
    browser = Client()
    assert enter(browser, campaign).status_code == 302
    first_key = browser.session.session_key
    assert create_page(browser, campaign).status_code == 200
    # Opening the link again rotates the session key; the binding token goes along.
    assert enter(browser, campaign).status_code == 302
    assert browser.session.session_key != first_key
    assert create_page(browser, campaign).status_code == 200
    worker = CampaignWorker.objects.get(campaign=campaign)
    assert worker.bound_at is not None and worker.last_seen_at is not None


def test_other_ids_and_other_campaigns_are_independent(campaign):
    first, second = Client(), Client()
    other = CampaignFactory(task=campaign.task)
    assert enter(first, campaign, "PID1").status_code == 302
    assert enter(second, campaign, "PID2").status_code == 302
    # The same platform id in another campaign is another worker.
    assert enter(second, other, "PID1").status_code == 302
    assert enter(second, campaign, "PID1").status_code == 403


def test_the_worker_row_keeps_a_hash_not_the_token(campaign):
    browser = Client()
    enter(browser, campaign)
    token = browser.session[identities.SESSION_BINDING_KEY]
    worker = CampaignWorker.objects.get(campaign=campaign)
    assert token not in worker.binding_hash
    assert worker.binding_hash == identities.binding_digest(token)


def test_release_frees_the_id_for_the_next_browser_only(campaign, owner):
    first, second, owner_client = Client(), Client(), Client()
    owner_client.force_login(owner)
    enter(first, campaign)
    assert enter(second, campaign).status_code == 403

    response = release(owner_client, campaign)
    assert response.status_code == 302
    assert not bound(campaign)
    # The released browser no longer acts as the worker, and says why.
    lost = create_page(first, campaign)
    assert lost.status_code == 403
    assert "no longer works as your worker id" in lost.content.decode()

    assert enter(second, campaign).status_code == 302  # the next browser binds it anew
    assert create_page(second, campaign).status_code == 200
    assert enter(first, campaign).status_code == 403
    assert CampaignWorker.objects.filter(campaign=campaign).count() == 1


def test_releasing_an_unbound_or_unknown_id(campaign, owner):
    CampaignWorkerFactory(campaign=campaign, external_id="FREE")
    owner_client = Client()
    owner_client.force_login(owner)
    assert release(owner_client, campaign, "FREE").status_code == 302
    assert release(owner_client, campaign, "NOBODY").status_code == 404


def test_a_worker_from_before_binding_existed_binds_on_its_next_visit(campaign):
    CampaignWorkerFactory(campaign=campaign, external_id="PID1")  # no binding yet
    first, second = Client(), Client()
    assert enter(first, campaign).status_code == 302
    assert enter(second, campaign).status_code == 403


# -- concurrency ------------------------------------------------------------------------------


def _race(campaign, external_id: str, browsers: int = 2) -> list:
    """Enter with ``external_id`` from several sessions at once; return each outcome."""
    barrier = threading.Barrier(browsers)
    outcomes: list = [None] * browsers

    def visit(index: int) -> None:
        try:
            barrier.wait()
            worker = campaigns.campaign_worker_enter(
                campaign, external_id, binding_token=identities.binding_token_new()
            )
            outcomes[index] = ("bound", worker.pk)
        except identities.WorkerIdInUse:
            outcomes[index] = ("refused", None)
        finally:
            connection.close()

    threads = [threading.Thread(target=visit, args=(index,)) for index in range(browsers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    close_old_connections()
    return outcomes


@pytest.mark.django_db(transaction=True)
def test_concurrent_first_visits_bind_the_id_once():
    campaign = CampaignFactory(quota=5)
    for attempt in range(4):
        outcomes = _race(campaign, f"RACE{attempt}", browsers=3)
        assert sorted(kind for kind, _ in outcomes) == ["bound", "refused", "refused"], outcomes
    assert CampaignWorker.objects.filter(campaign=campaign).count() == 4


@pytest.mark.django_db(transaction=True)
def test_concurrent_visits_after_a_release_bind_the_id_once():
    campaign = CampaignFactory(quota=5)
    CampaignWorkerFactory(campaign=campaign, external_id="FREED")
    outcomes = _race(campaign, "FREED", browsers=3)
    assert sorted(kind for kind, _ in outcomes) == ["bound", "refused", "refused"], outcomes


# -- signed worker links ----------------------------------------------------------------------


@pytest.fixture
def signed_campaign(campaign):
    identities.campaign_set_signed_links(campaign, True)
    return campaign


def test_a_signed_campaign_refuses_unsigned_links(signed_campaign):
    response = enter(Client(), signed_campaign)
    assert response.status_code == 403
    page = response.content.decode()
    assert "needs your personal link" in page and identities.WORKER_SIGNATURE_PARAM in page
    assert not CampaignWorker.objects.exists()


@pytest.mark.parametrize(
    "tamper",
    ["flip-a-character", "signature-of-another-id", "signature-of-another-campaign", "empty"],
)
def test_a_signed_campaign_refuses_tampered_links(signed_campaign, tamper):
    signature = identities.campaign_worker_signature(signed_campaign, "PID1")
    if tamper == "flip-a-character":
        signature = ("A" if signature[0] != "A" else "B") + signature[1:]
    elif tamper == "signature-of-another-id":
        signature = identities.campaign_worker_signature(signed_campaign, "PID2")
    elif tamper == "signature-of-another-campaign":
        other = CampaignFactory(task=signed_campaign.task, signed_worker_links=True)
        signature = identities.campaign_worker_signature(other, "PID1")
    else:
        signature = ""
    response = enter(Client(), signed_campaign, "PID1", worker_sig=signature)
    assert response.status_code == 403
    assert "personal link" in response.content.decode() or "not made for" in (
        response.content.decode()
    )
    assert not CampaignWorker.objects.exists()


def test_the_link_of_an_id_with_a_separator_does_not_open_the_shorter_id(signed_campaign):
    # The link of "alice:smith" must not open the campaign as "alice" by moving the part
    # after the signer's separator into the signature.
    signature = identities.campaign_worker_signature(signed_campaign, "alice:smith")
    forged = f"smith:{signature}"
    response = enter(Client(), signed_campaign, "alice", worker_sig=forged)
    assert response.status_code == 403
    assert "not made for" in response.content.decode()
    assert not CampaignWorker.objects.exists()
    # The genuine link still enters as "alice:smith".
    assert enter(Client(), signed_campaign, "alice:smith", worker_sig=signature).status_code == 302
    assert CampaignWorker.objects.get().external_id == "alice:smith"


def test_a_valid_signed_link_enters_and_still_binds(signed_campaign):
    link = identities.campaign_worker_link_path(signed_campaign, "PID1")
    assert f"{identities.WORKER_SIGNATURE_PARAM}=" in link
    first, second = Client(), Client()
    assert first.get(link).status_code == 302
    assert create_page(first, signed_campaign).status_code == 200
    refused = second.get(link)  # the same personal link in another browser
    assert refused.status_code == 403
    assert IN_USE in refused.content.decode()


def test_owner_generates_personal_links_as_a_csv(signed_campaign, owner):
    owner_client = Client()
    owner_client.force_login(owner)
    url = reverse(
        "annotation:campaign_links_csv", args=[signed_campaign.task.code, signed_campaign.pk]
    )
    response = owner_client.post(url, {"worker_ids": "PID1\nPID2, PID3\nPID1"})
    assert response.status_code == 200
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert lines[0] == "worker_id,link"
    rows = [line.split(",", 1) for line in lines[1:]]
    assert [worker_id for worker_id, _ in rows] == ["PID1", "PID2", "PID3"]
    for worker_id, link in rows:
        assert link.startswith("http://testserver/c/")
        assert Client().get(link).status_code == 302, worker_id
    bad = owner_client.post(url, {"worker_ids": "fine\nnot fine!\n"})
    assert bad.status_code == 400
    assert "line 2: campaign.bad_worker_id" in bad.content.decode()


def test_turning_signed_links_off_lets_the_open_link_in_again(signed_campaign, owner):
    owner_client = Client()
    owner_client.force_login(owner)
    url = reverse(
        "annotation:campaign_signed_links", args=[signed_campaign.task.code, signed_campaign.pk]
    )
    assert enter(Client(), signed_campaign).status_code == 403
    assert owner_client.post(url).status_code == 302
    signed_campaign.refresh_from_db()
    assert not signed_campaign.signed_worker_links
    assert enter(Client(), signed_campaign).status_code == 302


# -- who may release --------------------------------------------------------------------------

# Each role posts a release of the campaign role's worker id: (status, released?).
RELEASE_MATRIX = {
    "anonymous": (403, False),
    "campaign": (403, False),
    "worker": (403, False),
    "other_owner": (403, False),
    "staff": (403, False),
    "owner": ("302", True),
    "superuser": ("302", True),
}


@pytest.fixture
def world(db):
    return build_world(with_datasets=False)


@pytest.mark.parametrize("role", ROLES)
def test_only_the_campaigns_owners_release_a_worker_id(world, role):
    crowd = role_client(world, "campaign")
    worker = world.campaign_worker
    client = crowd if role == "campaign" else role_client(world, role)
    response = release(client, world.campaign, worker.external_id)
    status, released = RELEASE_MATRIX[role]
    observed = "302" if response.status_code == 302 else response.status_code
    worker.refresh_from_db()
    assert (observed, not worker.binding_hash) == (status, released)
    assert (create_page(crowd, world.campaign).status_code == 200) == (not released)


def test_an_owner_cannot_release_through_another_tasks_campaign(world):
    """The other owner names their own task with this campaign's id: not found."""
    role_client(world, "campaign")
    client = role_client(world, "other_owner")
    url = reverse("annotation:campaign_release", args=[world.other_task.code, world.campaign.pk])
    response = client.post(url, {"external_id": world.campaign_worker.external_id})
    assert response.status_code == 404
    world.campaign_worker.refresh_from_db()
    assert world.campaign_worker.binding_hash


@pytest.mark.parametrize("role", ["other_owner", "owner", "superuser"])
def test_the_admin_release_action_reaches_only_owned_workers(world, role):
    role_client(world, "campaign")
    worker = world.campaign_worker
    client = role_client(world, role)
    client.post(
        reverse("admin:annotation_campaignworker_changelist"),
        {"action": "release", "_selected_action": [worker.pk]},
    )
    worker.refresh_from_db()
    assert bool(worker.binding_hash) == (role == "other_owner")


def test_owner_page_shows_workers_with_first_and_last_seen(world):
    role_client(world, "campaign")
    client = role_client(world, "owner")
    page = client.get(
        reverse("annotation:campaign_detail", args=[world.task.code, world.campaign.pk])
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert world.campaign_worker.external_id in html
    assert "Last seen" in html and "First seen" in html and ">Release<" in html
    worker = page.context["workers"][0]
    assert worker.last_seen_at is not None


def test_a_refused_browser_keeps_no_binding_token(campaign):
    enter(Client(), campaign)
    refused = Client()
    assert enter(refused, campaign).status_code == 403
    assert identities.SESSION_BINDING_KEY not in refused.session
