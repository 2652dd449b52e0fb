"""The expected outcome of every URL for every role.

Columns, in ``ROLES`` order::

    anonymous, campaign, worker, other_owner, staff, owner, superuser

``world.task`` is public and active; ``owner`` owns it, ``other_owner`` owns another task,
``worker`` wrote ``world.example``; ``campaign`` is a crowd worker of its create campaign.
Outcomes: a status code, ``"login"`` (redirected to a login page), ``"302"`` (another redirect).
"""

from __future__ import annotations

import os

from tests.security.probe import Check
from tests.security.urlwalk import Route
from tests.security.world import ROLES

L = "login"
R = "302"


def row(*outcomes, method: str = "GET", **options) -> Check:
    assert len(outcomes) == len(ROLES), outcomes
    return Check(expect=dict(zip(ROLES, outcomes, strict=True)), method=method, **options)


def everyone(outcome, **options) -> Check:
    return row(*([outcome] * len(ROLES)), **options)


def _example_data(world) -> dict:
    return {"context_id": world.context.pk, "statement": "A fine day.", "label": "positive"}


def _example_pk(world) -> dict:
    return {"pk": world.example.pk}


def _example_code_pk(world) -> dict:
    return {"code": world.task.code, "pk": world.example.pk}


def _campaign_bindings(world) -> list:
    return list(world.campaign.workers.order_by("pk").values_list("external_id", "binding_hash"))


def _campaign_worker_row(world):
    return world.campaign.workers.get_or_create(external_id="sec-admin-row")[0]


def _validate_data(world) -> dict:
    return {"example_id": world.example.pk, "label": "correct"}


def _chat(**extra):
    """Path arguments of the chat pages: the chat task, ``worker``'s active conversation and
    its turn or first reply (``extra``: ``turn_id=True``, ``reply_id=True``)."""

    def kwargs(world) -> dict:
        values = {"code": world.chat_task.code, "pk": world.conversation.pk}
        if extra.get("turn_id"):
            values["turn_id"] = world.turn.pk
        if extra.get("reply_id"):
            values["reply_id"] = world.reply.pk
        if extra.get("api"):
            del values["code"]
        return values

    return kwargs


def _chat_code(world) -> dict:
    return {"code": world.chat_task.code}


def _turn_state(world):
    from annotation.chat.models import ChatReply, ChatTurn

    turns = list(ChatTurn.objects.filter(conversation=world.conversation).values_list())
    replies = list(ChatReply.objects.filter(turn__conversation=world.conversation).values_list())
    return turns, replies


def _conversation_state(world):
    return _conversation_state_of(world.conversation)


def _conversation_count(world) -> int:
    return world.chat_task.conversations.count()


def _arena_code(world) -> dict:
    return {"code": world.arena_task.code}


def _battle(api: bool = False):
    """Path arguments of ``worker``'s battle that waits for its vote (the arena's pages take
    the task's code too)."""

    def kwargs(world) -> dict:
        values = {"pk": world.battle.pk}
        if not api:
            values["code"] = world.arena_task.code
        return values

    return kwargs


def _battle_state(world):
    from annotation.arena.models import ArenaBattle

    battle = ArenaBattle.objects.filter(pk=world.battle.pk).values_list().get()
    return battle, _conversation_state_of(world.battle.conversation)


def _conversation_state_of(conversation):
    return type(conversation).objects.filter(pk=conversation.pk).values_list().get()


def _battle_count(world) -> int:
    return world.arena_task.battles.count()


def _arena_snapshot_count(world) -> int:
    return world.arena_task.arena_snapshots.count()


def _arena_exclusion_count(world) -> int:
    return world.arena_task.arena_exclusions.count()


def _exclusion_data(world) -> dict:
    return {"rater": f"u:{world.users['worker'].pk}", "reason": "Votes at random."}


SIGNED_IN = ("worker", "other_owner", "staff", "owner", "superuser")


