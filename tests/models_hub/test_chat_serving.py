"""Our model server speaks the OpenAI chat protocol: the official ``openai`` client holds a
streamed conversation with the demo chat models (what vLLM, llama.cpp and Ollama serve)."""

from __future__ import annotations

import json

import openai
import pytest
import requests

from models_hub.demo.chat import RetrievalChatHandler, RuleChatHandler
from models_hub.server import make_server


@pytest.fixture
def chat_server():
    servers = []

    def start(handler):
        server = make_server(handler, "127.0.0.1", 0)
        server.start_in_thread()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def streamed(client, messages):
    pieces, usage, finish = [], None, None
    stream = client.chat.completions.create(
        model="demo", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        if chunk.choices:
            pieces.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    return pieces, usage, finish


def test_the_openai_client_holds_a_streamed_conversation(chat_server):
    server = chat_server(RetrievalChatHandler(token_delay=0))
    client = openai.OpenAI(base_url=server.url + "v1", api_key="unused", max_retries=0)
    messages = [{"role": "user", "content": "Why does Mars look red?"}]
    pieces, usage, finish = streamed(client, messages)
    reply = "".join(pieces)
    assert "iron oxide" in reply and len([p for p in pieces if p]) > 5
    assert finish == "stop" and usage.completion_tokens == len([p for p in pieces if p])
    messages += [
        {"role": "assistant", "content": reply},
        {"role": "user", "content": "How hot should the water be for green tea?"},
    ]
    pieces, usage, _finish = streamed(client, messages)
    assert "80 degrees" in "".join(pieces)
    assert usage.prompt_tokens > 20  # the whole conversation was sent


def test_max_tokens_cuts_with_finish_reason_length(chat_server):
    server = chat_server(RuleChatHandler(token_delay=0))
    client = openai.OpenAI(base_url=server.url + "v1", api_key="unused", max_retries=0)
    answer = client.chat.completions.create(
        model="rules", messages=[{"role": "user", "content": "What is tea?"}], max_tokens=3
    )
    assert answer.choices[0].finish_reason == "length"
    assert len(answer.choices[0].message.content.split()) == 3
    assert answer.model == "rules-1"
    assert [model.id for model in client.models.list()] == ["rules-1"]


def test_bad_requests_get_400_and_the_connection_lives_on(chat_server):
    server = chat_server(RuleChatHandler(token_delay=0))
    url = server.url + "v1/chat/completions"
    with requests.Session() as session:
        bad = session.post(url, json={"messages": [{"role": "robot", "content": "x"}]})
        assert bad.status_code == 400 and "messages[0]" in bad.json()["error"]["message"]
        good = session.post(url, json={"messages": [{"role": "user", "content": "hello"}]})
        assert good.json()["choices"][0]["message"]["content"].startswith("Hello")
        assert session.get(server.url).status_code == 200


def test_a_stream_is_server_sent_events_ending_in_done(chat_server):
    server = chat_server(RuleChatHandler(token_delay=0))
    response = requests.post(
        server.url + "v1/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}], "stream": True},
        stream=True,
    )
    assert response.headers["Content-Type"] == "text/event-stream"
    events = [line for line in response.iter_lines() if line]
    assert events[-1] == b"data: [DONE]"
    first = json.loads(events[0].removeprefix(b"data: "))
    assert first["choices"][0]["delta"]["role"] == "assistant"


def test_the_native_protocol_still_answers(chat_server):
    server = chat_server(RetrievalChatHandler(token_delay=0))
    answer = requests.post(server.url, json={"inputs": [{"message": "tea caffeine"}]}).json()
    assert "caffeine" in answer["outputs"][0]["reply"]
