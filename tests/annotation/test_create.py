"""The create page: the example is saved first, a live job asks a model, the page shows the
answer and the verdict; failures, retries, ask_user, metadata, retract, flag, sandbox."""

from __future__ import annotations

import random
import re

import django_rq
import pytest
from django.urls import reverse

from annotation.live import drain, sandbox
from annotation.live import queue as live_loop
from annotation.live.connection import LIVE_QUEUE
from annotation.models import (
    Campaign,
    CampaignWorker,
    Example,
    ExampleStatus,
    RoundStats,
    VerdictSource,
)
from annotation.services.answers import MODEL_ANSWER_FIELDS
from models_hub.demo.sentiment import SentimentHandler
from models_hub.models import RegisteredModel
from models_hub.selectors import model_pick_for_round
from tests.annotation.conftest import (
    POSITIVE,
    flush_counters,
    open_form,
    put_in_loop,
    run_jobs,
    submit,
)
from tests.factories import (
    ContextFactory,
    TaskFactory,
    UserFactory,
    campaign_session,
    demo_config,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def no_sync_wait(settings):
    # Most tests run the job themselves (burst worker) after the POST.
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 0
    settings.ANNOTATION_POLL_WAIT_SECONDS = 0


def test_anonymous_is_sent_to_login(client, sentiment_task):
    response = client.get("/tasks/sentiment/create")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_page_parts_in_order(client, worker, owner):
    task = TaskFactory(code="hs", config_name="hs", owners=[owner], instructions="Be **kind**.")
    ContextFactory(task=task, data={"context": "Weekend plans"})
    client.force_login(worker)
    html = open_form(client, "hs")["html"]
    order = [
        "Instructions",
        task.config.content_warning,
        'data-context-field="context"',
        'id="goal-banner"',  # the goal and its label choice, one control opening the form
        'name="label"',
        'name="statement"',
        'id="next-context"',
        'name="retain_input"',
        'name="sandbox"',
    ]
    positions = [html.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert "<strong>kind</strong>" in html


def test_goal_label_is_preset_at_random(client, worker, sentiment_task):
    client.force_login(worker)
    goals = {open_form(client, "sentiment")["goal"] for _ in range(25)}
    assert goals <= {"negative", "positive", "neutral"}
    assert len(goals) > 1


def test_example_is_saved_first_then_the_model_answers(client, worker, sentiment_model):
    client.force_login(worker)
    response = submit(client, "sentiment", statement=POSITIVE, label="negative")
    assert response.status_code == 200
    example = Example.objects.get()
    assert example.status == ExampleStatus.AWAITING_MODEL
    assert example.config_version_id == sentiment_model.task.current_config_id
    assert example.round.number == 1
    assert example.model_id == sentiment_model.pk
    assert example.user_id == worker.pk
    assert example.input == {"statement": POSITIVE, "label": "negative"}
    assert example.time_spent_ms is not None
    assert 'id="model-waiting"' in response.content.decode()

    run_jobs()
    example.refresh_from_db()
    assert example.status == ExampleStatus.MODEL_ANSWERED
    assert example.model_output["label"] == "positive"
    assert example.model_wrong is True
    assert example.verdict_source == VerdictSource.METRIC
    flush_counters()
    stats = RoundStats.objects.get(round=example.round)
    assert (stats.collected, stats.fooled) == (1, 1)

    status = client.get(f"/tasks/sentiment/examples/{example.pk}/status").content.decode()
    assert 'id="verdict-fooled"' in status
    assert "prob-bar" in status
    assert "model_explanation_wrong" in status


def test_not_fooled_verdict(client, worker, sentiment_model):
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="positive")
    run_jobs()
    example = Example.objects.get()
    assert example.model_wrong is False
    status = client.get(f"/tasks/sentiment/examples/{example.pk}/status").content.decode()
    assert 'id="verdict-not-fooled"' in status
    assert "model_explanation_right" in status


def test_fast_path_renders_the_verdict_in_the_post_response(
    client, worker, sentiment_model, background_worker, settings
):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 5
    client.force_login(worker)
    response = submit(client, "sentiment", statement=POSITIVE, label="negative")
    assert 'id="verdict-fooled"' in response.content.decode()


def test_the_verdict_page_shows_the_input_then_the_verdict_then_the_next_form(
    client, worker, sentiment_model, background_worker, settings
):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 5
    client.force_login(worker)
    statement = f"{POSITIVE} <!-- a comment -->"
    html = submit(client, "sentiment", statement=statement, label="negative").content.decode()
    assert "<!-- a comment -->" not in html and "&lt;!-- a comment --&gt;" in html
    assert html.count('id="example-status"') == 1
    assert (
        html.index('id="example-input"')
        < html.index('id="example-status"')
        < html.index('id="verdict-fooled"')
        < html.index('id="write-another"')
    )


def test_status_poll_waits_for_the_job(
    client, worker, sentiment_model, background_worker, settings
):
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    settings.ANNOTATION_POLL_WAIT_SECONDS = 5
    example = Example.objects.get()
    status = client.get(f"/tasks/sentiment/examples/{example.pk}/status").content.decode()
    assert 'data-status="model_answered"' in status


def test_one_of_several_models_is_picked_at_random_and_recorded(
    client, worker, sentiment_task, owner, model_server_factory, redis_connection
):
    first = put_in_loop(sentiment_task, owner, model_server_factory(SentimentHandler).url, "a")
    second = put_in_loop(sentiment_task, owner, model_server_factory(SentimentHandler).url, "b")
    round_ = sentiment_task.rounds.get(number=1)
    # The pick is uniform among the in-the-loop models (seeded, so the test cannot flake).
    rng = random.Random(7)
    picks = {model_pick_for_round(round_, rng).pk for _ in range(32)}
    assert picks == {first.pk, second.pk}
    client.force_login(worker)
    for _ in range(8):
        submit(client, "sentiment", statement=POSITIVE, label="negative")
    run_jobs()
    # Every example records the model that answered it, one of the round's models.
    used = set(Example.objects.values_list("model_id", flat=True))
    statuses = dict(
        RegisteredModel.objects.filter(pk__in=[first.pk, second.pk]).values_list("pk", "status")
    )
    assert used and used <= {first.pk, second.pk}, statuses
    assert set(Example.objects.values_list("status", flat=True)) == {ExampleStatus.MODEL_ANSWERED}


def test_without_a_model_examples_are_stored_without_verdict(
    client, worker, sentiment_task, live_queue
):
    client.force_login(worker)
    response = submit(client, "sentiment", statement=POSITIVE, label="negative")
    example = Example.objects.get()
    assert example.status == ExampleStatus.NO_MODEL
    assert example.model_wrong is None and example.model_id is None
    assert live_queue.count == 0
    assert 'id="no-model"' in response.content.decode()


def test_model_down_shows_a_plain_message_keeps_the_example_and_retries(
    client, worker, sentiment_model
):
    sentiment_model.server_handle.stop()
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    run_jobs()
    example = Example.objects.get()
    assert example.status == ExampleStatus.MODEL_FAILED
    assert example.model_error_code == "model.unreachable"
    assert example.input["statement"] == POSITIVE
    page = client.get(f"/tasks/sentiment/examples/{example.pk}/").content.decode()
    assert 'id="model-failed"' in page and 'id="retry-model"' in page and 'id="go-on"' in page
    assert "Traceback" not in page

    # The model comes back on another port; the worker retries.
    from tests.annotation.conftest import ServerHandle

    handle = ServerHandle(SentimentHandler)
    try:
        RegisteredModel.objects.filter(pk=sentiment_model.pk).update(endpoint_url=handle.url)
        response = client.post(f"/tasks/sentiment/examples/{example.pk}/retry")
        assert response.status_code == 302
        run_jobs()
    finally:
        handle.stop()
    example.refresh_from_db()
    assert example.status == ExampleStatus.MODEL_ANSWERED
    assert example.model_attempts == 2
    assert Example.objects.count() == 1


def test_retry_is_refused_while_the_model_answers(client, worker, sentiment_model):
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    example = Example.objects.get()
    client.post(f"/tasks/sentiment/examples/{example.pk}/retry")
    example.refresh_from_db()
    assert example.model_attempts == 1


def test_live_job_is_idempotent(client, worker, sentiment_model):
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    example = Example.objects.get()
    run_jobs()
    assert drain.answer_batch([(example.pk, 1)]) == {example.pk: {"skipped": True}}
    flush_counters()
    assert RoundStats.objects.get(round=example.round).fooled == 1


@pytest.fixture
def ask_user_task(owner):
    yaml_text = demo_config("sentiment").replace(
        "model_wrong_metric:\n  type: exact_match\n  reference_names: [label]",
        "model_wrong_metric:\n  type: ask_user",
    )
    task = TaskFactory(code="askuser", yaml_text=yaml_text, owners=[owner])
    ContextFactory(task=task)
    return task


def test_ask_user_verdict_is_recorded_and_counted_once(
    client, worker, ask_user_task, owner, model_server_factory, redis_connection
):
    put_in_loop(ask_user_task, owner, model_server_factory(SentimentHandler).url)
    client.force_login(worker)
    submit(client, "askuser", statement=POSITIVE, label="negative")
    run_jobs()
    example = Example.objects.get()
    assert example.model_wrong is None
    status = client.get(f"/tasks/askuser/examples/{example.pk}/status").content.decode()
    assert 'name="model_wrong"' in status
    assert 'id="metadata-form"' not in status

    url = f"/tasks/askuser/examples/{example.pk}/verdict"
    response = client.post(url, {"model_wrong": "true"}, headers={"HX-Request": "true"})
    assert 'id="verdict-fooled"' in response.content.decode()
    assert 'id="metadata-form"' in response.content.decode()
    client.post(url, {"model_wrong": "false"})
    example.refresh_from_db()
    assert (example.model_wrong, example.verdict_source) == (True, VerdictSource.WORKER)
    flush_counters()
    assert RoundStats.objects.get(round=example.round).fooled == 1


def test_metadata_for_the_outcome_is_saved(client, worker, sentiment_model):
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    run_jobs()
    example = Example.objects.get()
    url = f"/tasks/sentiment/examples/{example.pk}/metadata"
    response = client.post(
        url,
        {
            "metadata-example_explanation": "It is clearly positive",
            "metadata-model_explanation_wrong": "<b>sarcasm</b>",
        },
        headers={"HX-Request": "true"},
    )
    assert 'id="metadata-saved"' in response.content.decode()
    example.refresh_from_db()
    assert example.metadata == {
        "example_explanation": "It is clearly positive",
        "model_explanation_wrong": "<b>sarcasm</b>",
    }
    # Too long: a plain form error, not a 500.
    response = client.post(url, {"metadata-example_explanation": "x" * 20_000})
    assert response.status_code == 400


def test_only_the_writer_acts_on_an_example(client, worker, sentiment_model):
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    example = Example.objects.get()
    client.force_login(UserFactory(username="intruder"))
    assert client.get(f"/tasks/sentiment/examples/{example.pk}/status").status_code == 404
    assert client.post(f"/tasks/sentiment/examples/{example.pk}/retract").status_code == 404


def test_retract_and_flag_count_once(client, worker, sentiment_model):
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    run_jobs()
    example = Example.objects.get()
    for _ in range(2):
        client.post(f"/tasks/sentiment/examples/{example.pk}/flag", {"reason": "typo"})
    example.refresh_from_db()
    assert (example.flag_count, example.creator_flagged) == (1, True)
    for _ in range(2):
        client.post(f"/tasks/sentiment/examples/{example.pk}/retract")
    example.refresh_from_db()
    assert example.retracted
    flush_counters()
    stats = RoundStats.objects.get(round=example.round)
    assert (stats.retracted, stats.collected, stats.fooled) == (1, 0, 0)


def test_sandbox_stores_nothing(client, worker, sentiment_model, background_worker, settings):
    settings.ANNOTATION_SYNC_WAIT_SECONDS = 5
    client.force_login(worker)
    response = submit(client, "sentiment", statement=POSITIVE, label="negative", sandbox="on")
    html = response.content.decode()
    assert Example.objects.count() == 0
    assert 'id="sandbox-result"' in html and "You would have fooled the model." in html
    assert POSITIVE in html  # the typed text stays in the form
    flush_counters()
    assert not RoundStats.objects.filter(collected__gt=0).exists()


def test_sandbox_answer_is_only_for_the_worker_who_asked(
    client, worker, sentiment_model, background_worker, settings
):
    settings.ANNOTATION_POLL_WAIT_SECONDS = 5
    job_id = sandbox.enqueue_sandbox_prediction(
        sentiment_model, {"uid": "sandbox", "statement": POSITIVE}, f"u:{worker.pk}"
    )
    url = reverse("annotation:sandbox_status", args=["sentiment", job_id])
    client.force_login(worker)
    own = client.get(url)
    assert own.status_code == 200 and "model-output-value" in own.content.decode()

    client.force_login(UserFactory(username="snooper"))
    refused = client.get(url)
    assert refused.status_code == 404
    assert "model-output-value" not in refused.content.decode()


def test_sandbox_status_refuses_a_live_job_and_says_expired_for_an_unknown_one(
    client, worker, sentiment_model, settings
):
    settings.ANNOTATION_POLL_WAIT_SECONDS = 0
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="positive")  # queues a live drain
    [drain_id] = django_rq.get_queue("live").job_ids
    assert drain_id.startswith(live_loop.DRAIN_JOB_PREFIX)
    live = client.get(reverse("annotation:sandbox_status", args=["sentiment", drain_id]))
    assert live.status_code == 404
    unknown = reverse("annotation:sandbox_status", args=["sentiment", "0" * 8 + "-dead-beef"])
    response = client.get(unknown)
    assert response.status_code == 200 and "expired" in response.content.decode()


