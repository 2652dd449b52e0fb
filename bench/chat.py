#!/usr/bin/env python
"""Chat collection: time to the first streamed token, and many conversations at once.

    .venv/bin/python bench/chat.py [--quick] [--n 60] [--conversations 50] [--turns 3]

Runs a chat model server (``manage.py serve_model models_hub.demo.chat:RuleChatHandler``, the
demo's pattern-rule model, as a process), the chat queue's worker (RQ's SimpleWorker, as a
process: the pump streams every reply from there) and a private redis-server, against a
throwaway PostgreSQL database. The web side is gunicorn (2 workers x 64 threads, gthread:
a server-sent-event stream holds a thread); this process is the load generator, talking HTTP
with API tokens.

1. **Added time to the first token.** Side by side, interleaved, ``--n`` times each after a
   warm-up: ``direct`` asks the model server for a streamed completion over HTTP and stops the
   clock at the first piece of text; ``platform`` posts a message to a conversation (one
   model) on ``turns/stream/``, which answers with the turn's server-sent events, and stops
   the clock at the first ``event: text``. The model streams without delay. Target: the p50 of
   ``platform - direct`` at most 30 ms.
2. **Concurrent conversations.** ``--conversations`` threads each hold a conversation of
   ``--turns`` turns with two models that stream 20 tokens a second (a second model server,
   ``token_delay`` 0.05 s): send on ``turns/stream/`` and read both replies' events from
   its response to their end, choose, next. A turn is lost if a reply does not end ``done``.
   The added latency of a reply is the time from the send to its ``done`` event minus the
   model call's own latency (stored on the reply); its p95 is reported, with the CPU
   seconds per turn of each group of this run's own processes (its children and its
   database's backends; the load generator included).

Prints one JSON line: ``ttft_direct_p50_ms``, ``ttft_platform_p50_ms``, ``ttft_added_p50_ms``,
``ttft_added_p95_ms``, ``n``, and under ``concurrent``: ``conversations``, ``turns``,
``turns_lost``, ``added_p50_ms``, ``added_p95_ms``, ``model_reply_p50_ms``, ``wall_s``,
``cpu_ms_per_turn`` (by group) and ``reference_loop_ms`` (this machine's speed).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import requests  # noqa: E402

from bench import harness  # noqa: E402

WARMUP = 10
RULES = "models_hub.demo.chat:RuleChatHandler"
SEED = r"""
import json, sys
import django
django.setup()
from django.contrib.auth import get_user_model
from tasks import services as task_services
from models_hub import services as hub_services
from models_hub.models import RegisteredModel

spec = json.loads(sys.argv[1])
User = get_user_model()
owner, _ = User.objects.get_or_create(username="bench-owner", defaults={"is_staff": True})
text = open("tasks/demo_data/chat.yaml").read()
result = {}
for code, models, urls in (("chatone", 1, [spec["fast"]]), ("chatmany", 2, spec["slow"])):
    yaml_text = text.replace("models_per_turn: 2", f"models_per_turn: {models}")
    if models == 1:
        yaml_text = yaml_text.replace("  turn_choice: [best, tie, all_bad]\n", "")
    yaml_text = yaml_text.replace("max_turns: 8", "max_turns: 50")
    yaml_text = yaml_text.replace("min_turns: 2", "min_turns: 1")
    task = task_services.task_create(code=code, name=code, yaml_text=yaml_text, owners=[owner])
    round_ = task.rounds.get(number=1)
    loop = []
    for index, url in enumerate(urls):
        loop.append(RegisteredModel.objects.create(task=task, owner=owner, name=f"{code}-{index}",
            protocol="openai_chat", endpoint_url=url, options={"model": "rules"},
            read_timeout=10.0, connect_timeout=1.0, max_concurrency=64))
    hub_services.model_set_in_loop(round_, loop, owner)
from api.auth import api_token_create
tokens = [api_token_create(User.objects.create(username=f"bench-chatter-{i}"))
          for i in range(spec["users"])]
