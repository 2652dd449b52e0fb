"""Validation: the queue's rules, consensus and owner settling, counters, the page, review."""

from __future__ import annotations

import contextlib
import re

import pytest
from django.db import connection

from annotation.campaigns.actors import Actor
from annotation.models import (
    Example,
    ExampleStatus,
    RoundStats,
    Validation,
    ValidationState,
    WorkerStats,
)
from annotation.selectors import validation as selectors
from annotation.selectors.examples import review_queue
from annotation.services import examples as services
from annotation.services.validations import owner_review_submit, validation_submit
from annotation.stats import counters
from annotation.stats.buffer import counters_add
from annotation.stats.recompute import stats_recompute
from core.errors import Conflict, NotFound, PermissionDenied
from tests.annotation.conftest import flush_counters
from tests.factories import ContextFactory, TaskFactory, UserFactory, campaign_session

# The services buffer their counters once their transactions commit.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("redis_connection")]


@pytest.fixture
def setup(owner):
    task = TaskFactory(code="sentiment", config_name="sentiment", owners=[owner])
    context = ContextFactory(task=task, data={"context": "Describe your morning commute."})
    return task, context


def make_example(task, context, writer, model_wrong=None, text="A fine statement."):
    example = services.example_submit(
        task=task,
        round_=task.rounds.get(number=1),
        actor=Actor(user=writer),
        context=context,
        data={"statement": text, "label": "positive"},
    )
    if model_wrong is not None:
        Example.objects.filter(pk=example.pk).update(
            status=ExampleStatus.MODEL_ANSWERED,
            model_wrong=model_wrong,
            model_output={
                "label": "negative",
                "prob": {"negative": 0.8, "positive": 0.1, "neutral": 0.1},
            },
        )
        example.refresh_from_db()
        counters_add(counters.example_verdict(example))
    return example


def validate(example, user, label, **metadata):
    return validation_submit(
        example_id=example.pk, actor=Actor(user=user), label=label, metadata=metadata
    )


@pytest.fixture
def people(db):
    return {name: UserFactory(username=name) for name in ("writer", "a", "b", "c", "d", "e")}


# -- the queue ----------
def test_never_own_never_twice_never_retracted_never_settled(setup, people):
    task, context = setup
    own = make_example(task, context, people["a"], model_wrong=True)
    seen = make_example(task, context, people["writer"], model_wrong=True)
    retracted = make_example(task, context, people["writer"], model_wrong=True)
    settled = make_example(task, context, people["writer"], model_wrong=True)
    services.example_retract(retracted, Actor(user=people["writer"]))
    validate(seen, people["a"], "correct")
    owner_review_submit(example_id=settled.pk, user=task.owners.get(), label="correct")
    assert selectors.example_next_to_validate(task, Actor(user=people["a"])) is None
    with pytest.raises(PermissionDenied):
        validate(own, people["a"], "correct")
    with pytest.raises(Conflict):
        validate(seen, people["a"], "incorrect")
    with pytest.raises(Conflict):
        validate(retracted, people["b"], "correct")
    with pytest.raises(Conflict):
        validate(settled, people["b"], "correct")


def test_least_validated_first_and_fooling_first(setup, people):
    task, context = setup
    not_fooling = make_example(task, context, people["writer"], model_wrong=False)
    no_verdict = make_example(task, context, people["writer"])
    fooling_once = make_example(task, context, people["writer"], model_wrong=True)
    fooling_fresh = make_example(task, context, people["writer"], model_wrong=True)
    validate(fooling_once, people["b"], "correct")
    actor = Actor(user=people["a"])
    order = []
    for _ in range(4):
        example = selectors.example_next_to_validate(task, actor)
        if example is None:
            break
        order.append(example.pk)
        validate(example, people["a"], "correct")
    # Non-fooling examples are queued only with validate_non_fooling.
    assert order == [fooling_fresh.pk, fooling_once.pk, no_verdict.pk]
    assert not_fooling.pk not in order