def test_retain_input_keeps_the_context_and_the_text(client, worker, sentiment_task):
    ContextFactory(task=sentiment_task)
    ContextFactory(task=sentiment_task)
    client.force_login(worker)
    page = open_form(client, "sentiment")
    client.post(
        "/tasks/sentiment/create",
        {
            "context_id": page["context_id"],
            "started_at": page["started_at"],
            "statement": "kept text",
            "label": "neutral",
            "retain_input": "on",
        },
    )
    again = open_form(client, "sentiment")
    assert again["context_id"] == page["context_id"]
    assert "kept text" in again["html"]
    assert 'name="retain_input" class="checkboxinput form-check-input" id="id_retain_input"' in (
        again["html"].replace(" checked", "")
    )
    assert "checked" in again["html"].split('name="retain_input"')[1][:80]
    # "Next context" leaves the retained input behind.
    fresh = open_form(client, "sentiment", "?next=1")
    assert "kept text" not in fresh["html"]


def test_hostile_input_is_escaped_and_never_500(client, worker, sentiment_task):
    client.force_login(worker)
    payload = '<script>alert("x")</script>'
    response = submit(client, "sentiment", statement=payload, label="negative")
    html = response.content.decode()
    assert response.status_code == 200
    assert payload not in html and "&lt;script&gt;" in html
    bad = submit(client, "sentiment", statement="ok", label="<img src=x onerror=1>")
    assert bad.status_code == 400
    too_long = submit(client, "sentiment", statement="x" * 600, label="neutral")
    assert too_long.status_code == 400
    forged = client.post(
        "/tasks/sentiment/create", {"context_id": "999999", "statement": "a", "label": "neutral"}
    )
    assert forged.status_code in (400, 409)
    for not_an_id in ("1 OR 1=1", "abc", "-1", "9" * 40):
        response = client.post(
            "/tasks/sentiment/create",
            {"context_id": not_an_id, "statement": "a", "label": "neutral"},
        )
        assert response.status_code in (400, 409), not_an_id
    assert Example.objects.count() == 1