print(json.dumps({"tokens": tokens}))
"""


def start_chat_server(processes, env, token_delay: float):
    port = harness.free_port()
    command = [harness.PYTHON, "manage.py", "serve_model", RULES, "--port", str(port)]
    command += ["--host", "127.0.0.1", "--kwargs", json.dumps({"token_delay": token_delay})]
    processes.start(f"model:{port}", command, env)
    harness.wait_for_port(port, 30)
    return f"http://127.0.0.1:{port}/"


def seed(env: dict, fast: str, slow: list[str], users: int) -> list[str]:
    spec = json.dumps({"fast": fast, "slow": slow, "users": users})
    done = subprocess.run(
        [harness.PYTHON, "-c", SEED, spec],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])["tokens"]


def _json(response) -> dict:
    if response.status_code >= 300:
        raise RuntimeError(f"HTTP {response.status_code}: {response.content[:300]!r}")
    return response.json()


class Chatter:
    """One worker holding a conversation over HTTP with its API token (one kept session)."""

    def __init__(self, base: str, token: str, code: str):
        self.base = base.rstrip("/")
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {token}"
        response = self.session.post(f"{self.base}/api/v1/tasks/{code}/conversations/")
        self.conversation = _json(response)["id"]

    def send(self, message: str) -> dict:
        url = f"{self.base}/api/v1/conversations/{self.conversation}/turns/"
        response = self.session.post(url, json={"message": message})
        if response.status_code != 201:
            raise RuntimeError(response.content[:300])
        return response.json()

    def events(self, reply: dict):
        """The reply's server-sent events as ``(kind, data)``, read as they come."""
        headers = {"Accept": "text/event-stream"}
        with self.session.get(self.base + reply["stream_url"], headers=headers, stream=True) as got:
            yield from _server_events(got)

    def send_streamed(self, message: str):
        """Send ``message`` and read the turn's events in the same response: ``("turn",
        turn)``, then ``(kind, data)`` with each reply's id in ``data["reply"]``."""
        url = f"{self.base}/api/v1/conversations/{self.conversation}/turns/stream/"
        headers = {"Accept": "text/event-stream"}
        with self.session.post(url, json={"message": message}, headers=headers, stream=True) as got:
            if got.status_code != 201:
                raise RuntimeError(got.content[:300])
            for kind, data in _server_events(got):
                yield kind, json.loads(data)

    def choose(self, turn: dict) -> None:
        url = f"{self.base}/api/v1/conversations/{self.conversation}/turns/{turn['id']}/choice/"
        response = self.session.post(url, json={"choice": "tie"})
        if response.status_code != 200:
            raise RuntimeError(response.content[:300])

    def reply(self, reply: dict) -> dict:
        url = f"{self.base}/api/v1/conversations/{self.conversation}/replies/{reply['id']}/"
        return _json(self.session.get(url))


def _server_events(response):
    kind = None
    for line in response.iter_lines(chunk_size=1, decode_unicode=True):
        if line.startswith("event: "):
            kind = line[7:]
        elif line.startswith("data: ") and kind:
            yield kind, line[6:]
            kind = None


DIRECT = requests.Session()


def first_token_direct(url: str) -> float:
    """A streamed chat completion straight from the model server, to its first content."""
    body = {"model": "rules", "messages": [{"role": "user", "content": "what is tea?"}]}
    started = time.perf_counter()
    stamp = None
    with DIRECT.post(
        url + "v1/chat/completions", json={**body, "stream": True}, stream=True
    ) as got:
        for line in got.iter_lines(chunk_size=1):
            text = line.startswith(b"data: {") and b'"content": "' in line
            if stamp is None and text and b'"content": ""' not in line:
                stamp = time.perf_counter()
    return ((stamp or time.perf_counter()) - started) * 1000


def first_token_platform(chatter: Chatter, index: int) -> float:
    """One request sends the message and streams the reply (``turns/stream/``)."""
    started = time.perf_counter()
    stamp = None
    for kind, _data in chatter.send_streamed(f"what is tea number {index}?"):
        if kind == "text" and stamp is None:
            stamp = time.perf_counter()
        if kind in ("done", "error", "cancelled"):
            if kind != "done":
                raise RuntimeError(f"reply ended {kind}")
            break
    return ((stamp or time.perf_counter()) - started) * 1000


