"""Demo datasets: our own small files for every demo task, plus real datasets from
``../shared/data`` when ``--shared-data`` is given (read in place, never copied here).

For each original dataset the perturbed copies named by the task's delta metrics are
generated (seeded). With ``options.evaluate`` every new dataset is evaluated on the task's
models that have an endpoint (runs go to the eval queue; progress shows on the run pages).
Idempotent: existing datasets are left alone.

Then each demo task's predictions-file model (``models_hub.demo.catalog``) is scored the way a
submitter without a server is: its handler runs here over every dataset of the task, offline,
and its outputs are uploaded as one predictions file per dataset (``predictions_import``).
Datasets it already has a finished run on are skipped; nothing is scored with ``--no-evaluate``.
"""

from __future__ import annotations

import ast
import csv
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path

from core.errors import ServiceError
from leaderboards.models import Dataset, EvaluationRun, RunStatus
from leaderboards.services.datasets import dataset_generate_perturbation, dataset_import
from leaderboards.services.predictions import predictions_import
from models_hub.demo.catalog import DemoModel, predictions_file_models
from models_hub.seed import demo_owner, ensure_demo_model
from models_hub.server import load_handler
from tasks.demo_registry import SeedOptions, register_seeder
from tasks.models import Task

DEMO_DIR = Path(__file__).resolve().parent / "demo_data"

DEMO_DATASETS = {
    "sentiment": ("Demo sentiment", "demo", "sentiment.jsonl"),
    "nli": ("Demo NLI", "demo", "nli.jsonl"),
    "qa": ("Demo QA", "demo", "qa.jsonl"),
    "hs": ("Demo hate speech", "demo", "hs.jsonl"),
}

# task code -> (name, slug, file): demo datasets whose gold answers are public, so that the
# owner of any model of the task browses its per-example results on them.
PUBLIC_DEMO_DATASETS = {
    "sentiment": ("Sentiment practice set (public gold)", "practice", "sentiment-practice.jsonl"),
}


def _jsonl(rows: Iterator[dict]) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode())


def _tweeteval(shared: Path) -> Iterator[dict]:
    folder = shared / "sentiment"
    mapping = {}
    for line in (folder / "mapping.txt").read_text(encoding="utf-8").splitlines():
        if line.strip():
            number, name = line.split("\t")
            mapping[number.strip()] = name.strip()
    texts = (folder / "val_text.txt").read_text(encoding="utf-8").splitlines()
    labels = (folder / "val_labels.txt").read_text(encoding="utf-8").splitlines()
    for index, (text, label) in enumerate(zip(texts, labels, strict=True), start=1):
        yield {
            "uid": f"tweeteval-val-{index}",
            "statement": text.strip(),
            "context": "A tweet (TweetEval sentiment, validation split).",
            "label": mapping[label.strip()],
            "tags": ["tweeteval"],
        }


ANLI_LABELS = {"e": "entailed", "n": "neutral", "c": "contradictory"}


def _anli_tags(row: dict) -> list[str]:
    try:
        tags = ast.literal_eval(row.get("tags") or "[]")
    except (ValueError, SyntaxError):
        tags = []
    if not tags and row.get("A1Code"):
        tags = [part.strip() for part in row["A1Code"].replace("-", ",").split(",")]
    return sorted({str(tag).strip() for tag in tags if str(tag).strip()})


def _anli(shared: Path) -> Iterator[dict]:
    with open(shared / "nli" / "ANLI_analysis_r1_dev.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            yield {
                "uid": row["uid"],
                "context": row["context"],
                "hypothesis": row["statement"],
                "label": ANLI_LABELS[row["gold_label"].strip()],
                "tags": _anli_tags(row),
            }


def _xquad(shared: Path) -> Iterator[dict]:
    data = json.loads((shared / "qa" / "xquad.en.json").read_text(encoding="utf-8"))
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                answers = list(dict.fromkeys(answer["text"] for answer in qa["answers"]))
                yield {
                    "uid": qa["id"],
                    "context": paragraph["context"],
                    "question": qa["question"],
                    "answer": answers if len(answers) > 1 else answers[0],
                    "tags": [article["title"][:100]],
                }


HATECHECK_LABELS = {"hateful": "hateful", "non-hateful": "not-hateful"}


def _hatecheck(shared: Path) -> Iterator[dict]:
    with open(shared / "hate" / "test_suite_cases.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            yield {
                "uid": f"hatecheck-{row['case_id']}",
                "statement": row["test_case"].strip(),
                "context": row["target_ident"].strip() or row["functionality"],
                "label": HATECHECK_LABELS[row["label_gold"].strip()],
                "tags": [row["functionality"]],
            }


def _flores(shared: Path) -> Iterator[dict]:
    folder = shared / "mt"
    nepali = (folder / "wikipedia.dev.ne-en.ne").read_text(encoding="utf-8").splitlines()
    english = (folder / "wikipedia.dev.ne-en.en").read_text(encoding="utf-8").splitlines()
    for index, (source, target) in enumerate(zip(nepali, english, strict=True), start=1):
        yield {
            "uid": f"flores-dev-{index}",
            "sourceText": source,
            "translatedText": target,
            "sourceLanguage": "Nepali",
            "targetLanguage": "English",
        }