def test_qa_selection_keeps_text_and_offset(client, worker, qa_task):
    client.force_login(worker)
    context = qa_task.contexts.get().data["context"]
    start = context.index("Elias Brandt")
    submit(client, "qa", question="Who lit the lamp?", answer_0="Elias Brandt", answer_1=start)
    example = Example.objects.get()
    assert example.input["answer"] == {"text": "Elias Brandt", "start": start}
    wrong = submit(client, "qa", question="Who?", answer_0="Elias Brandt", answer_1=start + 1)
    assert wrong.status_code == 400
    assert Example.objects.count() == 1


def test_campaign_worker_creates_then_hits_the_quota(client, sentiment_task, owner):
    round_ = sentiment_task.rounds.get(number=1)
    campaign = Campaign.objects.create(
        task=sentiment_task, round=round_, name="pilot", quota=1, completion_code="DONE"
    )
    crowd = CampaignWorker.objects.create(campaign=campaign, external_id="P1")
    campaign_session(client, crowd)
    response = submit(client, "sentiment", statement=POSITIVE, label="negative")
    assert response.status_code == 200
    example = Example.objects.get()
    assert example.campaign_worker_id == crowd.pk and example.user_id is None
    response = client.get("/tasks/sentiment/create")
    assert response.status_code == 302
    try:
        done = reverse("annotation:campaign_done")
    except Exception:
        done = reverse("tasks:detail", args=["sentiment"])
    assert response["Location"] == done
    # A campaign worker cannot use another task.
    other = TaskFactory(code="other", config_name="nli")
    ContextFactory(task=other)
    assert client.get("/tasks/other/create").status_code == 403