def test_validators_who_come_at_once_are_spread_over_the_least_validated(setup, people):
    """Every validator used to be offered the first example of the queue: those who opened
    the page at about the same time met on it, and once it settled the rest were turned
    away (64% of the validations sent in the load test). Each now gets one at random among
    the least validated of the first ``VALIDATION_SPREAD``."""
    task, context = setup
    spread = selectors.VALIDATION_SPREAD
    examples = [
        make_example(task, context, people["writer"], model_wrong=True) for _ in range(spread + 8)
    ]
    window = {example.pk for example in examples[:spread]}
    offered = [
        selectors.example_next_to_validate(task, Actor(user=UserFactory())).pk for _ in range(20)
    ]
    assert set(offered) <= window  # never past the first VALIDATION_SPREAD
    # 20 draws among 32 give about 15 different examples; 7 or fewer: p = 1.5e-7.
    assert len(set(offered)) >= 8


def test_the_spread_still_offers_the_least_validated_first(setup, people):
    task, context = setup
    examples = [make_example(task, context, people["writer"], model_wrong=True) for _ in range(6)]
    for example in examples[:4]:
        validate(example, people["b"], "correct")
    least = {example.pk for example in examples[4:]}
    for _ in range(20):
        assert selectors.example_next_to_validate(task, Actor(user=people["a"])).pk in least


def test_validate_non_fooling_orders_by_validation_count_only(setup, people):
    task, context = setup
    task.validate_non_fooling = True
    task.save()
    fooling = make_example(task, context, people["writer"], model_wrong=True)
    not_fooling = make_example(task, context, people["writer"], model_wrong=False)
    validate(fooling, people["b"], "correct")
    example = selectors.example_next_to_validate(task, Actor(user=people["a"]))
    assert example.pk == not_fooling.pk


def test_awaiting_and_failed_examples_are_not_queued(setup, people):
    task, context = setup
    example = make_example(task, context, people["writer"])
    for status in (ExampleStatus.AWAITING_MODEL, ExampleStatus.MODEL_FAILED):
        Example.objects.filter(pk=example.pk).update(status=status)
        assert selectors.example_next_to_validate(task, Actor(user=people["a"])) is None


@contextlib.contextmanager
def no_seqscan():
    """PostgreSQL plans without sequential scans (a test table is small enough for one)."""
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET enable_seqscan = on")


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="checks PostgreSQL's plan (SET enable_seqscan)"
)
def test_queue_query_uses_the_partial_index(setup, people):
    task, context = setup
    make_example(task, context, people["writer"], model_wrong=True)
    queue = selectors.validation_queue(task, Actor(user=people["a"])).filter(model_wrong=True)
    with no_seqscan():
        plan = queue.order_by("validation_count", "id").explain()
    assert "example_validation_queue" in plan
    assert "Anti Join" in plan or "NOT" in plan.upper()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="checks PostgreSQL's plans")
def test_the_validate_posts_lookup_reads_one_example_by_its_key(setup, people):
    """The validate POST's read of its example goes by the primary key: with the queue's
    condition as a filter, PostgreSQL could take the partial queue index instead and walk
    the task's whole queue to the one id."""
    task, context = setup
    examples = [make_example(task, context, people["writer"], model_wrong=True) for _ in "123"]
    actor = Actor(user=people["a"])
    with no_seqscan():
        plan = selectors.in_queue_query(actor, examples[1].pk).explain()
    assert "example_validation_queue" not in plan, plan
    assert "annotation_example_pkey" in plan or "example_task_keyset" in plan, plan
    assert selectors.example_for_validation(task, examples[1].pk, actor) == examples[1]
    assert (
        selectors.example_for_validation(task, examples[1].pk, Actor(user=people["writer"])) is None
    )
    # The task is checked on the row: another task's example is not in this queue.
    other = TaskFactory(code="other-task")
    assert selectors.example_for_validation(other, examples[1].pk, actor) is None
    assert selectors.example_for_validation(task, None, actor) is None


# -- settling and counters ----------
def round_stats(task):
    flush_counters()
    return RoundStats.objects.get(round__task=task)


def writer_stats(task, writer):
    flush_counters()
    return WorkerStats.objects.get(round__task=task, user=writer)