# --- named routes ---------------------------------------------------------------------------
P = "POST"
MATRIX: dict[str, Check] = {
    # the load balancer's health check: open to all, no figures in it
    "readyz": everyone(200),
    # accounts
    "login": everyone(200),
    "logout": everyone(R, method=P),
    "password_change": row(L, L, 200, 200, 200, 200, 200),
    "password_change_done": row(L, L, 200, 200, 200, 200, 200),
    "password_reset": everyone(200),
    "password_reset_done": everyone(200),
    "password_reset_confirm": everyone(200),
    "password_reset_complete": everyone(200),
    "api_tokens": row(L, L, 200, 200, 200, 200, 200),
    # tasks
    "tasks:home": everyone(200),
    "tasks:leaderboards": everyone(200),
    "tasks:detail": everyone(200),
    "tasks:propose": row(L, L, 200, 200, 200, 200, 200),
    "tasks:profile": row(L, L, 200, 200, 200, 200, 200),
    # Sign-up: visitors get the form (open by default); a signed-in user goes home.
    "tasks:signup": row(200, 200, R, R, R, R, R),
    "tasks:documentation": everyone(200, kwargs=lambda w: {"slug": "task-config"}),
    # A big upload imported by a job: its page and status are for the task's owners.
    "tasks:upload": row(404, 404, 404, 404, 404, 200, 200, kwargs=lambda w: {"pk": w.upload.pk}),
    "tasks:upload_progress": row(
        404, 404, 404, 404, 404, 200, 200, kwargs=lambda w: {"pk": w.upload.pk}
    ),
    # models hub
    "models_hub:detail": everyone(200),
    "models_hub:health": everyone(200),
    "models_hub:edit": row(L, L, 403, 403, 403, 200, 200),
    "models_hub:loop": row(L, L, 403, 403, 403, 200, 200),
    "models_hub:loop_health": row(L, L, 403, 403, 403, 200, 200),
    "models_hub:register": row(L, L, 200, 200, 200, 200, 200),
    # annotation: create, validate, one example
    "annotation:create": row(L, 200, 200, 200, 200, 200, 200),
    "annotation:validate": row(L, 403, 200, 200, 200, 200, 200),
    "annotation:example": row(L, 404, 200, 404, 404, 200, 200),
    "annotation:example_status": row(L, 404, 200, 404, 404, 200, 200),
    # Only the writer acts on an example; owners see it but cannot act for the writer.
    "annotation:example_flag": row(L, 404, R, 404, 404, R, R, method=P),
    "annotation:example_unflag": row(L, 404, R, 404, 404, R, R, method=P),
    "annotation:example_metadata": row(L, 404, R, 404, 404, R, R, method=P),
    "annotation:example_retract": row(L, 404, R, 404, 404, R, R, method=P),
    "annotation:example_retry": row(L, 404, R, 404, 404, R, R, method=P),
    "annotation:example_verdict": row(L, 404, R, 404, 404, R, R, method=P),
    "annotation:review": row(L, 403, 403, 403, 403, 200, 200),
    "annotation:review_submit": row(
        L, 403, 403, 403, 403, R, R, method=P, data=lambda w: {"label": "correct"}
    ),
    # A sandbox job id is a random UUID, unguessable; an unknown one is "expired".
    "annotation:sandbox_status": row(L, 200, 200, 200, 200, 200, 200),
    # stats, campaigns, export
    "annotation:stats": everyone(200),
    "annotation:workers": everyone(200),
    "annotation:export": row(403, 403, 403, 403, 403, 200, 200),
    "annotation:campaigns": row(403, 403, 403, 403, 403, 200, 200),
    "annotation:campaign_csv": row(403, 403, 403, 403, 403, 200, 200),
    "annotation:campaign_toggle": row(403, 403, 403, 403, 403, R, R, method=P),
    "annotation:campaign_done": row(403, 200, 403, 403, 403, 403, 403),
    # Every role opens the link with one worker id: the first browser binds it, every other
    # browser is refused until an owner releases it.
    "annotation:campaign_enter": row(
        R,
        403,
        403,
        403,
        403,
        403,
        403,
        path=lambda w: __import__("annotation.campaigns.links", fromlist=["x"]).campaign_link_path(
            w.campaign
        )
        + "matrix-visitor",
    ),
    "annotation:campaign_detail": row(403, 403, 403, 403, 403, 200, 200),
    # The campaign role's own id: only owners may free it from its browser.
    "annotation:campaign_release": row(
        403,
        403,
        403,
        403,
        403,
        R,
        R,
        method=P,
        data=lambda w: {"external_id": w.campaign_worker.external_id},
        effect=_campaign_bindings,
        allowed=("owner", "superuser"),
    ),
    "annotation:campaign_signed_links": row(
        403,
        403,
        403,
        403,
        403,
        R,
        R,
        method=P,
        effect=lambda w: type(w.campaign).objects.get(pk=w.campaign.pk).signed_worker_links,
        allowed=("owner", "superuser"),
    ),
    "annotation:campaign_links_csv": row(
        403,
        403,
        403,
        403,
        403,
        200,
        200,
        method=P,
        data=lambda w: {"worker_ids": "sec-link-1\nsec-link-2"},
    ),
    # Chat tasks (docs/chat.md). The world's chat task is public and active, and every
    # signed-in user may chat on it; the campaign role's link is for another task.
    "annotation:chat_home": row(L, 403, 200, 200, 200, 200, 200, kwargs=_chat_code),
    # A conversation is its worker's alone: others get a 404, whoever they are.
    "annotation:chat_page": row(L, 404, 200, 404, 404, 404, 404, kwargs=_chat()),
    "annotation:chat_turn": row(L, 404, 200, 404, 404, 404, 404, kwargs=_chat(turn_id=True)),
    "annotation:chat_reply_box": row(L, 404, 200, 404, 404, 404, 404, kwargs=_chat(reply_id=True)),
    # The reply is stored: its stream replays it from the row.
    "annotation:chat_reply_stream": row(
        L, 404, 200, 404, 404, 404, 404, kwargs=_chat(reply_id=True)
    ),
    # The last turn waits for the worker's choice: a new message is refused (409).
    "annotation:chat_send": row(
        L,
        404,
        409,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(),
        data=lambda w: {"message": "Hello there."},
        effect=_turn_state,
        allowed=("worker",),
    ),
    "annotation:chat_choose": row(
        L,
        404,
        200,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(turn_id=True),
        data=lambda w: {"choice": "tie"},
        effect=_turn_state,
        allowed=("worker",),
    ),
    # The reply is done: nothing to retry (409); a cancel of a finished reply is a no-op.
    "annotation:chat_reply_retry": row(
        L,
        404,
        409,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(reply_id=True),
        effect=_turn_state,
        allowed=("worker",),
    ),
    "annotation:chat_reply_cancel": row(
        L,
        404,
        204,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(reply_id=True),
        effect=_turn_state,
        allowed=("worker",),
    ),
    # One turn of the two the config asks for: the finish is refused (400, on the page).
    "annotation:chat_finish": row(
        L,
        404,
        400,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(),
        effect=_conversation_state,
        allowed=("worker",),
    ),
    # The owners' fooling rates and exports.
    "annotation:chat_results": row(L, L, 403, 403, 403, 200, 200, kwargs=_chat_code),
    "annotation:chat_export": row(
        L, L, 403, 403, 403, 200, 200, kwargs=lambda w: {**_chat_code(w), "kind": "conversations"}
    ),
    # The arena (docs/leaderboard.md, "Arena ratings"). ``world.arena_task`` is public, active
    # and sealed; every signed-in user may battle on it; the campaign role's link is for
    # another task.
    "annotation:arena_home": row(L, 403, 200, 200, 200, 200, 200, kwargs=_arena_code),
    # A battle is its worker's alone: others get a 404, whoever they are (owners included).
    "annotation:arena_battle": row(L, 404, 200, 404, 404, 404, 404, kwargs=_battle()),
    # Both models answered: the worker's vote is taken (and reveals them), nobody else's.
    "annotation:arena_vote": row(
        L,
        404,
        R,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_battle(),
        data=lambda w: {"vote": "a"},
        effect=_battle_state,
        allowed=("worker",),
    ),
    # The board, its JSON and CSV and its snapshots are public, like the Dynascore board.
    "annotation:arena_board": everyone(200, kwargs=_arena_code),
    "annotation:arena_board_json": everyone(200, kwargs=_arena_code),
    "annotation:arena_board_csv": everyone(200, kwargs=_arena_code),
    # Refusals redirect back to the board with a message: the effect check is what counts.
    "annotation:arena_snapshot_create": everyone(
        R,
        method=P,
        kwargs=_arena_code,
        data=lambda w: {"name": "Snap"},
        effect=_arena_snapshot_count,
        allowed=("owner", "superuser"),
    ),
    "annotation:arena_snapshot": everyone(
        200, kwargs=lambda w: {**_arena_code(w), "snapshot_id": w.arena_snapshot.pk}
    ),
    # The owners' page (raters' agreement with their names, exclusions).
    "annotation:arena_manage": row(L, 403, 403, 403, 403, 200, 200, kwargs=_arena_code),
    # The arena is sealed: its battles and conversations are for its owners.
    "annotation:arena_battles_export": row(L, 403, 403, 403, 403, 200, 200, kwargs=_arena_code),
    # leaderboards
    "leaderboards:task": everyone(200),
    "leaderboards:task_csv": everyone(200),
    "leaderboards:task_json": everyone(200),
    "leaderboards:fork": everyone(200),
    # Refusals redirect back to the board with a message: the effect check is what counts.
    "leaderboards:fork_create": everyone(
        R,
        method=P,
        data=lambda w: {"name": "A fork", "w_macro_f1": "2"},
        effect=lambda w: w.task.forks.count(),
        allowed=("worker", "other_owner", "staff", "owner", "superuser"),
    ),
    "leaderboards:snapshot": everyone(200),
    "leaderboards:snapshot_create": everyone(
        R,
        method=P,
        data=lambda w: {"name": "Snap"},
        effect=lambda w: w.task.snapshots.count(),
        allowed=("owner", "superuser"),
    ),
    "leaderboards:model": everyone(200),
    "leaderboards:dataset_list": everyone(200),
    "leaderboards:dataset_detail": everyone(200),
    "leaderboards:dataset_inputs": everyone(200),
    "leaderboards:dataset_upload": row(L, L, 403, 403, 403, 200, 200),
    "leaderboards:dataset_perturb": row(L, L, 403, 403, 403, R, R, method=P),
    "leaderboards:run_detail": everyone(200),
    "leaderboards:run_progress": everyone(200),
    "leaderboards:run_retry": row(L, L, 403, 403, 403, R, R, method=P),
    "leaderboards:model_runs_progress": everyone(200),
    "leaderboards:predictions_upload": row(L, L, 403, 403, 403, 200, 200),
    # REST API (session auth here; token auth is tested in tests/api)
    "api-docs": everyone(200),
    "api-schema": everyone(200),
    "<^api/>": everyone(404, path=lambda w: "/api/v1/no-such-endpoint/"),
    "<favicon.ico>": everyone(R, path=lambda w: "/favicon.ico"),  # to the static SVG icon
    "api:task-list": everyone(200),
    "api:task-detail": everyone(200),
    "api:round-list": everyone(200),
    "api:round-loop": row(401, 401, 403, 403, 403, 200, 200),
    "api:context-sample": row(401, 401, 200, 200, 200, 200, 200),
    # Uploads are multipart: a JSON body is refused (415) once the caller may upload at all.
    "api:context-upload": row(401, 401, 403, 403, 403, 415, 415, method=P),
    "api:upload-detail": row(
        404, 404, 404, 404, 404, 200, 200, kwargs=lambda w: {"pk": w.upload.pk}
    ),
    "api:model-list": everyone(200),
    "api:model-detail": everyone(200),
    "api:model-publish": row(
        401,
        401,
        403,
        403,
        403,
        200,
        200,
        method=P,
        data=lambda w: {"published": True},
        kwargs=lambda w: {"pk": w.model.pk},
    ),
    "api:model-rounds": row(
        401, 401, 403, 403, 403, 200, 200, method="PUT", data=lambda w: {"rounds": []}
    ),
    "api:model-runs": everyone(200),
    "api:model-scores": everyone(200),
    "api:model-predictions": row(401, 401, 403, 403, 403, 415, 415, method=P),
    "api:run-detail": everyone(200),
    # The run is done: nothing to retry (400) once the caller may retry at all.
    "api:run-retry": row(401, 401, 403, 403, 403, 400, 400, method=P),
    "api:dataset-list": everyone(200),
    "api:dataset-detail": everyone(200),
    # The scoring dataset's inputs are public; its gold is not (see test_gold_leakage).
    "api:dataset-examples": everyone(200),
    "api:leaderboard": everyone(200),
    "api:fork-list": everyone(200),
    "api:fork-detail": everyone(200),
    "api:snapshot-list": everyone(200),
    "api:snapshot-detail": everyone(200),
    "api:example-list": row(401, 401, 200, 200, 200, 200, 200),
    "api:example-detail": row(401, 401, 200, 404, 404, 200, 200, kwargs=_example_pk),
    # Only the writer acts on an example; owners see it (403), others do not (404).
    "api:example-flag": row(401, 401, 200, 404, 404, 403, 403, method=P, kwargs=_example_pk),
    "api:example-retract": row(401, 401, 200, 404, 404, 403, 403, method=P, kwargs=_example_pk),
    "api:example-retry": row(401, 401, 409, 404, 404, 403, 403, method=P, kwargs=_example_pk),
    "api:example-verdict": row(
        401,
        401,
        409,
        404,
        404,
        403,
        403,
        method=P,
        kwargs=_example_pk,
        data=lambda w: {"model_wrong": True},
    ),
    "api:export": row(401, 401, 403, 403, 403, 200, 200),
    # The writer may not validate their own example; the third matching verdict settles it.
    "api:validation-create": row(401, 401, 403, 201, 201, 201, 409, method=P, data=_validate_data),
    "api:validation-next": row(401, 401, 200, 200, 200, 200, 200),
    # conversations (chat tasks): the API acts for signed-in users only.
    "api:task-config-schema": everyone(200),
    # Every signed-in user may chat on the public chat task: each start is a new conversation.
    "api:conversation-start": row(
        401,
        401,
        201,
        201,
        201,
        201,
        201,
        method=P,
        kwargs=_chat_code,
        effect=_conversation_count,
        allowed=SIGNED_IN,
    ),
    "api:conversation-export": row(401, 401, 403, 403, 403, 200, 200, kwargs=_chat_code),
    "api:conversation-detail": row(401, 401, 200, 404, 404, 404, 404, kwargs=_chat(api=True)),
    "api:reply-detail": row(
        401, 401, 200, 404, 404, 404, 404, kwargs=_chat(api=True, reply_id=True)
    ),
    "api:reply-stream": row(
        401, 401, 200, 404, 404, 404, 404, kwargs=_chat(api=True, reply_id=True)
    ),
    "api:turn-create": row(
        401,
        401,
        409,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(api=True),
        data=lambda w: {"message": "Hello there."},
        effect=_turn_state,
        allowed=("worker",),
    ),
    "api:turn-stream": row(
        401,
        401,
        409,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(api=True),
        data=lambda w: {"message": "Hello there."},
        effect=_turn_state,
        allowed=("worker",),
    ),
    "api:turn-choice": row(
        401,
        401,
        200,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(api=True, turn_id=True),
        data=lambda w: {"choice": "tie"},
        effect=_turn_state,
        allowed=("worker",),
    ),
    "api:reply-retry": row(
        401,
        401,
        409,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(api=True, reply_id=True),
        effect=_turn_state,
        allowed=("worker",),
    ),
    "api:reply-cancel": row(
        401,
        401,
        200,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(api=True, reply_id=True),
        effect=_turn_state,
        allowed=("worker",),
    ),
    "api:conversation-finish": row(
        401,
        401,
        409,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_chat(api=True),
        effect=_conversation_state,
        allowed=("worker",),
    ),
    # The finished conversation's example: its writer reads it, and so does every validator
    # whose queue holds it (every signed-in user of the public task, owners included).
    "api:example-transcript": row(
        401,
        401,
        200,
        200,
        200,
        200,
        200,
        kwargs=lambda w: {"pk": w.finished_conversation.example_id},
    ),
    # the arena (its battles' turns go through the conversations API)
    "api:battle-start": row(
        401,
        401,
        201,
        201,
        201,
        201,
        201,
        method=P,
        kwargs=_arena_code,
        effect=_battle_count,
        allowed=SIGNED_IN,
    ),
    # Sealed: the owners' (401 for anonymous calls, as for every arena call of a signed-in
    # user's business).
    "api:battle-export": row(401, 401, 403, 403, 403, 200, 200, kwargs=_arena_code),
    "api:battle-detail": row(401, 401, 200, 404, 404, 404, 404, kwargs=_battle(api=True)),
    "api:battle-vote": row(
        401,
        401,
        200,
        404,
        404,
        404,
        404,
        method=P,
        kwargs=_battle(api=True),
        data=lambda w: {"vote": "a"},
        effect=_battle_state,
        allowed=("worker",),
    ),
    "api:arena-board": everyone(200, kwargs=_arena_code),
    # The list is public (as on the board's page); freezing the board is for owners.
    "api:arena-snapshots": row(
        401,
        401,
        403,
        403,
        403,
        201,
        201,
        method=P,
        kwargs=_arena_code,
        data=lambda w: {"name": "Snap"},
        effect=_arena_snapshot_count,
        allowed=("owner", "superuser"),
    ),
    "api:arena-snapshot": everyone(
        200, kwargs=lambda w: {**_arena_code(w), "snapshot_id": w.arena_snapshot.pk}
    ),
    "api:arena-raters": row(401, 401, 403, 403, 403, 200, 200, kwargs=_arena_code),
    "api:arena-exclusions": row(
        401,
        401,
        403,
        403,
        403,
        201,
        201,
        method=P,
        kwargs=_arena_code,
        data=_exclusion_data,
        effect=_arena_exclusion_count,
        allowed=("owner", "superuser"),
    ),
    # the admin's own pages
    "admin:index": row(L, L, L, 200, 200, 200, 200),
    "admin:login": row(200, 200, 200, R, R, R, R),
    "admin:logout": everyone(R, method=P),
    "admin:password_change": row(L, L, L, 200, 200, 200, 200),
    "admin:password_change_done": row(L, L, L, 200, 200, 200, 200),
    "admin:jsi18n": row(L, L, L, 200, 200, 200, 200),
    "admin:autocomplete": row(L, L, L, 403, 403, 403, 403),
    "admin:app_list": row(L, L, L, 200, 404, 200, 200, kwargs=lambda w: {"app_label": "tasks"}),
    "admin:<admin/(?P<url>.*)$>": row(L, L, L, 404, 404, 404, 404, path=lambda w: "/admin/nope/"),
    "admin:<object redirect>": row(
        L, L, L, R, R, R, R, path=lambda w: f"/admin/tasks/task/{w.task.pk}/"
    ),
    "admin:view_on_site": row(
        L, L, L, 404, 404, 404, 404, kwargs=lambda w: {"content_type_id": 0, "object_id": 0}
    ),
    "admin:auth_user_password_change": row(L, L, L, 403, 403, 403, 200),
    "admin:tasks_task_open_round": row(L, L, L, 403, 403, 200, 200),
    "admin:tasks_task_upload_contexts": row(L, L, L, 403, 403, 200, 200),
    "admin:tasks_taskproposal_decide": row(L, L, L, 403, 403, 403, 200),
    # The preview's first address redirects to its place under the task.
    "admin:annotation_form_preview": row(L, L, L, R, R, R, R),
    "admin:tasks_task_form_preview": row(L, L, L, 403, 403, 200, 200),
    "admin:tasks_task_form_preview_frame": row(L, L, L, 403, 403, 200, 200),
    # The config editor's live check: whoever may open an editor (owners of any task).
    "admin:tasks_task_config_check": row(
        L, L, L, 200, 403, 200, 200, method=P, data=lambda w: {"config_yaml": "input: 1"}
    ),
    "admin:leaderboards_dataset_upload": row(L, L, L, 403, 403, 200, 200),
}

