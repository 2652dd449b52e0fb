"""A small platform for the security tests: one task with every kind of object, seven roles.

Roles (``ROLES``, in the order the matrix lists them):

- ``anonymous``: no session;
- ``campaign``: a crowd worker who entered through the task's create-campaign link;
- ``worker``: a signed-in user with no tasks (wrote ``world.example``);
- ``other_owner``: a staff user who owns another task;
- ``staff``: ``is_staff`` with no tasks and no permissions;
- ``owner``: a staff owner of ``world.task``;
- ``superuser``.

Everything is created through the services where one exists, so the objects look like the
ones the site makes.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

from django.test import Client

from tests.factories import (
    CampaignFactory,
    ContextFactory,
    ExampleFactory,
    ModelFactory,
    TaskFactory,
    UserFactory,
)

ROLES = ("anonymous", "campaign", "worker", "other_owner", "staff", "owner", "superuser")

# Marks placed in the gold fields of the datasets: they must never reach a non-owner.
GOLD_MARK_HIDDEN = "goldmarkhiddenqz"
GOLD_MARK_STANDARD = "goldmarkstandardqz"
GOLD_MARK_SCORING = "goldmarkscoringqz"
# Secrets that must never reach a page, a log line or an error.
MODEL_TOKEN = "sk-live-TOKEN-never-shown-0123456789abcdef"


@dataclass
class World:
    task: Any
    other_task: Any
    hidden_task: Any
    users: dict[str, Any]
    round: Any
    context: Any
    example: Any
    campaign: Any
    campaign_worker: Any = None
    model: Any = None
    model_with_token: Any = None
    datasets: dict[str, Any] = field(default_factory=dict)
    fork: Any = None
    snapshot: Any = None
    run: Any = None
    # The worker's own model and its run on the hidden dataset (the sealed view).
    worker_model: Any = None
    hidden_run: Any = None
    proposal: Any = None
    upload: Any = None
    # A chat task (owned by ``owner``) and two conversations of ``worker`` on it: one
    # active, with a turn whose replies are stored, and one finished (an example).
    chat_task: Any = None
    conversation: Any = None
    turn: Any = None
    reply: Any = None
    finished_conversation: Any = None
    # An arena task (owned by ``owner``, its battles sealed) over two chat models, and two
    # battles of ``worker``: one answered and not voted yet (identities hidden), one voted;
    # and a snapshot of its board.
    arena_task: Any = None
    battle: Any = None
    voted_battle: Any = None
    arena_snapshot: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def _import_dataset(task, owner, slug: str, access_type: str, mark: str):
    """Import a two-line sentiment dataset whose inputs carry ``mark``."""
    from leaderboards.services.datasets import dataset_import

    lines = [
        {"uid": f"{slug}-1", "statement": "The food was great.", "label": "positive"},
        {"uid": f"{slug}-2", "statement": "The service was awful.", "label": "negative"},
    ]
    for line in lines:
        line["context"] = f"Say something about {mark}."
    stream = io.BytesIO("\n".join(json.dumps(line) for line in lines).encode())
    return dataset_import(
        task,
        stream,
        name=f"Dataset {slug}",
        slug=slug,
        filename=f"{slug}.jsonl",
        access_type=access_type,
        user=owner,
        evaluate=False,
    )


def build_world(with_datasets: bool = True) -> World:
    owner = UserFactory(username="sec-owner", is_staff=True)
    other_owner = UserFactory(username="sec-other-owner", is_staff=True)
    users = {
        "worker": UserFactory(username="sec-worker"),
        "other_owner": other_owner,
        "staff": UserFactory(username="sec-staff", is_staff=True),
        "owner": owner,
        "superuser": UserFactory(username="sec-root", is_staff=True, is_superuser=True),
    }
    task = TaskFactory(code="sec", owners=[owner])
    other_task = TaskFactory(code="sec-other", owners=[other_owner])
    hidden_task = TaskFactory(code="sec-hidden", owners=[owner], hidden=True)
    round_ = task.rounds.get(number=1)
    context = ContextFactory(task=task, round=round_)
    example = ExampleFactory(task=task, round=round_, context=context, user=users["worker"])
    campaign = CampaignFactory(task=task, round=round_, created_by=owner, quota=50)
    model = ModelFactory(task=task, owner=owner, name="sec-model")
    model_with_token = ModelFactory(
        task=task,
        owner=owner,
        name="sec-endpoint-model",
        protocol="dynatask",
        endpoint_url="http://127.0.0.1:9/",
        auth_token=MODEL_TOKEN,
        is_published=True,
    )
    world = World(
        task=task,
        other_task=other_task,
        hidden_task=hidden_task,
        users=users,
        round=round_,
        context=context,
        example=example,
        campaign=campaign,
        model=model,
        model_with_token=model_with_token,
    )
    if with_datasets:
        _add_leaderboard_objects(world)
    _add_proposal(world)
    _add_upload(world)
    _add_chat(world)
    _add_arena(world)
    return world


def _add_leaderboard_objects(world: World) -> None:
    from leaderboards.models import (
        EvaluationRun,
        LeaderboardFork,
        LeaderboardSnapshot,
        RunStatus,
        RunTrigger,
        Score,
    )

    owner = world.users["owner"]
    world.datasets = {
        "scoring": _import_dataset(world.task, owner, "sec-scoring", "scoring", GOLD_MARK_SCORING),
        "standard": _import_dataset(
            world.task, owner, "sec-standard", "standard", GOLD_MARK_STANDARD
        ),
        "hidden": _import_dataset(world.task, owner, "sec-hidden", "hidden", GOLD_MARK_HIDDEN),
    }
    scoring = world.datasets["scoring"]
    world.run = EvaluationRun.objects.create(
        model=world.model,
        dataset=scoring,
        config_version=scoring.config_version,
        status=RunStatus.DONE,
        trigger=RunTrigger.RERUN,
        total=2,
        done=2,
        requested_by=owner,
    )
    for dataset in world.datasets.values():
        Score.objects.create(
            model=world.model,
            dataset=dataset,
            run=world.run if dataset == scoring else None,
            config_version=dataset.config_version,
            metrics={"macro_f1": 0.5},
            main_metric="macro_f1",
            main_value=0.5,
            example_count=2,
        )
    _add_hidden_figures(world)
    world.fork = LeaderboardFork.objects.create(
        task=world.task,
        name="Sec fork",
        slug="sec-fork",
        weights={"metrics": {"macro_f1": 1}, "datasets": {}},
        created_by=world.users["worker"],
    )
    world.snapshot = LeaderboardSnapshot.objects.create(
        task=world.task,
        name="Sec snapshot",
        weights={"metrics": {}, "datasets": {}},
        table={"rows": []},
        created_by=owner,
    )


# Two versions of every figure of the hidden dataset (``set_hidden_figures``): whoever may not
# see them gets the same answer from every surface under both.
HIDDEN_FIGURE_VERSIONS = (
    {
        "value": 0.8642,
        "ci": (0.7531, 0.9753),
        "per_tag": {"hiddentagqz": 0.4321},
        "failed": 1,
        "error": "errormarkqz: the metric could not be computed",
        "label": "positive",
    },
    {
        "value": 0.1357,
        "ci": (0.0246, 0.2468),
        "per_tag": {"othertagqz": 0.9876},
        "failed": 0,
        "error": "anothermarkqz: a different failure",
        "label": "negative",
    },
)


def _add_hidden_figures(world: World) -> None:
    """Give the worker a published model evaluated on the hidden dataset: a failed run whose
    stored error is not the model's own, its predictions and its Score."""
    from leaderboards.models import EvaluationRun, Prediction, RunStatus, RunTrigger, Score

    hidden = world.datasets["hidden"]
    # The owners let others' models see the inputs, so the worker's model gets a run.
    hidden.inputs_to_others = True
    hidden.save(update_fields=["inputs_to_others"])
    world.worker_model = ModelFactory(
        task=world.task, owner=world.users["worker"], name="sec-worker-model"
    )
    world.hidden_run = EvaluationRun.objects.create(
        model=world.worker_model,
        dataset=hidden,
        config_version=hidden.config_version,
        status=RunStatus.FAILED,
        trigger=RunTrigger.MODEL_REGISTERED,
        total=2,
        done=2,
        error_code="run.finalize_failed",
    )
    Prediction.objects.bulk_create(
        Prediction(run=world.hidden_run, example=example, output={})
        for example in hidden.examples.all()
    )
    Score.objects.create(
        model=world.worker_model,
        dataset=hidden,
        run=world.hidden_run,
        config_version=hidden.config_version,
        main_metric="macro_f1",
    )
    set_hidden_figures(world, 0)


