"""The streaming chat client: pieces as they come, usage, bounds, cancel, guards."""

from __future__ import annotations

import threading

import pytest

from models_hub.chat_client import ChatClient, ReplyCancelled, stream_reply
from models_hub.client import EndpointSpec
from models_hub.demo.chat import RetrievalChatHandler, RuleChatHandler
from models_hub.errors import (
    ModelAddressRefused,
    ModelBadResponse,
    ModelConfigurationError,
    ModelResponseTooLarge,
    ModelTimeout,
)
from models_hub.protocols.openai_chat_stream import SSEDecoder, parse_chunk
from models_hub.server import make_server

LOOPBACK = ("127.0.0.1",)
QUESTION = [{"role": "user", "content": "Why does Mars look red?"}]


@pytest.fixture
def serve():
    servers = []

    def start(handler):
        server = make_server(handler, "127.0.0.1", 0)
        server.start_in_thread()
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def endpoint(url: str, **fields) -> EndpointSpec:
    fields.setdefault("options", {"model": "demo"})
    return EndpointSpec(url=url, protocol="openai_chat", allowed_hosts=LOOPBACK, **fields)


def test_pieces_arrive_in_order_with_usage_and_version(serve):
    url = serve(RetrievalChatHandler(token_delay=0))
    pieces: list[str] = []
    result = stream_reply(endpoint(url), QUESTION, on_text=pieces.append)
    assert "".join(pieces) == result.text and "iron oxide" in result.text
    assert result.finish_reason == "stop" and result.model_version == "retrieval-notes-1"
    assert result.completion_tokens == len(pieces) and result.prompt_tokens == 5  # 5 words
    assert result.first_token_ms is not None and result.first_token_ms <= result.latency_ms
    assert "usage" in result.raw and result.raw["usage"]["completion_tokens"] == len(pieces)


def test_a_system_prompt_goes_first(serve):
    seen = []

    class Recording(RuleChatHandler):
        def chat(self, messages, options):
            seen.append(messages)
            return super().chat(messages, options)

    url = serve(Recording(token_delay=0))
    stream_reply(endpoint(url), QUESTION, system_prompt="Be brief.")
    assert seen[0][0] == {"role": "system", "content": "Be brief."}


def test_a_reply_over_max_chars_fails(serve):
    url = serve(RetrievalChatHandler(token_delay=0))
    with pytest.raises(ModelResponseTooLarge):
        stream_reply(endpoint(url), QUESTION, max_chars=40)


def test_a_slow_reply_is_cut_at_its_total_deadline(serve):
    url = serve(RuleChatHandler(token_delay=0.2))
    with pytest.raises(ModelTimeout):
        stream_reply(
            endpoint(url), [{"role": "user", "content": "what is tea?"}], total_seconds=0.5
        )


def test_should_stop_cancels_with_the_text_so_far(serve):
    url = serve(RuleChatHandler(token_delay=0.05))
    pieces: list[str] = []
    with pytest.raises(ReplyCancelled) as cancelled:
        stream_reply(
            endpoint(url),
            [{"role": "user", "content": "what is tea?"}],
            on_text=pieces.append,
            should_stop=lambda: len(pieces) >= 2,
        )
    assert cancelled.value.partial == "".join(pieces)


def test_private_addresses_are_refused_without_the_allowlist(serve):
    url = serve(RuleChatHandler(token_delay=0))
    spec = EndpointSpec(url=url, protocol="openai_chat", options={"model": "demo"})
    with pytest.raises(ModelAddressRefused):
        ChatClient().stream_reply(spec, QUESTION)


def test_other_protocols_cannot_chat(serve):
    url = serve(RuleChatHandler(token_delay=0))
    with pytest.raises(ModelConfigurationError):
        stream_reply(EndpointSpec(url=url, allowed_hosts=LOOPBACK), QUESTION)


def test_the_concurrency_cap_holds_for_streams(serve):
    lock, state = threading.Lock(), {"now": 0, "most": 0}

    class Counting(RuleChatHandler):
        def chat(self, messages, options):
            with lock:
                state["now"] += 1
                state["most"] = max(state["most"], state["now"])
            try:
                yield from super().chat(messages, options)
            finally:
                with lock:
                    state["now"] -= 1

    url = serve(Counting(token_delay=0.05))
    spec = endpoint(url, max_concurrency=1)
    message = [{"role": "user", "content": "what is tea?"}]
    threads = [threading.Thread(target=stream_reply, args=(spec, message)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert state["most"] == 1


def test_sse_lines_split_anywhere_are_joined():
    decoder = SSEDecoder()
    stream = b'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n: keep-alive\n\ndata: [DO'
    got = [p for byte in range(len(stream)) for p in decoder.feed(stream[byte : byte + 1])]
    got += list(decoder.feed(b"NE]\n\n"))
    assert [parse_chunk(got[0]).text, got[1]] == ["Hel", "[DONE]"]


def test_an_endless_line_is_too_large():
    decoder = SSEDecoder(max_line_bytes=100)
    with pytest.raises(ModelResponseTooLarge):
        list(decoder.feed(b"data: " + b"x" * 200))


def test_malformed_chunks_are_bad_responses():
    for payload in ("not json", "[1]", '{"choices":[{"delta":{"content":5}}]}', "NaN"):
        with pytest.raises(ModelBadResponse):
            parse_chunk(payload)
    with pytest.raises(ModelBadResponse, match="error in its stream"):
        parse_chunk('{"error": {"message": "overloaded"}}')
