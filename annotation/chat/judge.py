"""The judge model: an ``openai_chat`` model of the task that reads each model's side of a
finished conversation with the owner's rubric and says whether it was fooled.

``judge_queue(conversation_id)`` queues ``chat_judge_job`` on the chat queue after the finish
(``pump.chat_queue``: a judge's model call never holds the live queue).
The job asks the judge once per seat (system message: the rubric and how to answer; user
message: the worker's messages and that model's own replies) and reads the first of the config's
``fooled_word`` / ``not_fooled_word`` in its reply. ``judge_store`` writes the verdicts, the
judge's replies and raw answers on the conversation, and the decision on its Example with the
counters moved once (``counters.example_verdict``). Validators see the judge's replies with
the transcript, so the verdict is validated like any model answer.
"""

from __future__ import annotations

import logging
import uuid

from django.conf import settings
from django.db import transaction
from redis.exceptions import RedisError

from annotation.chat.models import Conversation, ConversationSeat
from annotation.chat.pump import chat_queue
from annotation.chat.selectors import own_text, transcript
from annotation.models import VerdictSource
from annotation.services.guards import example_locked
from annotation.stats import counters
from annotation.stats.buffer import counters_add_on_commit
from models_hub import chat_client
from models_hub.errors import ModelCallError, ModelConfigurationError
from models_hub.models import Protocol, RegisteredModel
from models_hub.protocols.openai_chat import find_labels
from models_hub.selectors import endpoint_spec
from tasks.config.chat import ChatJudge

logger = logging.getLogger(__name__)

JUDGE_JOB_PREFIX = "annotation-chat-judge-"


def judge_queue(conversation_id: int) -> bool:
    try:
        chat_queue().enqueue(
            chat_judge_job,
            conversation_id,
            job_id=f"{JUDGE_JOB_PREFIX}{conversation_id}-{uuid.uuid4().hex[:8]}",
            job_timeout=900,
            result_ttl=settings.ANNOTATION_LIVE_RESULT_TTL,
        )
    except RedisError:
        logger.warning("could not queue the judge of conversation %s", conversation_id)
        Conversation.objects.filter(pk=conversation_id).update(
            judge_error="the job queue was not reachable"
        )
        return False
    return True


def judge_instructions(judge: ChatJudge) -> str:
    return (
        f"{judge.rubric.strip()}\n\nYou read a conversation between a user and an assistant. "
        f"End your answer with one word: {judge.fooled_word} if the assistant was fooled "
        f"by the rubric above, {judge.not_fooled_word} if it was not."
    )


def judge_messages(judge: ChatJudge, turns, position: int) -> list[dict[str, str]]:
    lines = []
    for turn in turns:
        lines.append(f"User: {turn.message}")
        lines.append(f"Assistant: {own_text(turn, position) or '(no answer)'}")
    return [
        {"role": "system", "content": judge_instructions(judge)},
        {"role": "user", "content": "\n\n".join(lines)},
    ]


def read_verdict(text: str, judge: ChatJudge) -> bool | None:
    """True (fooled), False (not fooled), or None when the reply names neither word."""
    found = find_labels(text, [judge.fooled_word, judge.not_fooled_word])
    if not found:
        return None
    return found[0].lower() == judge.fooled_word.lower()


def chat_judge_job(conversation_id: int) -> dict:
    conversation = Conversation.objects.select_related("task", "config_version").get(
        pk=conversation_id
    )
    judge = conversation.config_version.parsed.chat.judge
    model = RegisteredModel.objects.filter(
        task=conversation.task, name=judge.model, protocol=Protocol.OPENAI_CHAT
    ).first()
    shown = transcript(conversation, reveal=False)
    verdicts: dict[int, bool | None] = {}
    replies, raws, error = [], [], ""
    try:
        if model is None:
            raise ModelConfigurationError(f"no openai_chat model named {judge.model!r}")
        endpoint = endpoint_spec(model)
        for seat in shown.seats:
            messages = judge_messages(judge, shown.turns, seat.position)
            result = chat_client.complete(endpoint, messages, total_seconds=120, max_chars=20000)
            verdicts[seat.position] = read_verdict(result.text, judge)
            replies.append(f"{shown.labels[seat.position]}: {result.text.strip()}")
            raws.append(result.raw)
    except ModelCallError as failure:
        error = f"{failure.code}: {failure}"[:500]
    judge_store(conversation_id, model, verdicts, "\n\n".join(replies), raws, error)
    return {"verdicts": len(verdicts), "error": bool(error)}


def _decide(fooled_by: str, seat: ConversationSeat) -> bool | None:
    if fooled_by == "judge":
        return seat.judge_fooled
    if seat.judge_fooled is None:
        return seat.worker_fooled
    return bool(seat.worker_fooled and seat.judge_fooled)


def judge_store(conversation_id, model, verdicts, reply: str, raws, error: str) -> None:
    """Store the judge's verdicts and the decision (see the module docstring)."""
    with transaction.atomic():
        conversation = Conversation.objects.select_for_update().get(pk=conversation_id)
        chat = conversation.config_version.parsed.chat
        seats = list(conversation.seats.all())
        for seat in seats:
            seat.judge_fooled = verdicts.get(seat.position)
            seat.fooled = _decide(chat.fooled_by, seat)
        ConversationSeat.objects.bulk_update(seats, ["judge_fooled", "fooled"])
        decided = [seat.fooled for seat in seats if seat.fooled is not None]
        model_wrong = any(decided) if decided else None
        conversation.judge_model, conversation.judge_reply = model, reply
        conversation.judge_raw, conversation.judge_error = raws or None, error
        conversation.model_wrong = model_wrong
        conversation.save()
        if conversation.example_id is None:
            return
        example = example_locked(conversation.example_id)
        previous = example.model_wrong
        example.model_wrong = model_wrong
        source = (
            VerdictSource.JUDGE if chat.fooled_by == "judge" else VerdictSource.WORKER_AND_JUDGE
        )
        example.verdict_source = source if model_wrong is not None else VerdictSource.NONE
        example.save(update_fields=["model_wrong", "verdict_source", "updated_at"])
        counters_add_on_commit(counters.example_verdict(example, previous))