def set_hidden_figures(world: World, version: int) -> None:
    """Write version ``version`` of ``HIDDEN_FIGURE_VERSIONS`` into every figure of the hidden
    dataset: both models' scores (value, CI, metrics, per tag), the worker's run (failed
    count, error text) and its predictions (per-example results)."""
    from leaderboards.models import EvaluationRun, Prediction, Score

    figures = HIDDEN_FIGURE_VERSIONS[version]
    low, high = figures["ci"]
    per_tag = {tag: {"macro_f1": value} for tag, value in figures["per_tag"].items()}
    for score in Score.objects.filter(dataset=world.datasets["hidden"]):
        score.main_value = figures["value"]
        score.ci_low, score.ci_high = low, high
        score.metrics = {"macro_f1": figures["value"], "accuracy": figures["value"]}
        score.per_tag = per_tag
        score.main_per_tag = dict(figures["per_tag"])
        score.example_count = 2
        score.save()
    EvaluationRun.objects.filter(pk=world.hidden_run.pk).update(
        failed_count=figures["failed"],
        error_message=figures["error"],
        first_bad_response=figures["error"],
    )
    Prediction.objects.filter(run=world.hidden_run).update(
        output={"label": figures["label"], "prob": {figures["label"]: 1.0}}
    )


# The names the chat models answer with (``model_version``): never shown while hidden.
CHAT_MODEL_NAMES = ("sec-chat-alpha", "sec-chat-beta")