def test_counters_at_and_past_the_consensus_threshold(setup, people):
    task, context = setup
    assert task.num_matching_validations == 3
    example = make_example(task, context, people["writer"], model_wrong=True)
    validate(example, people["a"], "correct")
    validate(example, people["b"], "incorrect")
    validate(example, people["c"], "correct")
    example.refresh_from_db()
    assert example.validation_state == ValidationState.PENDING
    assert round_stats(task).verified_fooled == 0
    validate(example, people["d"], "correct")  # the third matching verdict settles it
    example.refresh_from_db()
    assert example.validation_state == ValidationState.CORRECT
    assert (example.validation_count, example.correct_count, example.incorrect_count) == (4, 3, 1)
    assert example.settled_at is not None and not example.settled_by_owner
    assert (round_stats(task).verified_fooled, round_stats(task).validated) == (1, 1)
    assert writer_stats(task, people["writer"]).verified_fooled == 1
    # Past the threshold: refused, and nothing moves.
    with pytest.raises(Conflict):
        validate(example, people["e"], "correct")
    example.refresh_from_db()
    assert example.validation_count == 4
    assert (round_stats(task).verified_fooled, round_stats(task).validated) == (1, 1)
    assert not WorkerStats.objects.filter(user=people["e"], validations__gt=0).exists()
    assert Validation.objects.filter(example=example).count() == 4


def test_incorrect_consensus_counts_a_rejection(setup, people):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    for name in ("a", "b", "c"):
        validate(example, people[name], "incorrect", corrected_label="neutral")
    example.refresh_from_db()
    assert example.validation_state == ValidationState.INCORRECT
    assert writer_stats(task, people["writer"]).rejected == 1
    assert round_stats(task).verified_fooled == 0
    assert Validation.objects.filter(example=example).first().metadata == {
        "corrected_label": "neutral"
    }


def test_flags_settle_as_flagged(setup, people):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    for name in ("a", "b", "c"):
        validate(example, people[name], "flagged", flag_reason="spam")
    example.refresh_from_db()
    assert example.validation_state == ValidationState.FLAGGED
    assert (example.flagged_count, example.flag_count) == (3, 3)


def test_threshold_of_one(setup, people):
    task, context = setup
    task.num_matching_validations = 1
    task.save()
    example = make_example(task, context, people["writer"], model_wrong=True)
    validate(example, people["a"], "correct")
    example.refresh_from_db()
    assert example.validation_state == ValidationState.CORRECT


def test_owner_verdict_settles_at_once(setup, people, owner):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    validation_submit(example_id=example.pk, actor=Actor(user=owner), label="correct")
    example.refresh_from_db()
    assert example.validation_state == ValidationState.CORRECT and example.settled_by_owner
    assert round_stats(task).verified_fooled == 1


def test_owner_overrides_a_consensus_and_counters_move_once(setup, people, owner):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    for name in ("a", "b", "c"):
        validate(example, people[name], "correct")
    assert round_stats(task).verified_fooled == 1
    owner_review_submit(example_id=example.pk, user=owner, label="incorrect")
    example.refresh_from_db()
    assert example.validation_state == ValidationState.INCORRECT and example.settled_by_owner
    assert (round_stats(task).verified_fooled, round_stats(task).validated) == (0, 1)
    assert writer_stats(task, people["writer"]).rejected == 1
    # The same verdict again moves nothing; a change moves the counters back once.
    owner_review_submit(example_id=example.pk, user=owner, label="incorrect")
    assert writer_stats(task, people["writer"]).rejected == 1
    owner_review_submit(example_id=example.pk, user=owner, label="correct")
    example.refresh_from_db()
    assert (example.correct_count, example.incorrect_count) == (4, 0)
    assert (round_stats(task).verified_fooled, writer_stats(task, people["writer"]).rejected) == (
        1,
        0,
    )
    assert Validation.objects.filter(example=example, is_owner_verdict=True).count() == 1


