"""The model server for Python handlers: validation, health, batching, keep-alive, serve()."""

from __future__ import annotations

import http.client
import json
import threading

import pytest

from models_hub.server import load_handler, make_server, serve
from tests.models_hub.servers import running


class EchoHandler:
    """Returns the statement back; records the batch sizes it was given."""

    model_version = "echo-1"
    batch_size = 2

    def __init__(self, suffix: str = ""):
        self.suffix = suffix
        self.batch_sizes: list[int] = []

    def predict(self, batch):
        self.batch_sizes.append(len(batch))
        return [{"echo": str(item.get("statement")) + self.suffix} for item in batch]


class BrokenHandler:
    def predict(self, batch):
        raise RuntimeError("model crashed")


class ShortHandler:
    def predict(self, batch):
        return []


@pytest.fixture
def echo_server():
    handler = EchoHandler()
    with running(make_server(handler, max_body_bytes=2_000)) as server:
        yield server, handler


def exchange(server, method, path, body=None, headers=None):
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def test_predict_in_handler_sized_slices(echo_server):
    server, handler = echo_server
    inputs = [{"uid": str(index), "statement": f"s{index}"} for index in range(5)]
    status, body = exchange(server, "POST", "/", json.dumps({"task": "t", "inputs": inputs}))
    assert status == 200
    assert body == {
        "outputs": [{"echo": f"s{index}"} for index in range(5)],
        "model_version": "echo-1",
    }
    assert handler.batch_sizes == [2, 2, 1]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "valid JSON"),
        (b'{"task": "t",\n "inputs": [] "x": 1}', "Expecting ',' delimiter at line 2, column 15"),
        (b"[1, 2]", "object"),
        (b'{"inputs": "x"}', '"inputs" must be a list'),
        (b'{"inputs": [1]}', "inputs[0]"),
        (b'{"inputs": [], "task": 3}', '"task"'),
    ],
)
def test_bad_requests_answer_400(echo_server, body, message):
    server, _handler = echo_server
    status, payload = exchange(server, "POST", "/", body)
    assert status == 400
    assert message in payload["error"]


def test_body_over_the_limit_answers_413(echo_server):
    server, _handler = echo_server
    big = json.dumps({"inputs": [{"statement": "x" * 3_000}]})
    status, payload = exchange(server, "POST", "/", big)
    assert status == 413 and "over" in payload["error"]


def test_missing_content_length_answers_411(echo_server):
    server, _handler = echo_server
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
    connection.putrequest("POST", "/")
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 411
    connection.close()


def test_unknown_path_and_method(echo_server):
    server, _handler = echo_server
    assert exchange(server, "GET", "/nope")[0] == 404
    assert exchange(server, "POST", "/nope", b"{}")[0] == 404
    assert exchange(server, "PUT", "/", b"{}")[0] == 405


def test_health(echo_server):
    server, _handler = echo_server
    status, body = exchange(server, "GET", "/health")
    assert status == 200
    assert body["status"] == "ok" and body["model_version"] == "echo-1"
    assert 0 < body["memory_gb"] < 1024


@pytest.mark.parametrize("handler", [BrokenHandler(), ShortHandler()])
def test_handler_failures_answer_500_without_details(handler):
    with running(make_server(handler)) as server:
        status, body = exchange(server, "POST", "/", json.dumps({"inputs": [{"statement": "x"}]}))
    assert status == 500
    assert body == {"error": "the model failed"}


def test_keep_alive_across_predictions(echo_server):
    server, _handler = echo_server
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=5)
    sockets = set()
    for _ in range(3):
        connection.request("POST", "/", body=json.dumps({"inputs": [{"statement": "a"}]}))
        response = connection.getresponse()
        assert response.status == 200 and response.getheader("Connection") != "close"
        response.read()
        sockets.add(id(connection.sock))
    assert len(sockets) == 1
    connection.close()


def test_make_server_refuses_objects_without_predict():
    with pytest.raises(TypeError):
        make_server(object())


def test_load_handler_with_keyword_arguments():
    handler = load_handler("tests.models_hub.test_server:EchoHandler", suffix="!")
    assert handler.predict([{"statement": "a"}]) == [{"echo": "a!"}]
    with pytest.raises(ValueError):
        load_handler("no_colon_here")


def test_serve_runs_until_shut_down():
    started = {}

    def ready(server):
        started["url"] = server.url
        threading.Thread(target=server.shutdown, daemon=True).start()

    serve("models_hub.demo:SentimentHandler", "127.0.0.1", 0, ready=ready)
    assert started["url"].startswith("http://127.0.0.1:")


def test_serve_model_command_is_thin(monkeypatch):
    from django.core.management import call_command

    from models_hub.management.commands import serve_model

    calls = []

    class FakeServer:
        url = "http://127.0.0.1:8101/"

    def fake_serve(handler_path, host, port, *, handler_kwargs, ready):
        calls.append((handler_path, host, port, handler_kwargs))
        ready(FakeServer())

    monkeypatch.setattr(serve_model, "serve", fake_serve)
    output = []
    call_command(
        "serve_model",
        "models_hub.demo:QAHandler",
        "--port",
        "8101",
        "--kwargs",
        '{"window_words": 5}',
        stdout=type(
            "Out", (), {"write": lambda self, text: output.append(text), "flush": lambda self: None}
        )(),
    )
    assert calls == [("models_hub.demo:QAHandler", "127.0.0.1", 8101, {"window_words": 5})]
    assert "http://127.0.0.1:8101/" in "".join(output)