# --- admin ----------------------------------------------------------------------------------
# Every ModelAdmin falls in one family; the family gives the outcome of its five views.
# "object" is an object of world.task (or the world's own object) for history/delete/change.
ADMIN_FAMILIES: dict[str, dict[str, tuple]] = {
    # Rows of owned tasks: owners see and change their own, only superusers add or delete.
    "owned_superuser_adds": {
        "changelist": (L, L, L, 200, 403, 200, 200),
        "add": (L, L, L, 403, 403, 403, 200),
        "change": (L, L, L, R, 403, 200, 200),
        "history": (L, L, L, R, R, 200, 200),
        "delete": (L, L, L, 403, 403, 403, 200),
    },
    # Owners may also add (for their own tasks: the form limits the task choices).
    "owned_owner_adds": {
        "changelist": (L, L, L, 200, 403, 200, 200),
        "add": (L, L, L, 200, 403, 200, 200),
        "change": (L, L, L, R, 403, 200, 200),
        "history": (L, L, L, R, R, 200, 200),
        "delete": (L, L, L, 403, 403, 403, 200),
    },
    # Rows made by the site (examples, stats, contexts): never added in the admin.
    "owned_no_add": {
        "changelist": (L, L, L, 200, 403, 200, 200),
        "add": (L, L, L, 403, 403, 403, 403),
        "change": (L, L, L, R, 403, 200, 200),
        "history": (L, L, L, R, R, 200, 200),
        "delete": (L, L, L, 403, 403, 403, 200),
    },
    # Cached counters: owners read them, nobody writes them by hand.
    "owned_readonly": {
        "changelist": (L, L, L, 200, 403, 200, 200),
        "add": (L, L, L, 403, 403, 403, 403),
        "change": (L, L, L, R, 403, 200, 200),
        "history": (L, L, L, R, R, 200, 200),
        "delete": (L, L, L, 403, 403, 403, 403),
    },
    # Proposals come from the site's form; superusers decide them in the admin.
    "superuser_no_add": {
        "changelist": (L, L, L, 403, 403, 403, 200),
        "add": (L, L, L, 403, 403, 403, 403),
        "change": (L, L, L, 403, 403, 403, 200),
        "history": (L, L, L, 403, 403, 403, 200),
        "delete": (L, L, L, 403, 403, 403, 200),
    },
    # Accounts, groups, tokens, proposals: superusers only.
    "superuser_only": {
        "changelist": (L, L, L, 403, 403, 403, 200),
        "add": (L, L, L, 403, 403, 403, 200),
        "change": (L, L, L, 403, 403, 403, 200),
        "history": (L, L, L, 403, 403, 403, 200),
        "delete": (L, L, L, 403, 403, 403, 200),
    },
    # The site settings: one row that superusers change (the list opens it); no add, no delete.
    "superuser_singleton": {
        "changelist": (L, L, L, 403, 403, 403, R),
        "add": (L, L, L, 403, 403, 403, 403),
        "change": (L, L, L, 403, 403, 403, 200),
        "history": (L, L, L, 403, 403, 403, 200),
        "delete": (L, L, L, 403, 403, 403, 403),
    },
    # Logs (axes) and the RQ dashboard: superusers read, nobody adds.
    "superuser_readonly": {
        "changelist": (L, L, L, 403, 403, 403, 200),
        "add": (L, L, L, 403, 403, 403, 403),
        "change": (L, L, L, 403, 403, 403, 200),
        "history": (L, L, L, 403, 403, 403, 200),
        "delete": (L, L, L, 403, 403, 403, 200),
    },
}


