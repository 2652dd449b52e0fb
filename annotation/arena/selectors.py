"""Reads of the arena: its config, a worker's battle, the counted battles, the cached board,
the votes of a worker today, the raters' agreement flags, exclusions and snapshots.

Ratings are fitted on every counted battle; what a viewer is shown (``arena_board_for``)
leaves out the models whose card is a 404 to them (unpublished, not theirs), as the
Dynascore board does. A battle counts on the board when it has a vote, the vote is not void,
and its worker's votes are not excluded. The board is cached under the task's config version
and board generation, which every vote and exclusion bumps (``board_generation_bump``,
called by ``board_page.board_changed``), so a cached board is never stale and the cache
needs no expiry to be right.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time

from django.contrib.auth.models import AnonymousUser
from django.core.cache import cache
from django.db.models import Count, Exists, OuterRef, Q
from django.utils import timezone

from annotation.arena import hygiene
from annotation.arena.board import (
    ArenaBoard,
    CountedBattle,
    board_dict_without,
    board_view,
    build_board,
)
from annotation.arena.models import ArenaBattle, ArenaExclusion, ArenaSnapshot
from annotation.campaigns.actors import Actor
from annotation.chat.models import ConversationStatus
from annotation.chat.selectors import is_owner
from annotation.chat.text_models import is_text_protocol
from core.errors import NotFound
from models_hub.models import Protocol, RegisteredModel
from models_hub.selectors import PICKABLE_STATUSES, model_ids_hidden_from
from tasks.config.arena import ArenaConfig
from tasks.config.chat import ChatConfig
from tasks.permissions import can_manage_task

CACHE_SECONDS = 24 * 3600
BOARD_FORMAT = 1


def arena_config(task) -> tuple[ArenaConfig, ChatConfig]:
    """The arena rules and battle chat of ``task``'s current config (NotFound without)."""
    version = task.current_config
    parsed = version.parsed if version is not None else None
    if parsed is None or parsed.arena is None or parsed.chat is None:
        raise NotFound("this task has no arena")
    return parsed.arena, parsed.chat


TEXT_MODEL_MULTI_TURN = "arena.text_model_multi_turn"


@dataclass(frozen=True)
class SkippedModel:
    """A model of the round's loop that takes no seat in this arena's battles, and why."""

    model_id: int
    name: str
    code: str
    reason: str


def arena_candidates(round_, chat: ChatConfig) -> tuple[list[RegisteredModel], list[SkippedModel]]:
    """The models a battle may draw: the round's models in the loop with an endpoint (chat or
    text: ``annotation.chat.text_models``), healthy or not yet checked; and the text models left out
    because a battle of this arena may have more than one turn (a text model answers one
    message). One query."""
    models = list(
        RegisteredModel.objects.filter(round_models__round=round_, status__in=PICKABLE_STATUSES)
        .exclude(endpoint_url="")
        .exclude(protocol=Protocol.NONE)
        .select_related("task")
        .order_by("pk")
    )
    if chat.max_turns <= 1:
        return models, []
    reason = (
        f"a text model answers one message, and this arena's battles have up to "
        f"{chat.max_turns} turns (set chat.max_turns: 1 to seat it)"
    )
    skipped = [
        SkippedModel(model.pk, model.name, TEXT_MODEL_MULTI_TURN, reason)
        for model in models
        if is_text_protocol(model.protocol)
    ]
    return [model for model in models if not is_text_protocol(model.protocol)], skipped


def skipped_models(task) -> list[SkippedModel]:
    """The models in the loop of the task's open rounds that take no seat, and why (for the
    owners' page). One query per open round (one, usually) and one for the rounds."""
    _, chat = arena_config(task)
    skipped: dict[int, SkippedModel] = {}
    for round_ in task.rounds.filter(is_open=True).order_by("number"):
        for model in arena_candidates(round_, chat)[1]:
            skipped.setdefault(model.model_id, model)
    return list(skipped.values())


def has_arena(task) -> bool:
    version = task.current_config
    parsed = version.parsed if version is not None else None
    return parsed is not None and parsed.arena is not None


