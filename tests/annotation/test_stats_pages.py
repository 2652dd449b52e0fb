"""Stats selectors and pages: round numbers, worker tables, the user leaderboard, agreement;
and cached == recomputed when the real annotation services drive the hooks."""

from __future__ import annotations

import random

import pytest
from django.urls import reverse

from annotation.agreement import category_counts, fleiss_kappa, krippendorff_alpha
from annotation.models import Example, ExampleStatus, RoundStats, WorkerStats
from annotation.stats import summaries as stats
from annotation.stats.buffer import counters_flush
from annotation.stats.recompute import stats_recompute
from core.errors import ServiceError
from tasks import services as task_services
from tasks.accounts import site_settings_get
from tests.annotation.conftest import snapshot
from tests.factories import (
    CampaignWorkerFactory,
    ContextFactory,
    ExampleFactory,
    UserFactory,
    ValidationFactory,
)

pytestmark = pytest.mark.django_db


def worker_row(task, user, **counters):
    return WorkerStats.objects.create(
        task=task, round=task.rounds.get(number=1), user=user, **counters
    )


def test_round_stats_rates(task):
    round_ = task.rounds.get()
    assert stats.round_stats(round_).model_error_rate is None
    RoundStats.objects.create(round=round_, collected=10, fooled=4, verified_fooled=3)
    summary = stats.round_stats(round_)
    assert summary.model_error_rate == pytest.approx(0.4)
    assert summary.verified_model_error_rate == pytest.approx(0.3)
    task_services.round_open(task)
    assert [s.number for s in stats.task_round_stats(task)] == [1, 2]
    assert stats.task_round_stats(task)[1].collected == 0


def test_worker_stats_sum_rounds_and_give_rates(task):
    user = UserFactory(username="writer")
    worker_row(task, user, examples=4, fooled=2, verified_fooled=1, rejected=1, retracted=1)
    round_two = task_services.round_open(task)
    WorkerStats.objects.create(task=task, round=round_two, user=user, examples=6, fooled=3)
    CampaignWorkerFactory(campaign__task=task, external_id="P1")
    (row,) = stats.worker_stats(task)
    assert (row.name, row.examples, row.fooled) == ("writer", 10, 5)
    assert row.fooled_rate == pytest.approx(0.5)
    assert row.verified_fooled_rate == pytest.approx(0.1)
    assert row.rejected_rate == pytest.approx(0.1)
    assert row.retracted_rate == pytest.approx(1 / 11)
    (row_two,) = stats.worker_stats(task, round_two)
    assert row_two.examples == 6