def test_query_counts_are_fixed(
    client, worker, validators, sentiment_model, django_assert_max_num_queries
):
    """Create GET and POST, the status poll and the validate page take a bounded number of
    queries, whatever the number of contexts.

    A warm-up submission first fills the session and the task bundle's cache; the pinned
    numbers are the steady state. The session and the bundle come from the cache.
    """
    for _ in range(40):
        ContextFactory(task=sentiment_model.task)
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    # 3: the user; the sampling pool (read again once its cached copy is 2 s old); the
    # progress line (one query, annotation/selectors/progress.py). The showing is counted in
    # Redis.
    with django_assert_max_num_queries(3):
        page = open_form(client, "sentiment")
    data = {
        "context_id": page["context_id"],
        "started_at": page["started_at"],
        "statement": POSITIVE,
        "label": "negative",
    }
    # 4: the user, the context (when its cached row is gone), the new example (its counters
    # go to Redis), the progress line on the page that follows (+1 for it).
    with django_assert_max_num_queries(4):
        client.post("/tasks/sentiment/create", data)
    run_jobs()
    example = Example.objects.order_by("-id").first()
    # 2: the user, the example.
    with django_assert_max_num_queries(2):
        client.get(f"/tasks/sentiment/examples/{example.pk}/status")
    client.force_login(validators[0])
    client.get("/tasks/sentiment/validate")  # warm-up: the validator's session
    # 3: the user, the next example (one index range of the queue: a fooling example waits;
    # at most three ranges when there is none), the progress line's count of today's verdicts.
    with django_assert_max_num_queries(3):
        assert 'name="example_id"' in client.get("/tasks/sentiment/validate").content.decode()