def test_cached_counters_equal_the_recomputed_ones(setup, people, owner):
    task, context = setup
    examples = [make_example(task, context, people["writer"], model_wrong=w) for w in (1, 1, 0)]
    for name in ("a", "b", "c", "d"):
        for example in examples[:2]:
            with contextlib.suppress(Conflict):
                validate(example, people[name], "correct" if name != "d" else "incorrect")
    owner_review_submit(example_id=examples[1].pk, user=owner, label="flagged")
    services.example_retract(examples[2], Actor(user=people["writer"]))
    flush_counters()
    cached_round = list(RoundStats.objects.filter(round__task=task).values())
    cached_workers = sorted(
        WorkerStats.objects.filter(task=task).values(
            "user_id",
            "examples",
            "fooled",
            "verified_fooled",
            "rejected",
            "retracted",
            "validations",
        ),
        key=lambda row: row["user_id"],
    )
    stats_recompute(task)
    assert [
        {k: v for k, v in row.items() if k != "id"}
        for row in RoundStats.objects.filter(round__task=task).values()
    ] == [{k: v for k, v in row.items() if k != "id"} for row in cached_round]
    assert (
        sorted(
            WorkerStats.objects.filter(task=task).values(
                "user_id",
                "examples",
                "fooled",
                "verified_fooled",
                "rejected",
                "retracted",
                "validations",
            ),
            key=lambda row: row["user_id"],
        )
        == cached_workers
    )


# -- the page ----------
@pytest.fixture
def hs_setup(owner):
    task = TaskFactory(code="hs", config_name="hs", owners=[owner])
    context = ContextFactory(task=task, data={"context": "Weekend plans"})
    return task, context


def test_validate_page_shows_warning_context_example_and_metadata(client, hs_setup, people):
    task, context = hs_setup
    example = services.example_submit(
        task=task,
        round_=task.rounds.get(number=1),
        actor=Actor(user=people["writer"]),
        context=context,
        data={"statement": "<script>alert(1)</script>", "label": "hateful"},
    )
    Example.objects.filter(pk=example.pk).update(metadata={"example_explanation": "<b>why</b>"})
    client.force_login(people["a"])
    html = client.get("/tasks/hs/validate").content.decode()
    assert task.config.content_warning in html
    assert "Weekend plans" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    assert "&lt;b&gt;why&lt;/b&gt;" in html
    assert f'data-example-id="{example.pk}"' in html
    for label in ("correct", "incorrect", "flagged"):
        assert f'value="{label}"' in html


def test_validate_post_records_the_verdict_and_its_metadata(client, setup, people):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    client.force_login(people["a"])
    response = client.post(
        "/tasks/sentiment/validate",
        {
            "example_id": example.pk,
            "label": "incorrect",
            "corrected_label": "neutral",
            "flag_reason": "not kept",
        },
    )
    assert response.status_code == 302
    validation = Validation.objects.get()
    assert (validation.label, validation.metadata) == ("incorrect", {"corrected_label": "neutral"})
    # A bad metadata value is a form error, not a 500; a second verdict is refused.
    bad = client.post(
        "/tasks/sentiment/validate",
        {"example_id": example.pk, "label": "incorrect", "corrected_label": "<x>"},
    )
    assert bad.status_code in (302, 400)
    assert Validation.objects.count() == 1
    client.force_login(people["b"])
    bad = client.post(
        "/tasks/sentiment/validate",
        {"example_id": example.pk, "label": "incorrect", "corrected_label": "<x>"},
    )
    assert bad.status_code == 400


def test_writer_cannot_validate_own_example_through_the_page(client, setup, people):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    client.force_login(people["writer"])
    assert 'id="nothing-to-validate"' in client.get("/tasks/sentiment/validate").content.decode()
    client.post("/tasks/sentiment/validate", {"example_id": example.pk, "label": "correct"})
    assert Validation.objects.count() == 0


def test_validate_query_counts_are_fixed(client, setup, people, django_assert_max_num_queries):
    task, context = setup
    for _ in range(30):
        make_example(task, context, people["writer"], model_wrong=True)
    example = make_example(task, context, people["writer"], model_wrong=True)
    validate(example, people["b"], "correct")
    client.force_login(people["a"])
    client.get("/tasks/sentiment/validate")
    with django_assert_max_num_queries(7):
        response = client.get("/tasks/sentiment/validate")
    next_id = response.context["example"].pk
    with django_assert_max_num_queries(17):
        client.post("/tasks/sentiment/validate", {"example_id": next_id, "label": "correct"})


def test_validate_post_takes_a_fixed_number_of_queries(
    client, setup, people, django_assert_max_num_queries
):
    """The steady-state POST: the user, then the transaction: the example locked with whether
    this validator saw it already, the validation, the example's counters and state, and the
    transaction's two ends. The form is checked against the config version it names (the
    cached current one); the stats' counters go to Redis."""
    task, context = setup
    first, second = (make_example(task, context, people["writer"], model_wrong=True) for _ in "12")
    client.force_login(people["a"])
    client.post("/tasks/sentiment/validate", {"example_id": first.pk, "label": "correct"})
    with django_assert_max_num_queries(6):
        response = client.post(
            "/tasks/sentiment/validate", {"example_id": second.pk, "label": "correct"}
        )
    assert response.status_code == 302
    assert Validation.objects.filter(user=people["a"]).count() == 2


