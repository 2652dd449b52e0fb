"""docs/model-protocol.md stays true: its minimal server works with the platform's client.

The server's code is taken from the document as it is, run on a loopback port in a child
process, and called through ``ModelClient`` (the native protocol and ``/health``).
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time

import pytest

from models_hub.client import EndpointSpec, ModelClient
from models_hub.errors import ModelCallError
from models_hub.protocols import PROTOCOLS
from models_hub.transport import RetryPolicy
from tasks.config import parse_task_config
from tests.factories import demo_config
from tests.shared_files import REPOSITORY

DOCUMENT = REPOSITORY / "docs" / "model-protocol.md"
SERVER_HEADING = "## A minimal model server"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@pytest.fixture(scope="module")
def text():
    return DOCUMENT.read_text(encoding="utf-8")


def minimal_server(text: str) -> str:
    """Return the Python block that follows the minimal server's heading."""
    section = text.split(SERVER_HEADING, 1)[1]
    match = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert match, "the minimal server has no ```python block"
    return match.group(1)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_listening(port: int, process: subprocess.Popen, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"the documented server did not listen on port {port}")


@pytest.fixture
def documented_server(text, tmp_path):
    """Run the documented server; yield its URL."""
    script = tmp_path / "toy_model.py"
    script.write_text(minimal_server(text), encoding="utf-8")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(script), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until_listening(port, process)
        yield f"http://127.0.0.1:{port}/"
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stderr.close()


def test_the_minimal_server_answers_the_platform_client(documented_server):
    endpoint = EndpointSpec(
        url=documented_server, read_timeout=5.0, batch_size=2, allowed_hosts=LOOPBACK
    )
    config = parse_task_config(demo_config("sentiment"))
    inputs = [
        {"uid": "1", "statement": "A good day", "context": "weather", "label": "positive"},
        {"uid": "2", "statement": "A bad day", "context": "weather", "label": "negative"},
        {"uid": "3", "statement": "A day", "context": "weather", "label": "neutral"},
    ]
    client = ModelClient(retry=RetryPolicy(max_attempts=1))

    result = client.predict(endpoint, config, "sentiment", inputs)

    assert [output["label"] for output in result.outputs] == ["positive", "negative", "neutral"]
    assert result.model_version == "toy-1"
    assert result.requests_sent == 2  # batches of two
    health = client.health(endpoint)
    assert health.ok and health.model_version == "toy-1", health


def error_codes() -> set[str]:
    found: set[str] = set()
    pending = [ModelCallError]
    while pending:
        kind = pending.pop()
        pending.extend(kind.__subclasses__())
        if kind is not ModelCallError:
            found.add(kind.code)
    return found


@pytest.mark.parametrize("name", sorted(PROTOCOLS) + ["none"] + sorted(error_codes()))
def test_the_reference_names_every_protocol_and_error_code(text, name):
    assert f"`{name}`" in text


def test_the_documented_limits_are_the_defaults(text):
    endpoint = EndpointSpec(url="http://127.0.0.1/")
    row = re.compile(r"^\| `(\w+)`[^|]*\| ([\d,.]+) s? ?\|", flags=re.MULTILINE)
    documented = {name: float(value.replace(",", "")) for name, value in row.findall(text)}
    assert documented == {
        "connect_timeout": endpoint.connect_timeout,
        "read_timeout": endpoint.read_timeout,
        "batch_size": endpoint.batch_size,
        "max_concurrency": endpoint.max_concurrency,
    }