def battle_for_actor(pk: int, actor: Actor, *, code: str | None = None) -> ArenaBattle:
    """The actor's own battle ``pk`` (of task ``code``) with its conversation."""
    queryset = ArenaBattle.objects.select_related(
        "task", "conversation", "conversation__task", "conversation__config_version"
    ).prefetch_related("conversation__seats")
    if code is not None:
        queryset = queryset.filter(task__code=code)
    battle = queryset.filter(pk=pk).first()
    if battle is None or actor is None or not is_owner(battle.conversation, actor):
        raise NotFound("no such battle")
    return battle


def open_battle(task, actor: Actor) -> ArenaBattle | None:
    """The actor's latest battle of ``task`` still waiting for its vote, if any."""
    column, value = actor.id_column()
    return (
        ArenaBattle.objects.filter(task=task, vote="", revealed_at__isnull=True)
        .filter(conversation__status=ConversationStatus.ACTIVE, **{column: value})
        .order_by("-id")
        .first()
    )


def day_start(now: datetime | None = None) -> datetime:
    """The start of the current UTC day (the daily cap counts from it)."""
    now = now or timezone.now()
    return datetime.combine(now.astimezone(UTC).date(), time.min, tzinfo=UTC)


def votes_today(task, actor: Actor) -> int:
    column, value = actor.id_column()
    return ArenaBattle.objects.filter(
        task=task, voted_at__gte=day_start(), **{column: value}
    ).count()


def _excluded(task):
    return ArenaExclusion.objects.filter(task=task).filter(
        Q(user_id=OuterRef("user_id"), user__isnull=False)
        | Q(campaign_worker_id=OuterRef("campaign_worker_id"), campaign_worker__isnull=False)
    )


def counted_battles(task):
    """The battles that count on the board, in the order they were voted."""
    return (
        ArenaBattle.objects.filter(task=task, void_reason="", voted_at__isnull=False)
        .exclude(vote="")
        .exclude(Exists(_excluded(task)))
        .exclude(model_a__isnull=True)
        .exclude(model_b__isnull=True)
        .order_by("voted_at", "id")
    )


def counted_rows(task) -> list[CountedBattle]:
    rows = counted_battles(task).values_list(
        "model_a_id", "model_b_id", "model_a_name", "model_b_name", "vote", "length_a", "length_b"
    )
    return [
        CountedBattle(a, b, name_a, name_b, vote, length_a or 0, length_b or 0)
        for a, b, name_a, name_b, vote, length_a, length_b in rows
    ]


def _generation_key(task_id: int) -> str:
    return f"arena-board-generation:{task_id}"


def board_generation(task_id: int) -> int:
    return cache.get(_generation_key(task_id)) or 0


def board_generation_bump(task_id: int) -> None:
    """Make every cached board of the task stale (a vote, an exclusion)."""
    key = _generation_key(task_id)
    if not cache.add(key, 1, timeout=None):
        try:
            cache.incr(key)
        except ValueError:
            cache.set(key, 1, timeout=None)


def board_cache_key(task, style_control: bool | None = None) -> str:
    """The cache key of the task's board now: its config version, style, generation."""
    config, _ = arena_config(task)
    style = config.style_control if style_control is None else style_control
    version = task.current_config.pk if task.current_config else 0
    generation = board_generation(task.pk)
    return f"arena-board:{BOARD_FORMAT}:{task.pk}:{version}:{int(style)}:{generation}"


def arena_board(task, *, style_control: bool | None = None) -> ArenaBoard:
    """The board of the task's counted battles, cached until the next vote or exclusion."""
    config, _ = arena_config(task)
    style = config.style_control if style_control is None else style_control
    key = board_cache_key(task, style)
    board = cache.get(key)
    if board is None:
        board = build_board(counted_rows(task), style_control=style)
        cache.set_many(
            {key: board, _pair_ahead_key(task.pk): board.pair_ahead}, timeout=CACHE_SECONDS
        )
    return board


def arena_board_for(task, user, *, style_control: bool | None = None) -> ArenaBoard:
    """The board as ``user`` may see it: without the models hidden from them."""
    board = arena_board(task, style_control=style_control)
    return board_view(board, model_ids_hidden_from(task, user))