def test_a_second_verdict_of_the_same_validator_is_refused_before_any_insert(setup, people):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    validate(example, people["a"], "correct")
    with pytest.raises(Conflict) as refused:
        validate(example, people["a"], "incorrect")
    assert refused.value.code == "validation.duplicate"
    example.refresh_from_db()
    assert (example.validation_count, example.correct_count, example.incorrect_count) == (1, 1, 0)


def test_an_example_of_another_task_is_not_found_through_this_task(setup, people):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    other = TaskFactory(code="other", config_name="sentiment")
    with pytest.raises(NotFound):
        validation_submit(
            example_id=example.pk, actor=Actor(user=people["a"]), label="correct", task=other
        )
    assert Validation.objects.count() == 0


# -- the owners' review queue ----------
def test_review_queue_filters_by_flags_and_disagreement(setup, people, owner):
    task, context = setup
    flagged = make_example(task, context, people["writer"], model_wrong=True)
    disputed = make_example(task, context, people["writer"], model_wrong=True)
    quiet = make_example(task, context, people["writer"], model_wrong=True)
    validate(flagged, people["a"], "flagged")
    validate(flagged, people["b"], "flagged")
    validate(disputed, people["a"], "correct")
    validate(disputed, people["b"], "incorrect")
    assert [e.pk for e in review_queue(task, min_flags=2)] == [flagged.pk]
    assert [e.pk for e in review_queue(task, disagreement=True)] == [disputed.pk]
    assert {e.pk for e in review_queue(task)} == {flagged.pk, disputed.pk, quiet.pk}


def test_review_page_is_for_owners_and_their_verdict_is_final(client, setup, people, owner):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    validate(example, people["a"], "flagged")
    client.force_login(people["a"])
    assert client.get("/tasks/sentiment/review").status_code == 403
    client.force_login(owner)
    html = client.get("/tasks/sentiment/review?min_flags=1").content.decode()
    assert f'data-example-id="{example.pk}"' in html
    response = client.post(f"/tasks/sentiment/review/{example.pk}", {"label": "correct"})
    assert response.status_code == 302
    example.refresh_from_db()
    assert example.validation_state == ValidationState.CORRECT and example.settled_by_owner