def test_the_live_job_wakes_the_waiting_page_as_soon_as_the_answer_is_stored(
    client, worker, sentiment_model
):
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    example = Example.objects.get()
    job_id = live_loop.live_job_id(example.pk, 1)
    assert live_loop.wait_for_job(job_id, 0.05) is False  # nothing ran yet
    assert live_loop.wait_for_live_answer(job_id, 0.05) is None
    # Answer outside RQ: no RQ result exists, the drain's own signal wakes the page.
    drain.answer_batch([(example.pk, 1)])
    assert live_loop.wait_for_job(job_id, 0.05) is True
    example.refresh_from_db()
    assert example.status == ExampleStatus.MODEL_ANSWERED
    # The signal carries what the drain stored: the page needs no read-back query.
    answer = live_loop.wait_for_live_answer(job_id, 0.05)
    stored = {name: getattr(example, name) for name in MODEL_ANSWER_FIELDS}
    assert answer == stored
    # Another attempt of the same example has a signal of its own.
    assert live_loop.wait_for_job(live_loop.live_job_id(example.pk, 2), 0.05) is False


# -- the next example, from the verdict page ----------


def _next_form(html: str) -> dict:
    section = html[html.index('id="write-another"') :]
    return {
        "context_id": re.search(r'name="context_id" value="(\d+)"', section).group(1),
        "started_at": re.search(r'name="started_at" value="([^"]+)"', section).group(1),
        "section": section,
    }


def test_the_verdict_page_carries_the_form_of_the_next_example_on_the_same_context(
    client, worker, sentiment_task
):
    ContextFactory.create_batch(3, task=sentiment_task)
    client.force_login(worker)
    first = submit(client, "sentiment", statement=POSITIVE, label="positive")
    assert first.status_code == 200
    html = first.content.decode()
    example = Example.objects.get()
    following = _next_form(html)
    assert following["context_id"] == str(example.context_id)
    assert 'id="next-context"' in following["section"]  # a new context is one click away
    assert 'name="statement"' in following["section"] and POSITIVE not in following["section"]

    second = client.post(
        "/tasks/sentiment/create",
        {
            "context_id": following["context_id"],
            "started_at": following["started_at"],
            "statement": "The service was slow and the soup was cold.",
            "label": "negative",
        },
    )
    assert second.status_code == 200
    examples = list(Example.objects.order_by("pk"))
    assert len(examples) == 2
    assert examples[1].context_id == examples[0].context_id
    assert examples[1].time_spent_ms is not None  # the form's own start time was signed
    # Every verdict page brings a form with a start time of its own.
    assert _next_form(second.content.decode())["started_at"] != following["started_at"]


