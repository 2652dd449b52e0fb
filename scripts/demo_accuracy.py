"""Measure the demo models on the shared evaluation data and compare with majority baselines.

Usage (from the repository root)::

    .venv/bin/python scripts/demo_accuracy.py [--shared-data ../shared/data] [--limit N]

The data is read in place from ``--shared-data`` (default: ``../shared/data`` next to the
repository); nothing is copied into the repository. See each data folder's ``SOURCE.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import string
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))

from models_hub.demo import (  # noqa: E402 (the repository root is put on the path first)
    HateSpeechHandler,
    NLIHandler,
    QAHandler,
    SentimentHandler,
)

BATCH = 256


def accuracy(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """Return the share of exact matches."""
    return sum(g == p for g, p in zip(gold, predicted, strict=True)) / len(gold)


def macro_f1(gold: Sequence[str], predicted: Sequence[str], labels: Sequence[str]) -> float:
    """Return the unweighted mean of the per-label F1 scores."""
    scores = []
    for label in labels:
        true_positive = sum(g == label and p == label for g, p in zip(gold, predicted, strict=True))
        predicted_count = sum(p == label for p in predicted)
        gold_count = sum(g == label for g in gold)
        if true_positive == 0:
            scores.append(0.0)
            continue
        precision, recall = true_positive / predicted_count, true_positive / gold_count
        scores.append(2 * precision * recall / (precision + recall))
    return sum(scores) / len(scores)


def normalise_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower case, no punctuation, articles or extra spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def squad_f1(gold: str, predicted: str) -> float:
    """Return the SQuAD token F1 of one prediction."""
    gold_tokens, predicted_tokens = (
        normalise_answer(gold).split(),
        normalise_answer(predicted).split(),
    )
    common = Counter(gold_tokens) & Counter(predicted_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def run(handler, inputs: list[dict]) -> tuple[list[dict], float]:
    """Return the handler's outputs and the examples per second."""
    started = time.perf_counter()
    outputs: list[dict] = []
    for first in range(0, len(inputs), BATCH):
        outputs.extend(handler.predict(inputs[first : first + BATCH]))
    return outputs, len(inputs) / (time.perf_counter() - started)


def classification_report(
    name: str, handler, inputs: list[dict], gold: list[str], labels: Sequence[str]
) -> dict:
    """Evaluate a classifier and its majority-class baseline."""
    outputs, speed = run(handler, inputs)
    predicted = [output["label"] for output in outputs]
    majority = Counter(gold).most_common(1)[0][0]
    baseline = [majority] * len(gold)
    return {
        "task": name,
        "examples": len(gold),
        "accuracy": accuracy(gold, predicted),
        "macro_f1": macro_f1(gold, predicted, labels),
        "majority_label": majority,
        "majority_accuracy": accuracy(gold, baseline),
        "majority_macro_f1": macro_f1(gold, baseline, labels),
        "examples_per_second": speed,
    }


def sentiment(data: Path, limit: int | None) -> dict:
    """TweetEval sentiment validation (shared part)."""
    names = {"0": "negative", "1": "neutral", "2": "positive"}
    texts = (data / "sentiment/val_text.txt").read_text(encoding="utf-8").splitlines()
    labels = (data / "sentiment/val_labels.txt").read_text(encoding="utf-8").split()
    pairs = list(zip(texts, labels, strict=True))[:limit]
    inputs = [{"uid": str(i), "statement": text} for i, (text, _label) in enumerate(pairs)]
    gold = [names[label] for _text, label in pairs]
    return classification_report(
        "sentiment (TweetEval val)", SentimentHandler(), inputs, gold, list(names.values())
    )


def hate(data: Path, limit: int | None) -> dict:
    """HateCheck test suite."""
    with (data / "hate/test_suite_cases.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:limit]
    inputs = [{"uid": row["case_id"], "statement": row["test_case"].strip()} for row in rows]
    gold = ["hateful" if row["label_gold"] == "hateful" else "not-hateful" for row in rows]
    return classification_report(
        "hate speech (HateCheck)", HateSpeechHandler(), inputs, gold, ["not-hateful", "hateful"]
    )


def nli(data: Path, limit: int | None) -> dict:
    """ANLI round 1 dev (shared part)."""
    names = {"e": "entailed", "n": "neutral", "c": "contradictory"}
    with (data / "nli/ANLI_analysis_r1_dev.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))[:limit]
    inputs = [
        {"uid": row["uid"], "context": row["context"], "hypothesis": row["statement"]}
        for row in rows
    ]
    gold = [names[row["gold_label"].strip()] for row in rows]
    return classification_report(
        "NLI (ANLI R1 dev)", NLIHandler(), inputs, gold, list(names.values())
    )


def qa(data: Path, limit: int | None) -> dict:
    """XQuAD English (shared part), SQuAD F1 and exact match."""
    document = json.loads((data / "qa/xquad.en.json").read_text(encoding="utf-8"))
    inputs, gold = [], []
    for article in document["data"]:
        for paragraph in article["paragraphs"]:
            for question in paragraph["qas"]:
                inputs.append(
                    {
                        "uid": question["id"],
                        "context": paragraph["context"],
                        "question": question["question"],
                    }
                )
                gold.append(question["answers"][0]["text"])
    inputs, gold = inputs[:limit], gold[:limit]
    outputs, speed = run(QAHandler(), inputs)
    predicted = [output["answer"] for output in outputs]
    f1 = sum(squad_f1(g, p) for g, p in zip(gold, predicted, strict=True)) / len(gold)
    exact = sum(
        normalise_answer(g) == normalise_answer(p) for g, p in zip(gold, predicted, strict=True)
    )
    return {
        "task": "QA (XQuAD en)",
        "examples": len(gold),
        "squad_f1": f1,
        "exact_match": exact / len(gold),
        "examples_per_second": speed,
    }


TASKS: dict[str, Callable[[Path, int | None], dict]] = {
    "sentiment": sentiment,
    "hate": hate,
    "nli": nli,
    "qa": qa,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Evaluate the chosen demo models and print one line per task (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared-data", type=Path, default=REPOSITORY.parent / "shared" / "data")
    parser.add_argument("--limit", type=int, default=None, help="first N examples of each set")
    parser.add_argument("--task", choices=sorted(TASKS), action="append")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(argv)
    if not args.shared_data.is_dir():
        parser.error(f"{args.shared_data} is not a directory")
    reports = [TASKS[name](args.shared_data, args.limit) for name in args.task or TASKS]
    for report in reports:
        if "squad_f1" in report:
            print(
                f"{report['task']}: n={report['examples']} squad F1={report['squad_f1']:.3f} "
                f"EM={report['exact_match']:.3f} ({report['examples_per_second']:.0f} ex/s)"
            )
            continue
        print(
            f"{report['task']}: n={report['examples']} accuracy={report['accuracy']:.3f} "
            f"macro-F1={report['macro_f1']:.3f} | majority '{report['majority_label']}' "
            f"accuracy={report['majority_accuracy']:.3f} macro-F1={report['majority_macro_f1']:.3f}"
            f" ({report['examples_per_second']:.0f} ex/s)"
        )
    if args.json:
        print(json.dumps(reports, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