def _sql_literal(value) -> str:
    """A parameter of the queue's query as SQL text (ids, flags, states)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="checks PostgreSQL's plans")
def test_a_prepared_queue_query_is_planned_with_its_values_and_walks_the_partial_index(
    setup, people
):
    """psycopg prepares a query after a few runs, and PostgreSQL may then keep a generic
    plan, made without the values: it cannot use the partial queue index (its condition
    names values) and takes the task's whole keyset instead. The connections plan every run
    with its values (``plan_cache_mode``), so a prepared run walks the partial index."""
    task, context = setup
    for _ in range(3):
        make_example(task, context, people["writer"], model_wrong=True)
    query = selectors.next_to_validate_query(task, Actor(user=people["a"]), "fooled")[:1]
    sql, params = query.query.sql_with_params()
    numbered = iter(range(1, len(params) + 1))
    prepared = re.sub(r"%s", lambda _: f"${next(numbered)}", sql)
    values = ", ".join(_sql_literal(value) for value in params)
    with no_seqscan(), connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "force_custom_plan"
        cursor.execute(f"PREPARE next_to_validate AS {prepared}")
        try:
            for _ in range(7):  # past the runs after which a generic plan may be kept
                cursor.execute(f"EXECUTE next_to_validate({values})")
            cursor.execute(f"EXPLAIN EXECUTE next_to_validate({values})")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("DEALLOCATE next_to_validate")
    assert "example_validation_queue" in plan, plan


# -- settled examples are final for their writer ----------
@pytest.mark.parametrize("state", ["correct", "incorrect", "flagged"])
def test_a_settled_example_refuses_its_writers_changes_and_keeps_the_stats(
    client, setup, people, owner, state
):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    owner_review_submit(example_id=example.pk, user=owner, label=state)
    before = (writer_stats(task, people["writer"]).rejected, round_stats(task).validated)
    writer = Actor(user=people["writer"])
    calls = [
        lambda: services.example_retract(example, writer),
        lambda: services.example_flag(example, writer, "second thoughts"),
        lambda: services.example_save_metadata(example, writer, {}),
    ]
    for call in calls:
        with pytest.raises(Conflict) as refused:
            call()
        assert refused.value.code == "example.settled"
    example.refresh_from_db()
    assert (example.retracted, example.creator_flagged, example.validation_state) == (
        False,
        False,
        state,
    )
    assert (writer_stats(task, people["writer"]).rejected, round_stats(task).validated) == before
    # The page offers no change and says why; a change posted anyway is refused with the
    # reason, and nothing changes; the owners still act through the review queue.
    client.force_login(people["writer"])
    page = client.get(f"/tasks/sentiment/examples/{example.pk}/").content.decode()
    assert 'id="settled-note"' in page
    assert 'id="retract"' not in page and 'id="metadata-form"' not in page
    response = client.post(
        f"/tasks/sentiment/examples/{example.pk}/retract", headers={"HX-Request": "true"}
    )
    assert response.status_code == 200 and "settled" in response.content.decode()
    example.refresh_from_db()
    assert not example.retracted
    owner_review_submit(example_id=example.pk, user=owner, label="correct")
    example.refresh_from_db()
    assert example.validation_state == "correct"


@pytest.mark.parametrize("state", ["correct", "incorrect", "flagged"])
def test_a_writer_cannot_unflag_a_settled_example(client, setup, people, owner, state):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    writer = Actor(user=people["writer"])
    services.example_flag(example, writer, "the label may be wrong")
    owner_review_submit(example_id=example.pk, user=owner, label=state)
    example.refresh_from_db()
    flags = example.flag_count
    with pytest.raises(Conflict) as refused:
        services.example_unflag(example, writer)
    assert refused.value.code == "example.settled"
    # Posted anyway, through the page: refused with the reason, and the flag stays.
    client.force_login(people["writer"])
    response = client.post(
        f"/tasks/sentiment/examples/{example.pk}/unflag", headers={"HX-Request": "true"}
    )
    assert response.status_code == 200 and "settled" in response.content.decode()
    example.refresh_from_db()
    assert (example.creator_flagged, example.flag_count) == (True, flags)
    assert example.creator_flag_reason == "the label may be wrong"


def test_a_writer_may_still_unflag_a_pending_example(setup, people):
    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    writer = Actor(user=people["writer"])
    services.example_flag(example, writer)
    unflagged = services.example_unflag(example, writer)
    assert (unflagged.creator_flagged, unflagged.flag_count) == (False, 0)


def test_the_api_refuses_a_writers_change_to_a_settled_example(setup, people, owner):
    from rest_framework.test import APIClient

    task, context = setup
    example = make_example(task, context, people["writer"], model_wrong=True)
    owner_review_submit(example_id=example.pk, user=owner, label="incorrect")
    api = APIClient()
    api.force_authenticate(people["writer"])
    response = api.post(f"/api/v1/examples/{example.pk}/retract/")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "example.settled"


def test_the_validate_page_shows_todays_verdicts_and_a_campaigns_quota(client, setup, people):
    from tests.factories import CampaignFactory, CampaignWorkerFactory

    task, context = setup
    examples = [make_example(task, context, people["writer"], model_wrong=True) for _ in "123"]
    validate(examples[0], people["a"], "correct")
    client.force_login(people["a"])
    html = client.get("/tasks/sentiment/validate").content.decode()
    assert 'id="progress-line" data-validated="1"' in html and "1</strong> verdict given" in html
    campaign = CampaignFactory(task=task, kind="validate", quota=5)
    crowd = CampaignWorkerFactory(campaign=campaign)
    validation_submit(
        example_id=examples[1].pk, actor=Actor(campaign_worker=crowd), label="correct"
    )
    client.logout()
    campaign_session(client, crowd)
    html = client.get("/tasks/sentiment/validate").content.decode()
    assert 'data-done="1" data-quota="5"' in html and "1 of 5" in html