def measure_first_token(base: str, token: str, fast: str, n: int) -> dict:
    chatter = Chatter(base, token, "chatone")
    direct, platform = [], []
    for index in range(WARMUP + n):
        # Interleaved pairs: the machine's load weighs on both sides alike.
        one, two = first_token_direct(fast), first_token_platform(chatter, index)
        if index >= WARMUP:
            direct.append(one)
            platform.append(two)
        if (index + 1) % 40 == 0:  # a conversation has at most 50 turns
            chatter = Chatter(base, token, "chatone")
    added = [b - a for a, b in zip(direct, platform, strict=True)]
    return {
        "ttft_direct_p50_ms": round(statistics.median(direct), 2),
        "ttft_platform_p50_ms": round(statistics.median(platform), 2),
        "ttft_added_p50_ms": round(statistics.median(added), 2),
        "ttft_added_p95_ms": harness.percentile(added, 95),
        "n": n,
    }


def converse(base: str, token: str, turns: int, results: list, lock: threading.Lock) -> None:
    """One conversation: each turn is sent and its replies read in the same response."""
    chatter = Chatter(base, token, "chatmany")
    for number in range(turns):
        started = time.perf_counter()
        turn, ended = None, {}
        message = f"Why is the sky blue, asks {token[-6:]} ({number})?"
        for kind, data in chatter.send_streamed(message):
            if kind == "turn":
                turn = data
            elif kind in ("done", "error", "cancelled"):
                ended[data["reply"]] = (kind, time.perf_counter())
        rows = []
        for reply in turn["replies"]:
            kind, stamp = ended.get(reply["id"], ("lost", time.perf_counter()))
            stored = chatter.reply(reply)
            rows.append((kind, (stamp - started) * 1000, stored.get("latency_ms")))
        done = all(kind == "done" for kind, _, _ in rows)
        if done:
            chatter.choose(turn)
        with lock:
            results.append(rows)
        if not done:
            break


def measure_concurrent(
    base: str, tokens: list[str], conversations: int, turns: int, database_name: str
) -> dict:
    results: list = []
    lock = threading.Lock()
    before = harness.cpu_snapshot(database_name)
    started = time.perf_counter()
    threads = [
        threading.Thread(target=converse, args=(base, tokens[i], turns, results, lock))
        for i in range(conversations)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    wall = time.perf_counter() - started
    cpu = harness.cpu_delta(before, harness.cpu_snapshot(database_name))
    done_turns = [rows for rows in results if all(kind == "done" for kind, _, _ in rows)]
    added = [total - (latency or 0) for rows in done_turns for _kind, total, latency in rows]
    model = [latency for rows in done_turns for _kind, _total, latency in rows if latency]
    count = max(1, len(done_turns))
    return {
        "conversations": conversations,
        "turns": len(results),
        "turns_lost": conversations * turns - len(done_turns),
        "added_p50_ms": round(statistics.median(added), 1) if added else None,
        "added_p95_ms": harness.percentile(added, 95),
        "model_reply_p50_ms": round(statistics.median(model), 1) if model else None,
        "wall_s": round(wall, 1),
        "cpu_ms_per_turn": {
            name: round(seconds * 1000 / count, 2) for name, seconds in cpu.items()
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 pairs, 20 conversations")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--turns", type=int, default=3)
    options = parser.parse_args()
    n = options.n or (30 if options.quick else 100)
    conversations = options.conversations or (20 if options.quick else 50)
    database = harness.ThrowawayDatabase("dynatask_bench_chat")
    processes = harness.Processes()
    _redis, redis_port = harness.start_redis(processes)
    env = harness.base_env(database.url, f"redis://127.0.0.1:{redis_port}/0")
    env["ANNOTATION_LIVE_LINGER_SECONDS"] = "5"
    try:
        database.create(env)
        fast = start_chat_server(processes, env, 0.0)
        slow = [start_chat_server(processes, env, 0.05) for _ in range(2)]
        tokens = seed(env, fast, slow, max(conversations, 1))
        harness.start_rq_worker(processes, env, ("chat",))
        # Server-sent events hold a thread each: 2 workers x 64 threads take 50 conversations.
        log = ROOT / "var" / "log" / "bench-chat-gunicorn.log"
        _web, web_port = harness.start_gunicorn(processes, env, workers=2, threads=64, log_path=log)
        base = f"http://127.0.0.1:{web_port}"
        database.settle()
        result = measure_first_token(base, tokens[0], fast, n)
        result["concurrent"] = measure_concurrent(
            base, tokens, conversations, options.turns, database.name
        )
        result["reference_loop_ms"] = harness.reference_loop_ms()
    finally:
        processes.stop()
        database.drop()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