def test_user_leaderboard_ranks_users_and_pages(task):
    users = [UserFactory(username=f"w{n:02d}") for n in range(30)]
    for n, user in enumerate(users):
        worker_row(task, user, examples=30, fooled=n, verified_fooled=n // 2)
    campaign_worker = CampaignWorkerFactory(campaign__task=task)
    WorkerStats.objects.create(
        task=task, round=task.rounds.get(), campaign_worker=campaign_worker, verified_fooled=999
    )
    page = stats.user_leaderboard(task, page=1, per_page=25)
    names = [row.name for row in page.object_list]
    assert names[:3] == ["w29", "w28", "w27"]  # verified fooled, then fooled
    assert page.paginator.count == 30  # campaign workers are not on the public board
    assert len(stats.user_leaderboard(task, page=2).object_list) == 5
    assert stats.user_leaderboard(task, page="zzz").number == 1
    assert stats.user_leaderboard(task, page=99).number == 2


def test_round_agreement_matches_the_pure_functions(task, owner):
    round_ = task.rounds.get()
    labels = [
        ["correct", "correct", "correct"],
        ["correct", "incorrect", "correct"],
        ["incorrect", "incorrect"],
        ["flagged"],  # one rating: not pairable
    ]
    for unit in labels:
        example = ExampleFactory(task=task)
        for label in unit:
            ValidationFactory(example=example, label=label)
        ValidationFactory(example=example, user=owner, is_owner_verdict=True, label="flagged")
    retracted = ExampleFactory(task=task, retracted=True)
    ValidationFactory.create_batch(2, example=retracted, label="incorrect")
    agreement = stats.round_agreement(round_)
    units = labels[:3]
    assert (agreement.examples, agreement.validations) == (3, 8)
    assert agreement.fleiss_kappa == pytest.approx(
        fleiss_kappa(category_counts(units, ["correct", "incorrect", "flagged"]))
    )
    assert agreement.krippendorff_alpha == pytest.approx(krippendorff_alpha(units))
    empty = stats.round_agreement(task_services.round_open(task))
    assert (empty.examples, empty.fleiss_kappa, empty.krippendorff_alpha) == (0, None, None)


def test_round_by_number(task):
    assert stats.round_by_number(task, None) is None
    assert stats.round_by_number(task, " ") is None
    assert stats.round_by_number(task, "1").number == 1
    with pytest.raises(ServiceError) as caught:
        stats.round_by_number(task, "1e9")
    assert caught.value.code == "round.bad_number"
    with pytest.raises(ServiceError) as caught:
        stats.round_by_number(task, "7")
    assert caught.value.code == "round.missing"


# -- pages ----------------------------------------------------------------------------------


def test_stats_page_is_public_but_the_worker_table_is_for_owners(client, task, owner):
    user = UserFactory(username="secret-writer")
    worker_row(task, user, examples=3)
    RoundStats.objects.create(round=task.rounds.get(), collected=3, fooled=1)
    url = reverse("annotation:stats", args=[task.code])
    page = client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert "33.3%" in body  # MER of round 1
    assert "secret-writer" not in body
    assert page.context["workers"] is None
    client.force_login(owner)
    page = client.get(url, {"round": 1})
    assert "secret-writer" in page.content.decode()
    assert page.context["workers"].paginator.count == 1


@pytest.mark.parametrize(
    "name,query,status",
    [
        ("stats", {"round": "x"}, 400),
        ("stats", {"round": "5"}, 404),
        ("stats", {"page": "-3"}, 200),
        ("workers", {"round": "1; drop"}, 400),
        ("workers", {"page": "last"}, 200),
        ("workers", {"round": "2"}, 404),
    ],
)
def test_pages_answer_bad_parameters_without_a_500(client, task, owner, name, query, status):
    client.force_login(owner)
    assert client.get(reverse(f"annotation:{name}", args=[task.code]), query).status_code == status


def test_hidden_task_pages_are_not_found_for_others(client, task, user):
    task.hidden = True
    task.save(update_fields=["hidden"])
    client.force_login(user)
    for name in ("stats", "workers"):
        assert client.get(reverse(f"annotation:{name}", args=[task.code])).status_code == 404


def test_leaderboard_page_shows_usernames_and_has_bounded_queries(
    client, task, django_assert_max_num_queries
):
    for n in range(40):
        worker_row(task, UserFactory(username=f"player{n}"), examples=5, verified_fooled=n)
    url = reverse("annotation:workers", args=[task.code])
    site_settings_get()  # the navbar's sign-up switch, cached after any first page
    with django_assert_max_num_queries(8):
        page = client.get(url, {"round": 1, "page": 2})
    body = page.content.decode()
    assert "player14" in body and "player39" not in body
    with django_assert_max_num_queries(8):
        client.get(url)


def test_stats_page_queries_do_not_grow_with_workers(
    client, task, owner, django_assert_max_num_queries
):
    client.force_login(owner)
    for n in range(30):
        worker_row(task, UserFactory(), examples=n)
    with django_assert_max_num_queries(14):
        assert client.get(reverse("annotation:stats", args=[task.code])).status_code == 200


def test_stats_admin_is_read_only_with_a_recompute_action(client, task, owner):
    example = ExampleFactory(task=task)  # made without the hooks: nothing cached yet
    client.force_login(owner)
    RoundStats.objects.create(round=example.round, collected=42)
    changelist = reverse("admin:annotation_roundstats_changelist")
    assert client.get(changelist).status_code == 200
    stats_row = RoundStats.objects.get()
    assert client.get(reverse("admin:annotation_roundstats_add")).status_code == 403
    client.post(changelist, {"action": "recompute", "_selected_action": [stats_row.pk]})
    stats_row = RoundStats.objects.get(round=example.round)
    assert (stats_row.collected, stats_row.fooled) == (1, 1)
    assert WorkerStats.objects.get(user=example.user).examples == 1
    assert client.get(reverse("admin:annotation_workerstats_changelist")).status_code == 200


# -- the real services drive the hooks --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_services_keep_flushed_counters_equal_to_recomputed(task, owner, seed, redis_connection):
    """The real services buffer their counters after each commit; once flushed, the
    counters equal a recount."""
    from annotation.campaigns.actors import Actor
    from annotation.services import answers, validations
    from annotation.services import examples as example_services

    rng = random.Random(seed)
    round_ = task.rounds.get()
    contexts = [ContextFactory(task=task, round=round_) for _ in range(3)]
    actors = [Actor(user=UserFactory()) for _ in range(5)]
    actors += [Actor(campaign_worker=CampaignWorkerFactory(campaign__task=task)) for _ in range(2)]
    examples: list[Example] = []
    for _ in range(80):
        operation = rng.choice(
            ["submit", "submit", "answer", "validate", "validate", "review", "retract"]
        )
        try:
            if operation == "submit" or not examples:
                actor = rng.choice(actors)
                example = example_services.example_submit(
                    task=task,
                    round_=round_,
                    actor=actor,
                    context=rng.choice(contexts),
                    data={"statement": "A fine day, said nobody.", "label": "positive"},
                    goal_label="positive",
                    time_spent_ms=rng.choice([None, rng.randint(1, 60_000)]),
                )
                # Pretend a model is in the loop so that its answer can come later.
                Example.objects.filter(pk=example.pk).update(status=ExampleStatus.AWAITING_MODEL)
                examples.append((example, actor))
                continue
            example, writer = rng.choice(examples)
            if operation == "answer":
                label = rng.choice(["positive", "negative"])
                read = Example.objects.select_related("config_version").get(pk=example.pk)
                output = {"label": label, "prob": {label: 0.9}}
                answers.examples_record_model_answers([answers.ModelAnswer(read, output)])
            elif operation == "validate":
                validations.validation_submit(
                    example_id=example.pk,
                    actor=rng.choice(actors),
                    label=rng.choice(["correct", "correct", "incorrect", "flagged"]),
                    time_spent_ms=rng.choice([None, rng.randint(1, 9_000)]),
                )
            elif operation == "review":
                validations.owner_review_submit(
                    example_id=example.pk, user=owner, label=rng.choice(["correct", "incorrect"])
                )
            elif operation == "retract":
                example_services.example_retract(example, writer)
        except ServiceError:
            continue  # refused by a rule (own example, settled, duplicate...): no change
    made = Example.objects.filter(task=task)
    assert made.filter(model_wrong=True).exists(), "some verdicts were recorded"
    assert made.exclude(validation_state="pending").exists(), "some examples settled"
    assert made.filter(retracted=True).exists()
    counters_flush()
    cached = snapshot(task)
    stats_recompute(task)
    assert snapshot(task) == cached


def test_the_stats_page_names_itself_once(client, task):
    body = client.get(reverse("annotation:stats", args=[task.code])).content.decode()
    title = body[body.index("<title>") : body.index("</title>")]
    assert title.count("Statistics") == 1 and "Stats" not in title
    heading = body[body.index("<h1") : body.index("</h1>")]
    assert task.name in heading and "Stats" not in heading
