"""Protocol adapters for model endpoints (pure: no DB, no HTTP).

``get_protocol(name)`` returns the adapter registered under ``name``: ``dynatask``,
``openai_chat`` or ``hf_text_classification``. Each adapter has ``build_requests(batch_inputs,
endpoint_settings) -> list[RequestSpec]``, ``parse_response(body, batch_inputs, config,
endpoint_settings=None) -> list[dict]`` and ``model_version(body) -> str | None``.
"""

from __future__ import annotations

from models_hub.errors import ModelConfigurationError
from models_hub.protocols.base import (
    EndpointSettings,
    ModelProtocol,
    RequestSpec,
    check_outputs,
    model_inputs,
)
from models_hub.protocols.dynatask import DynataskProtocol
from models_hub.protocols.hf_text_classification import HFTextClassificationProtocol
from models_hub.protocols.openai_chat import OpenAIChatProtocol, validate_prompt_template

PROTOCOLS: dict[str, ModelProtocol] = {
    protocol.name: protocol
    for protocol in (DynataskProtocol(), OpenAIChatProtocol(), HFTextClassificationProtocol())
}
PROTOCOL_CHOICES = tuple((name, name) for name in PROTOCOLS)


def get_protocol(name: str) -> ModelProtocol:
    """Return the adapter called ``name`` or raise ``ModelConfigurationError``."""
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ModelConfigurationError(f"unknown model protocol {name!r}")


__all__ = [
    "PROTOCOLS",
    "PROTOCOL_CHOICES",
    "EndpointSettings",
    "ModelProtocol",
    "RequestSpec",
    "check_outputs",
    "get_protocol",
    "model_inputs",
    "validate_prompt_template",
]