def test_the_next_form_keeps_the_input_when_the_worker_retains_it(client, worker, sentiment_task):
    ContextFactory(task=sentiment_task)
    client.force_login(worker)
    hostile = '<script>alert("x")</script> "quoted" & more'
    response = submit(client, "sentiment", statement=hostile, label="neutral", retain_input="on")
    section = _next_form(response.content.decode())["section"]
    assert "<script>alert" not in section
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in section
    assert re.search(r'name="retain_input"[^>]*checked', section)


def test_no_next_form_once_the_campaign_quota_is_reached(client, sentiment_task, owner):
    ContextFactory(task=sentiment_task)
    from tests.factories import CampaignFactory, CampaignWorkerFactory

    campaign = CampaignFactory(task=sentiment_task, quota=1, created_by=owner)
    worker = CampaignWorkerFactory(campaign=campaign)
    campaign_session(client, worker)
    response = submit(client, "sentiment", statement=POSITIVE, label="positive")
    html = response.content.decode()
    assert 'id="write-another"' not in html
    assert ">Finish<" in html


def test_a_finished_drain_job_is_kept_briefly_and_the_signal_outlives_it(
    client, worker, sentiment_model, settings
):
    """RQ keeps a drain job that ended normally for ``ANNOTATION_LIVE_RESULT_TTL`` seconds only
    (at 100 submissions/s a longer stay piles job records up in Redis); the example's own
    signal still wakes a late waiter, and the example holds the outcome."""
    from rq.job import Job

    settings.ANNOTATION_LIVE_RESULT_TTL = 45
    client.force_login(worker)
    submit(client, "sentiment", statement=POSITIVE, label="negative")
    example = Example.objects.get()
    connection = django_rq.get_queue(LIVE_QUEUE).connection
    [drain_id] = django_rq.get_queue(LIVE_QUEUE).job_ids
    assert Job.fetch(drain_id, connection=connection).result_ttl == 45
    run_jobs()
    assert 0 < connection.ttl(Job.key_for(drain_id)) <= 45
    assert Job.fetch(drain_id, connection=connection).return_value() == {"examples": 1}
    job_id = live_loop.live_job_id(example.pk, 1)
    assert live_loop.wait_for_live_answer(job_id, 0.05)["status"] == ExampleStatus.MODEL_ANSWERED
    example.refresh_from_db()
    assert example.status == ExampleStatus.MODEL_ANSWERED


def test_the_pages_of_an_ascii_task_are_ascii(client, worker, sentiment_model):
    """No typographic character of our own in the hot pages (entities instead): one character
    outside Latin-1 makes Python build and encode the whole page two bytes a character."""
    client.force_login(worker)
    page = open_form(client, "sentiment")
    assert page["goal"] and "&ldquo;" in page["html"]
    assert page["html"].isascii()
    verdict = submit(client, "sentiment", statement=POSITIVE, label="negative")
    assert verdict.status_code == 200 and verdict.content.isascii()
    assert client.get("/tasks/sentiment/validate").content.isascii()


def test_the_goal_text_escapes_the_label():
    from annotation.display import goal_text

    text = goal_text(None, '<img src=x onerror="alert(1)">')
    assert "<img" not in text and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text


def test_the_example_links_are_the_routes_of_its_actions():
    from types import SimpleNamespace

    from annotation.views.pages import EXAMPLE_ACTIONS, example_urls

    urls = example_urls(SimpleNamespace(code="sentiment"), SimpleNamespace(pk=42))
    assert urls["page"] == reverse("annotation:example", args=["sentiment", 42])
    for action in EXAMPLE_ACTIONS:
        assert urls[action] == reverse(f"annotation:example_{action}", args=["sentiment", 42])
