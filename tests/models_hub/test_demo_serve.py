"""``python -m models_hub.demo.serve TASK``: every served demo model of the task on its own
port (the catalog's, else a free one), a ready file with the URLs, a quiet exit on SIGTERM."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import pytest

from models_hub.client import ModelClient
from models_hub.demo.catalog import demo_model, served_models
from models_hub.demo.serve import bind
from tasks.config import parse_task_config
from tests.factories import demo_config
from tests.models_hub.conftest import endpoint
from tests.shared_files import REPOSITORY


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_taken_port_falls_back_to_a_free_one():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        model = demo_model("sentiment-majority")
        server = bind(model, port)
        try:
            assert server.server_address[1] != port
        finally:
            server.server_close()
    wanted = free_port()
    server = bind(model, wanted)
    try:
        assert server.server_address[1] == wanted
    finally:
        server.server_close()


@pytest.fixture
def nli_server(tmp_path):
    ready = tmp_path / "nli.json"
    ports = {model.key: free_port() for model in served_models("nli")}
    command = [sys.executable, "-m", "models_hub.demo.serve", "nli", "--ready-file", str(ready)]
    command += [f"--port={key}={port}" for key, port in ports.items()]
    process = subprocess.Popen(
        command, cwd=REPOSITORY, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the demo server wrote no ready file"
        time.sleep(0.05)
    yield process, json.loads(ready.read_text()), ports
    if process.poll() is None:
        process.kill()
        process.communicate()


def test_the_demo_server_serves_each_model_of_its_task(nli_server):
    process, urls, ports = nli_server
    assert urls == {key: f"http://127.0.0.1:{port}/" for key, port in ports.items()}
    config = parse_task_config(demo_config("nli"))
    inputs = [{"uid": "1", "context": "A cat sat.", "hypothesis": "A cat did not sit."}]
    labels = {}
    for key, url in urls.items():
        result = ModelClient().predict(endpoint(url, read_timeout=5.0), config, "nli", inputs)
        labels[key] = result.outputs[0]["label"]
    # Three models: the negation cue, overlap alone (half the words: neutral), the baseline.
    assert labels == {"nli": "contradictory", "nli-overlap": "neutral", "nli-majority": "entailed"}
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=10)
    assert process.returncode == 0
    assert "Traceback" not in stderr
    assert stdout.count("demo model nli") == 3