def _stats_row(world, model_name: str):
    from django.apps import apps

    model = apps.get_model("annotation", model_name)
    if model_name == "roundstats":
        return model.objects.get_or_create(round=world.round)[0]
    return model.objects.get_or_create(
        task=world.task, round=world.round, user=world.users["worker"]
    )[0]


def _axes_row(model_name: str):
    def get(world):
        from django.apps import apps

        model = apps.get_model("axes", model_name)
        fields = {"username": "sec", "ip_address": "127.0.0.1", "user_agent": "t"}
        if model_name == "accessattempt":
            fields.update(get_data="", post_data="", failures_since_start=1)
        elif model_name == "accessfailurelog":
            fields.update(locked_out=False)
        return model.objects.create(**fields)

    return get


def _group(world):
    from django.contrib.auth.models import Group

    return Group.objects.get_or_create(name="sec-group")[0]


def _token(world):
    from rest_framework.authtoken.models import TokenProxy

    from api.auth import api_token_create

    api_token_create(world.users["worker"])
    return TokenProxy.objects.get(user=world.users["worker"])


ADMIN_MODELS: dict[str, tuple[str, object]] = {
    "tasks.task": ("owned_superuser_adds", lambda w: w.task),
    "tasks.round": ("owned_superuser_adds", lambda w: w.round),
    "tasks.context": ("owned_no_add", lambda w: w.context),
    "tasks.taskproposal": ("superuser_no_add", lambda w: w.proposal),
    "tasks.sitesettings": (
        "superuser_singleton",
        lambda w: __import__("tasks.accounts", fromlist=["x"]).site_settings_get(),
    ),
    "models_hub.registeredmodel": ("owned_owner_adds", lambda w: w.model),
    "annotation.example": ("owned_no_add", lambda w: w.example),
    "annotation.campaign": ("owned_owner_adds", lambda w: w.campaign),
    "annotation.campaignworker": ("owned_no_add", _campaign_worker_row),
    "annotation.roundstats": ("owned_readonly", lambda w: _stats_row(w, "roundstats")),
    "annotation.workerstats": ("owned_readonly", lambda w: _stats_row(w, "workerstats")),
    "leaderboards.dataset": ("owned_superuser_adds", lambda w: w.datasets["scoring"]),
    "leaderboards.evaluationrun": ("owned_superuser_adds", lambda w: w.run),
    "auth.user": ("superuser_only", lambda w: w.users["worker"]),
    "auth.group": ("superuser_only", _group),
    "authtoken.tokenproxy": ("superuser_only", _token),
    "axes.accessattempt": ("superuser_readonly", _axes_row("accessattempt")),
    "axes.accesslog": ("superuser_readonly", _axes_row("accesslog")),
    "axes.accessfailurelog": ("superuser_readonly", _axes_row("accessfailurelog")),
}


