"""A text model in a chat seat (pure: no database, no network).

The arena seats registered text models (the protocols that answer one task input, such as
``dynatask`` and ``hf_text_classification``) beside chat models in one-turn battles. The
worker's message becomes the task input the conversation's example stores it in (the config's
first string worker input, ``message_field``); the model is called through the task's model
input mapping (``models_hub.protocols.base.model_inputs``, applied by the client) and its
checked output is shown as the answer's text (``answer_text``): the value of a single string
output, else one ``name: value`` line per output field the model returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from models_hub.models import Protocol
from tasks.config.types import FieldType

# Protocols that hold a conversation; every other protocol with an endpoint answers one input.
CHAT_PROTOCOLS = frozenset({Protocol.OPENAI_CHAT})
NO_ENDPOINT_PROTOCOLS = frozenset({Protocol.NONE})


def is_text_protocol(protocol: str) -> bool:
    """Whether a model of ``protocol`` answers one task input rather than a conversation."""
    return protocol not in CHAT_PROTOCOLS and protocol not in NO_ENDPOINT_PROTOCOLS


def message_field(config) -> str:
    """The input field a conversation's first message is stored in (the first string one)."""
    for spec in config.worker_input_fields:
        if spec.type == FieldType.STRING:
            return spec.name
    return "message"


def text_input(config, message: str) -> dict[str, Any]:
    """The task input a text model is asked about: the worker's message in its field."""
    return {"uid": "0", message_field(config): message}


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def answer_text(config, output: Mapping[str, Any]) -> str:
    """The text shown for a text model's checked ``output`` (see the module docstring)."""
    fields = [spec for spec in config.output if spec.name in output]
    if len(fields) == 1 and isinstance(output[fields[0].name], str):
        return output[fields[0].name]
    return "\n".join(f"{spec.name}: {_shown(output[spec.name])}" for spec in fields)
