"""Fixtures of the models_hub tests: parsed task configs and loopback servers.

The configs are the project's demo configs (``tasks/demo_data``), whose field names the demo
models answer to, and the Dynabench examples with the same field names (skipped when ../shared
is not beside the repository).
"""

from __future__ import annotations

import socket

import pytest

from models_hub.client import EndpointSpec, ModelClient
from models_hub.transport import RetryPolicy
from tasks.config import parse_task_config
from tests.factories import demo_config
from tests.models_hub.servers import (
    HFHandler,
    MisbehavingHandler,
    OpenAIHandler,
    RecordingServer,
    running,
)
from tests.shared_files import dynabench_text, needs_dynabench

LOOPBACK = ("127.0.0.1", "localhost", "::1")
FAST_RETRY = RetryPolicy(max_attempts=3, backoff_seconds=0.01, backoff_max_seconds=0.02)


CONFIG_TASKS = ("sentiment", "hs", "nli", "qa")


@pytest.fixture(
    scope="session",
    params=["demo", pytest.param("dynabench", marks=[needs_dynabench])],
)
def configs(request):
    """The sentiment, hate-speech, NLI and QA configs of one source, parsed, by task."""
    read = demo_config if request.param == "demo" else dynabench_text
    return {task: parse_task_config(read(task)) for task in CONFIG_TASKS}


@pytest.fixture(scope="session")
def sentiment_config():
    """The demo sentiment config: the transport tests need one config, not every source."""
    return parse_task_config(demo_config("sentiment"))


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


@pytest.fixture
def apps_after():
    """Return the app registry as it stood after a migration: what its data functions get.

    ``apps_after("models_hub", "0005_daily_budget")`` knows the model by the name it had
    then (``Model``); its table is the one the current model uses.
    """
    from django.db import connection
    from django.db.migrations.loader import MigrationLoader

    def registry(app_label: str, migration_name: str):
        loader = MigrationLoader(connection, ignore_no_migrations=True)
        return loader.project_state((app_label, migration_name), at_end=True).apps

    return registry