def _chat_turn(conversation, actor, message: str, choose: bool):
    """A turn of ``conversation`` whose replies are stored as the pump stores them (no model
    is called: the rows are written as a finished stream leaves them)."""
    from django.utils import timezone

    from annotation.chat import services
    from annotation.chat.models import ChatReply, ReplyStatus

    turn = services.turn_send(conversation, actor, message)
    for reply in ChatReply.objects.filter(turn=turn).select_related("model"):
        reply.status = ReplyStatus.DONE
        reply.text = f"An answer to {message!r}."
        reply.model_version = reply.model.name
        reply.finish_reason = "stop"
        reply.finished_at = timezone.now()
        reply.save()
    if choose:
        services.turn_choose(conversation, actor, turn.pk, "tie", None, 50)
    return turn


def _add_chat_models(task, owner, names) -> None:
    """Chat models (no server behind them: nothing calls them) in the task's first round."""
    from models_hub.models import RoundModel

    round_ = task.rounds.get(number=1)
    for name in names:
        model = ModelFactory(
            task=task,
            owner=owner,
            name=name,
            protocol="openai_chat",
            endpoint_url="http://127.0.0.1:9/v1",
            options={"model": name},
        )
        RoundModel.objects.create(round=round_, model=model)


def _add_chat(world: World) -> None:
    """A chat task with two chat models in its loop; ``worker`` holds an active conversation
    (one turn, answered, not chosen yet) and a finished one (an example in the queue)."""
    from annotation.campaigns.actors import Actor
    from annotation.chat import services
    from annotation.chat.models import ChatReply

    owner = world.users["owner"]
    task = TaskFactory(code="sec-chat", config_name="chat", owners=[owner])
    round_ = task.rounds.get(number=1)
    _add_chat_models(task, owner, CHAT_MODEL_NAMES)
    actor = Actor(user=world.users["worker"])
    finished = services.conversation_start(task=task, round_=round_, actor=actor)
    _chat_turn(finished, actor, "Why is Mars red?", choose=True)
    _chat_turn(finished, actor, "What is tea?", choose=True)
    services.conversation_finish(
        finished, actor, services.FinishForm(fooled_positions=(0,), rating=4, metadata={})
    )
    conversation = services.conversation_start(task=task, round_=round_, actor=actor)
    world.turn = _chat_turn(conversation, actor, "What is a bicycle?", choose=False)
    world.reply = ChatReply.objects.filter(turn=world.turn).order_by("position").first()
    world.chat_task, world.conversation = task, conversation
    finished.refresh_from_db()
    world.finished_conversation = finished