# task code -> (name, slug, reader, source URL, description)
SHARED_DATASETS: dict[str, tuple[str, str, Callable[[Path], Iterator[dict]], str, str]] = {
    "sentiment": (
        "TweetEval sentiment (validation)",
        "tweeteval-val",
        _tweeteval,
        "https://github.com/cardiffnlp/tweeteval",
        "SemEval-2017 Task 4A tweets via TweetEval; validation rows 1-1600.",
    ),
    "nli": (
        "ANLI round 1 (dev)",
        "anli-r1-dev",
        _anli,
        "https://github.com/facebookresearch/anli",
        "Adversarial NLI round 1 dev, ANLIzing ANLI annotations as tags. CC BY-NC 4.0.",
    ),
    "qa": (
        "XQuAD English",
        "xquad-en",
        _xquad,
        "https://github.com/google-deepmind/xquad",
        "SQuAD v1.1 dev subset (XQuAD English), articles 1-37. CC BY-SA 4.0.",
    ),
    "hs": (
        "HateCheck",
        "hatecheck",
        _hatecheck,
        "https://github.com/paul-rottger/hatecheck-data",
        "Functional tests for hate speech detection; tags are the functionalities. CC BY 4.0.",
    ),
    "mt": (
        "FLoRes v1 ne-en (dev)",
        "flores-ne-en-dev",
        _flores,
        "https://github.com/facebookresearch/flores",
        "FLoRes v1 Nepali-English dev set. CC BY-SA 4.0.",
    ),
}


def _import(task: Task, slug: str, name: str, payload: io.BytesIO, options, **fields) -> None:
    if Dataset.objects.filter(task=task, slug=slug).exists():
        return
    try:
        dataset = dataset_import(
            task,
            payload,
            name=name,
            slug=slug,
            filename=f"{slug}.jsonl",
            evaluate=options.evaluate,
            **fields,
        )
    except ServiceError as error:
        problems = error.details.get("errors", [])[:5] if isinstance(error.details, dict) else []
        options.say(f"cannot import {task.code}/{slug}: {error.message} {problems}")
        return
    options.say(f"imported {dataset.row_count} examples into {task.code}/{slug}")
    config = task.config
    for kind in config.delta_metrics if config else ():
        copy = dataset_generate_perturbation(dataset, kind, evaluate=options.evaluate)
        options.say(f"generated {copy.row_count} {kind} examples for {task.code}/{slug}")


@register_seeder(order=20)
def seed_datasets(options: SeedOptions) -> None:
    """Import the demo datasets (and the shared ones), generate perturbations, evaluate."""
    for code, (name, slug, filename) in DEMO_DATASETS.items():
        task = Task.objects.select_related("current_config").filter(code=code).first()
        if task is None:
            continue
        payload = io.BytesIO((DEMO_DIR / filename).read_bytes())
        _import(
            task,
            slug,
            name,
            payload,
            options,
            description="Written for Dynatask's demo.",
            access_type="scoring",
            # Round 1's data, so the leaderboard's per-round trend has a point.
            round_number=1,
        )
    for code, (name, slug, filename) in PUBLIC_DEMO_DATASETS.items():
        task = Task.objects.select_related("current_config").filter(code=code).first()
        if task is not None:
            payload = io.BytesIO((DEMO_DIR / filename).read_bytes())
            description = "Written for Dynatask's demo; its gold answers are public."
            _import(
                task, slug, name, payload, options, description=description, access_type="public"
            )
    if not options.shared_data:
        return
    shared = Path(options.shared_data)
    for code, (name, slug, reader, source_url, description) in SHARED_DATASETS.items():
        task = Task.objects.select_related("current_config").filter(code=code).first()
        if task is None:
            continue
        try:
            payload = _jsonl(reader(shared))
        except (OSError, KeyError, ValueError) as error:
            options.say(f"cannot read the shared {code} data: {error}")
            continue
        _import(
            task,
            slug,
            name,
            payload,
            options,
            description=description,
            source_url=source_url,
            access_type="scoring",
            round_number=1,
        )


def predictions_file(handler, dataset: Dataset, output_names) -> io.BytesIO:
    """Return the JSON Lines predictions file of ``handler`` on ``dataset`` (one line per
    example: its uid and the config's output fields)."""
    examples = list(dataset.examples.order_by("position").values_list("uid", "inputs"))
    batch_size = getattr(handler, "batch_size", None) or 256
    rows = []
    for first in range(0, len(examples), batch_size):
        chunk = examples[first : first + batch_size]
        outputs = handler.predict([dict(inputs) for _uid, inputs in chunk])
        for (uid, _inputs), output in zip(chunk, outputs, strict=True):
            rows.append({"uid": uid, **{name: output[name] for name in output_names}})
    return _jsonl(iter(rows))


def _score_from_files(spec: DemoModel, task: Task, owner, options: SeedOptions) -> None:
    datasets = list(Dataset.objects.filter(task=task).order_by("id"))
    config = task.config
    if not datasets or config is None:
        return
    model = ensure_demo_model(task, owner, spec, protocol="none", endpoint_url="")
    scored = set(
        EvaluationRun.objects.filter(model=model, status=RunStatus.DONE).values_list(
            "dataset_id", flat=True
        )
    )
    handler = None
    for dataset in datasets:
        if dataset.pk in scored:
            continue
        handler = handler or load_handler(spec.handler, **spec.kwargs)
        payload = predictions_file(handler, dataset, config.output_names)
        predictions_import(
            model, dataset, payload, filename=f"{spec.key}-{dataset.slug}.jsonl", user=owner
        )
        options.say(f"scored {model.name} on {task.code}/{dataset.slug} from a predictions file")


@register_seeder(order=30)
def seed_predictions_files(options: SeedOptions) -> None:
    """Score each demo task's predictions-file model on every dataset of the task (not with
    ``evaluate`` off: scoring is evaluation, done here rather than queued)."""
    owner = demo_owner()
    if owner is None or not options.evaluate:
        return
    for spec in predictions_file_models():
        task = Task.objects.select_related("current_config").filter(code=spec.task).first()
        if task is None:
            continue
        try:
            _score_from_files(spec, task, owner, options)
        except ServiceError as error:
            options.say(f"cannot score {spec.name} for {spec.task}: {error.message}")
