"""Fixtures of the models_hub tests: parsed Dynabench configs and loopback servers."""

from __future__ import annotations

import socket

import pytest

from models_hub.client import EndpointSpec, ModelClient
from models_hub.transport import RetryPolicy
from tasks.config import parse_task_config
from tests.models_hub.servers import (
    HFHandler,
    MisbehavingHandler,
    OpenAIHandler,
    RecordingServer,
    running,
)
from tests.tasks.config.samples import dynabench_text

LOOPBACK = ("127.0.0.1", "localhost", "::1")
FAST_RETRY = RetryPolicy(max_attempts=3, backoff_seconds=0.01, backoff_max_seconds=0.02)


@pytest.fixture(scope="session")
def configs():
    """The Dynabench sentiment, hate-speech, NLI and QA configs, parsed."""
    return {
        task: parse_task_config(dynabench_text(task)) for task in ("sentiment", "hs", "nli", "qa")
    }


@pytest.fixture(scope="session")
def sentiment_config(configs):
    return configs["sentiment"]


@pytest.fixture
def model_client():
    """A client with quick retries and the system resolver."""
    return ModelClient(retry=FAST_RETRY)


@pytest.fixture
def misbehaving_server():
    with running(RecordingServer(MisbehavingHandler, sleep_seconds=1.0)) as server:
        yield server


@pytest.fixture
def openai_server():
    with running(RecordingServer(OpenAIHandler, delay_seconds=0.15)) as server:
        yield server


@pytest.fixture
def hf_server():
    with running(RecordingServer(HFHandler)) as server:
        yield server


@pytest.fixture
def closed_port():
    """A loopback port with nothing listening (connection refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return port


def endpoint(url: str, **overrides) -> EndpointSpec:
    """An endpoint on loopback with short timeouts; ``overrides`` replace fields."""
    settings = {
        "url": url,
        "connect_timeout": 1.0,
        "read_timeout": 0.3,
        "allowed_hosts": LOOPBACK,
    }
    settings.update(overrides)
    return EndpointSpec(**settings)


def sentiment_inputs(count: int) -> list[dict]:
    """``count`` sentiment examples, with the target and an extra key that must not be sent."""
    return [
        {
            "uid": f"u{index}",
            "statement": f"statement {index} is happy" if index % 2 else f"statement {index}",
            "context": "a context",
            "label": "positive",
            "worker_note": "never sent",
        }
        for index in range(count)
    ]
