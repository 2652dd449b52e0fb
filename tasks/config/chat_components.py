"""The one place that decides what a config's chat components become: today, an error.

Contract: ``CHAT_CONTEXT_TYPES`` lists Dynabench's v2 context types that hold a conversation
with a language model, and ``check_chat_context(checker, context_type, path, node)`` reports
one ``config.E083`` ("not supported yet") for such a context and returns True; for any other
type it reports nothing and returns False. ``is_chat_generative_context`` says the same of a
``generative_context`` (``type: perdi`` is Dynabench's multi-model chat). The chat feature
replaces these functions (and only these) when it lands; the v2 reader
(``tasks.config.components``) calls nothing else about chat. Pure: no Django, no DB, no HTTP.
"""

from __future__ import annotations

from tasks.config import codes
from tasks.config.checker import DocumentChecker
from tasks.config.located_yaml import LocatedValue

CHAT_CONTEXT_TYPES = (
    "chat-with-instructions",
    "chat-random-with-instructions",
    "evaluate-texts-generative",
)
CHAT_GENERATIVE_TYPES = ("perdi",)
CHAT_NOT_SUPPORTED_MESSAGE = (
    "chat tasks (a conversation with language models) are not supported yet; "
    "this config cannot be loaded until they are"
)


def check_chat_context(
    checker: DocumentChecker, context_type: str, path: str, node: LocatedValue
) -> bool:
    """Report a chat context type as not supported; return True when ``context_type`` is one."""
    if context_type not in CHAT_CONTEXT_TYPES:
        return False
    checker.error_at(
        codes.CHAT_NOT_SUPPORTED, path, f"{context_type}: {CHAT_NOT_SUPPORTED_MESSAGE}", node
    )
    return True


def is_chat_generative_context(generative_type: object) -> bool:
    """Say whether a ``generative_context.type`` is a chat (rather than image generation)."""
    return generative_type in CHAT_GENERATIVE_TYPES


def report_chat_generative_context(checker: DocumentChecker, path: str, node: LocatedValue) -> None:
    """Report a chat ``generative_context`` as not supported."""
    checker.error_at(
        codes.CHAT_NOT_SUPPORTED, path, f"generative chat: {CHAT_NOT_SUPPORTED_MESSAGE}", node
    )