def public_model_ids_hidden(task) -> frozenset[int]:
    """The models hidden from visitors (every unpublished model of the task)."""
    return model_ids_hidden_from(task, AnonymousUser())


def snapshot_board_for(task, snapshot: ArenaSnapshot, user) -> dict:
    """A frozen board as ``user`` may see it: the whole one for the task's owners, else the
    public view frozen with it (or, for a snapshot older than that, the whole one without
    the models hidden from visitors now)."""
    if can_manage_task(user, task):
        return snapshot.board
    if snapshot.public_board is not None:
        return snapshot.public_board
    return board_dict_without(snapshot.board, public_model_ids_hidden(task))


def _pair_ahead_key(task_id: int) -> str:
    return f"arena-pair-ahead:{task_id}"


def pair_ahead(task) -> dict[tuple[int, int], float]:
    """Each pair's share of resamples ordering it one way, from the last board computed (a
    vote or two behind at most, so a new battle never waits for a refit); computed when no
    board was."""
    shares = cache.get(_pair_ahead_key(task.pk))
    return shares if shares is not None else arena_board(task).pair_ahead


def pair_battles(task) -> dict[tuple[int, int], int]:
    """Battles started per pair of models (lower id first), voted or not."""
    rows = (
        ArenaBattle.objects.filter(task=task, model_a__isnull=False, model_b__isnull=False)
        .values("model_a_id", "model_b_id")
        .annotate(n=Count("id"))
    )
    counts: dict[tuple[int, int], int] = {}
    for row in rows:
        pair = tuple(sorted((row["model_a_id"], row["model_b_id"])))
        counts[pair] = counts.get(pair, 0) + row["n"]
    return counts


@dataclass(frozen=True)
class RaterFlag:
    rater: str  # "u:<user id>" or "c:<campaign worker id>"
    label: str
    agreeing: int
    counted: int
    flagged: bool

    @property
    def share(self) -> float | None:
        return self.agreeing / self.counted if self.counted else None


def rater_flags(task) -> list[RaterFlag]:
    """Every rater's agreement with the others on the counted battles, flags first."""
    config, _ = arena_config(task)
    rows = counted_battles(task).values_list(
        "user_id", "user__username", "campaign_worker_id", "model_a_id", "model_b_id", "vote"
    )
    votes, labels = [], {}
    for user_id, username, worker_id, a, b, vote in rows:
        rater = f"u:{user_id}" if user_id else f"c:{worker_id}"
        labels[rater] = username or f"campaign worker {worker_id}"
        outcome = {"a": hygiene.A_WINS, "b": hygiene.B_WINS}.get(vote, 2)
        votes.append(hygiene.Vote(rater, a, b, outcome))
    agreement = hygiene.rater_agreement(votes)
    flagged = hygiene.flag_outliers(agreement, config.flag_min_votes, config.flag_spread)
    result = [
        RaterFlag(rater, labels[rater], agreeing, counted, rater in flagged)
        for rater, (agreeing, counted) in agreement.items()
    ]
    return sorted(result, key=lambda flag: (not flag.flagged, flag.share or 0.0, flag.label))


def exclusions(task) -> list[ArenaExclusion]:
    return list(
        ArenaExclusion.objects.filter(task=task).select_related(
            "user", "campaign_worker", "created_by"
        )
    )


def snapshots(task) -> list[ArenaSnapshot]:
    return list(ArenaSnapshot.objects.filter(task=task).select_related("created_by"))


def snapshot_get(task, snapshot_id: int) -> ArenaSnapshot:
    snapshot = (
        ArenaSnapshot.objects.filter(task=task, pk=snapshot_id).select_related("created_by").first()
    )
    if snapshot is None:
        raise NotFound("no such arena snapshot")
    return snapshot


def battle_counts(task) -> dict[str, int]:
    """How many battles were started, voted, voided, and left out by exclusions."""
    voted = ArenaBattle.objects.filter(task=task).exclude(vote="")
    return {
        "started": ArenaBattle.objects.filter(task=task).count(),
        "voted": voted.count(),
        "void": voted.exclude(void_reason="").count(),
        "excluded": voted.filter(void_reason="").filter(Exists(_excluded(task))).count(),
    }