# The arena's models: never shown before the vote.
ARENA_MODEL_NAMES = ("sec-arena-alpha", "sec-arena-beta")


def _add_arena(world: World) -> None:
    """A sealed arena task with two chat models; ``worker`` holds a battle whose turn is
    answered but not voted yet, and a voted one (on the board); the owner froze the board."""
    import numpy as np

    from annotation.arena import services
    from annotation.arena.selectors import battle_for_actor
    from annotation.campaigns.actors import Actor
    from tests.factories import demo_config

    owner = world.users["owner"]
    config = demo_config("arena").replace("sealed: false", "sealed: true")
    assert "sealed: true" in config
    task = TaskFactory(code="sec-arena", yaml_text=config, owners=[owner])
    _add_chat_models(task, owner, ARENA_MODEL_NAMES)
    round_ = task.rounds.get(number=1)
    actor = Actor(user=world.users["worker"])
    rng = np.random.default_rng(0)
    voted = services.battle_start(task=task, round_=round_, actor=actor, rng=rng)
    _chat_turn(voted.conversation, actor, "Why is Mars red?", choose=False)
    services.battle_vote(battle_for_actor(voted.pk, actor), actor, "a")
    battle = services.battle_start(task=task, round_=round_, actor=actor, rng=rng)
    _chat_turn(battle.conversation, actor, "What is a bicycle?", choose=False)
    world.arena_task = task
    world.battle = battle_for_actor(battle.pk, actor)
    world.voted_battle = battle_for_actor(voted.pk, actor)
    world.arena_snapshot = services.snapshot_create(task, by=owner, name="Sec arena")


def _add_upload(world: World) -> None:
    """A big contexts upload that a job imported (its page and API status are the owners')."""
    from tasks.models import UploadJob, UploadKind, UploadStatus

    world.upload = UploadJob.objects.create(
        task=world.task,
        kind=UploadKind.CONTEXTS,
        user=world.users["owner"],
        filename="contexts.jsonl",
        size=100,
        status=UploadStatus.DONE,
        rows=2,
    )


def _add_proposal(world: World) -> None:
    from tasks.models import TaskProposal

    world.proposal = TaskProposal.objects.create(
        proposer=world.users["worker"],
        code="sec-proposed",
        name="Proposed",
        description="A proposed task.",
    )


def campaign_client(world: World, external_id: str = "sec-crowd-1", **client_kwargs) -> Client:
    """A client whose session holds a campaign worker (entered through the signed link)."""
    from annotation.campaigns.links import campaign_link_path
    from annotation.models import CampaignWorker

    client = Client(**client_kwargs)
    response = client.get(campaign_link_path(world.campaign) + external_id)
    assert response.status_code == 302, response.status_code
    world.campaign_worker = CampaignWorker.objects.get(
        campaign=world.campaign, external_id=external_id
    )
    return client


def role_client(world: World, role: str, **client_kwargs) -> Client:
    """A test client signed in as ``role``."""
    if role == "anonymous":
        return Client(**client_kwargs)
    if role == "campaign":
        return campaign_client(world, **client_kwargs)
    client = Client(**client_kwargs)
    client.force_login(world.users[role])
    return client