# --- figures of the hidden dataset ---------------------------------------------------------
# Every surface that could show a figure of the hidden dataset (a score, a CI, a per-tag value,
# a per-example result, a count of failed examples, an error text), with each role's outcome:
# "F" when its answer changes with the figures (``world.set_hidden_figures``), "-" when it
# is a 200 that stays the same, or the status code. Only the task's owners and superusers see
# figures. The worker owns ``world.worker_model``, evaluated on the hidden dataset: they get
# the sealed view of its run (state and progress), never a figure.
F = "F"
N = "-"


def _url(name: str, **kwargs):
    """Return a function of the world that reverses ``name``; values are world attribute paths."""

    def path(world) -> str:
        from django.urls import reverse

        values = {}
        for key, attribute in kwargs.items():
            value = world
            for part in attribute.split("."):
                value = value[part] if isinstance(value, dict) else getattr(value, part)
            values[key] = value
        return reverse(name, kwargs=values)

    return path


HIDDEN_RUN = {"pk": "hidden_run.pk"}
WORKER_MODEL = {"pk": "worker_model.pk"}
CODE = {"code": "task.code"}
HIDDEN_SLUG = {"code": "task.code", "slug": "datasets.hidden.slug"}

HIDDEN_FIGURES: dict[str, tuple[object, tuple]] = {
    "run page": (
        _url("leaderboards:run_detail", run_id="hidden_run.pk"),
        (404, 404, N, 404, 404, F, F),
    ),
    "run progress partial": (
        _url("leaderboards:run_progress", run_id="hidden_run.pk"),
        (404, 404, N, 404, 404, F, F),
    ),
    "API run": (_url("api:run-detail", **HIDDEN_RUN), (404, 404, N, 404, 404, F, F)),
    "API model runs": (_url("api:model-runs", **WORKER_MODEL), (N, N, N, N, N, F, F)),
    "API model scores": (_url("api:model-scores", **WORKER_MODEL), (N, N, N, N, N, F, F)),
    "API owner's model scores": (_url("api:model-scores", pk="model.pk"), (N, N, N, N, N, F, F)),
    "model page": (_url("leaderboards:model", **WORKER_MODEL), (N, N, N, N, N, F, F)),
    "model page, hidden examples": (
        lambda w: _url("leaderboards:model", **WORKER_MODEL)(w)
        + f"?dataset={w.datasets['hidden'].slug}",
        (N, N, N, N, N, F, F),
    ),
    "owner's model page": (_url("leaderboards:model", pk="model.pk"), (N, N, N, N, N, F, F)),
    "model runs partial": (
        _url("leaderboards:model_runs_progress", **WORKER_MODEL),
        (N, N, N, N, N, F, F),
    ),
    "model card": (_url("models_hub:detail", **WORKER_MODEL), (N, N, N, N, N, N, N)),
    "API model": (_url("api:model-detail", **WORKER_MODEL), (N, N, N, N, N, N, N)),
    "leaderboard": (_url("leaderboards:task", **CODE), (N, N, N, N, N, F, F)),
    "leaderboard CSV": (_url("leaderboards:task_csv", **CODE), (N, N, N, N, N, F, F)),
    "leaderboard JSON": (_url("leaderboards:task_json", **CODE), (N, N, N, N, N, F, F)),
    "API leaderboard": (_url("api:leaderboard", **CODE), (N, N, N, N, N, F, F)),
    "fork": (
        _url("leaderboards:fork", code="task.code", slug="fork.slug"),
        (N, N, N, N, N, F, F),
    ),
    "API fork": (
        _url("api:fork-detail", code="task.code", slug="fork.slug"),
        (N, N, N, N, N, F, F),
    ),
    "datasets page": (_url("leaderboards:dataset_list", **CODE), (N, N, N, N, N, N, N)),
    "API datasets": (_url("api:dataset-list", **CODE), (N, N, N, N, N, N, N)),
    "hidden dataset page": (
        _url("leaderboards:dataset_detail", **HIDDEN_SLUG),
        (404, 404, 404, 404, 404, N, N),
    ),
    "hidden dataset inputs": (
        _url("leaderboards:dataset_inputs", **HIDDEN_SLUG),
        (404, 404, 404, 404, 404, N, N),
    ),
    "API hidden dataset examples": (
        _url("api:dataset-examples", **HIDDEN_SLUG),
        (404, 404, 404, 404, 404, N, N),
    ),
}


# Known defects of other modules: the test is expected to fail (strict), with the fix named.
KNOWN_BUGS: dict[str, str] = {}


def check_for(route: Route) -> Check | None:
    """Return the matrix entry of ``route`` (admin model URLs through their family)."""
    if route.key in MATRIX:
        return MATRIX[route.key]
    if route.admin_model and route.admin_model in ADMIN_MODELS:
        family, obj = ADMIN_MODELS[route.admin_model]
        view = route.key.rsplit("_", 1)[1]
        outcomes = ADMIN_FAMILIES[family][view]
        if os.environ.get("SECURITY_MATRIX_DUMP"):
            outcomes = ("?",) * len(ROLES)
        kwargs = None
        if view in ("history", "delete", "change"):

            def kwargs(world, obj=obj):
                return {"object_id": obj(world).pk}

        return row(*outcomes, kwargs=kwargs)
    if os.environ.get("SECURITY_MATRIX_DUMP"):
        return everyone("?")
    return None
