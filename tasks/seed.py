"""Demo tasks and contexts (our own small data; real datasets from ../shared/data on request)."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from tasks import services
from tasks.demo_registry import SeedOptions, register_seeder
from tasks.models import Task

DEMO_DIR = Path(__file__).resolve().parent / "demo_data"
DEMO_ADMIN_USERNAME = "admin"
DEMO_ADMIN_PASSWORD = os.environ.get("DYNATASK_DEMO_ADMIN_PASSWORD", "dynatask-admin")
DEMO_WORKERS = [("worker1", "dynatask-worker1"), ("worker2", "dynatask-worker2")]

DEMO_TASKS = [
    {
        "code": "sentiment",
        "name": "Sentiment analysis",
        "description": "Write statements whose sentiment the model gets wrong.",
        "config": "sentiment.yaml",
        "contexts": "sentiment_contexts.jsonl",
    },
    {
        "code": "nli",
        "name": "Natural language inference",
        "description": "Write hypotheses that fool an inference model.",
        "config": "nli.yaml",
        "contexts": "nli_contexts.jsonl",
    },
    {
        "code": "qa",
        "name": "Question answering",
        "description": "Ask questions about a passage that an extractive model answers wrongly.",
        "config": "qa.yaml",
        "contexts": "qa_contexts.jsonl",
    },
    {
        "code": "hs",
        "name": "Hate speech detection",
        "description": "Write statements that a hate-speech classifier misjudges.",
        "config": "hs.yaml",
        "contexts": "hs_contexts.jsonl",
    },
    {
        "code": "chat",
        "name": "Chat with two models",
        "description": "Chat with two small models at once, pick the better answer each turn, "
        "and catch them saying something wrong.",
        "config": "chat.yaml",
        # A chat task needs no contexts: the worker starts the conversation.
        "contexts": None,
    },
    {
        "code": "arena",
        "name": "Chat arena",
        "description": "Two anonymous chat models answer you side by side: vote for the better "
        "one, then see who they were. The arena board rates them.",
        "config": "arena.yaml",
        # The demo chat models are registered and the first votes seeded by annotation/seed.py.
        "contexts": None,
    },
]

MT_CONFIG = """\
# Demo task written for Dynatask: Nepali-English translation (FLoRes v1 dev from shared data).
context:
  - name: sourceLanguage
    type: string
  - name: targetLanguage
    type: string
input:
  - name: sourceText
    type: string
  - name: translatedText
    type: string
output:
  - name: translatedText
model_wrong_metric:
  type: ask_user
perf_metric:
  - type: bleu
    reference_name: translatedText
  - type: chrf
    reference_name: translatedText
aggregation_metric:
  type: dynascore
"""


def ensure_user(username: str, password: str, *, superuser: bool = False):
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_password(password)
        user.is_staff = superuser
        user.is_superuser = superuser
        user.save()
    return user


def _anli_contexts(shared: Path, limit: int = 200) -> bytes:
    out = io.StringIO()
    with open(shared / "nli" / "ANLI_analysis_r1_dev.csv", newline="", encoding="utf-8") as f:
        seen = set()
        for row in csv.DictReader(f):
            premise = row["context"].strip()
            if premise and premise not in seen:
                seen.add(premise)
                out.write(json.dumps({"context": {"context": premise}, "tag": "anli-r1"}) + "\n")
            if len(seen) >= limit:
                break
    return out.getvalue().encode()


def _xquad_contexts(shared: Path) -> bytes:
    data = json.loads((shared / "qa" / "xquad.en.json").read_text(encoding="utf-8"))
    out = io.StringIO()
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            record = {"context": {"context": paragraph["context"]}, "tag": article["title"][:100]}
            out.write(json.dumps(record) + "\n")
    return out.getvalue().encode()


def _tweet_contexts(shared: Path, limit: int = 200) -> bytes:
    lines = (shared / "sentiment" / "val_text.txt").read_text(encoding="utf-8").splitlines()
    out = io.StringIO()
    for text in lines[:limit]:
        prompt = f"Reply to this tweet: {text.strip()}"
        out.write(json.dumps({"context": {"context": prompt}, "tag": "tweeteval"}) + "\n")
    return out.getvalue().encode()


def _hatecheck_contexts(shared: Path) -> bytes:
    out = io.StringIO()
    seen = set()
    with open(shared / "hate" / "test_suite_cases.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            template = row["case_templ"].strip()
            if template and template not in seen:
                seen.add(template)
                record = {"context": {"context": template}, "tag": row["functionality"][:100]}
                out.write(json.dumps(record) + "\n")
    return out.getvalue().encode()


def _flores_contexts(shared: Path, limit: int = 200) -> bytes:
    out = io.StringIO()
    for _ in range(limit):
        record = {"context": {"sourceLanguage": "Nepali", "targetLanguage": "English"}}
        out.write(json.dumps(record) + "\n")
    return out.getvalue().encode()


SHARED_CONTEXTS = {
    "sentiment": _tweet_contexts,
    "nli": _anli_contexts,
    "qa": _xquad_contexts,
    "hs": _hatecheck_contexts,
    "mt": _flores_contexts,
}


@register_seeder(order=0)
@transaction.atomic
def seed_tasks(options: SeedOptions) -> None:
    """Create the admin login, two workers, the demo tasks and their contexts (idempotent)."""
    admin = ensure_user(DEMO_ADMIN_USERNAME, DEMO_ADMIN_PASSWORD, superuser=True)
    for username, password in DEMO_WORKERS:
        ensure_user(username, password)
    specs = list(DEMO_TASKS)
    if options.shared_data:
        specs.append(
            {
                "code": "mt",
                "name": "Machine translation (ne-en)",
                "description": "Translate Nepali to English; FLoRes v1 dev from the shared data.",
                "yaml": MT_CONFIG,
            }
        )
    for spec in specs:
        task = Task.objects.filter(code=spec["code"]).first()
        if task is None:
            yaml_text = spec.get("yaml") or (DEMO_DIR / spec["config"]).read_text()
            task = services.task_create(
                code=spec["code"],
                name=spec["name"],
                description=spec["description"],
                yaml_text=yaml_text,
                owners=[admin],
                created_by=admin,
            )
            options.say(f"created task {task.code}")
        if task.contexts.exists() or not (spec.get("contexts") or spec.get("yaml")):
            continue
        loader = SHARED_CONTEXTS.get(task.code) if options.shared_data else None
        if loader is not None:
            payload = loader(options.shared_data)
            source = "shared data"
        else:
            payload = (DEMO_DIR / spec["contexts"]).read_bytes()
            source = "demo data"
        count = services.contexts_import(task, io.BytesIO(payload), filename="contexts.jsonl")
        options.say(f"imported {count} contexts into {task.code} from {source}")
