"""The JSON depth guard (``tasks.bounded_json.json_check_depth``) at 64 KB and 2 MB.

Every guard that reads untrusted JSON before a parser calls it: API bodies, model answers
and ``/health`` bodies, dataset and prediction lines, CSV cells, form fields. It must cost
time linear in its input: the report gives, for each adversarial text of
``tests/adversarial_json.py`` (and a plain valid document), the best of ``--repeat`` timings
at 64 KB and at 2 MB (the largest model answer, ``MODELS_HUB_MAX_RESPONSE_BYTES``), and the
ratio of the two per byte (1.0: linear; a quadratic check would give 2 MB / 64 KB = 31 times
more per byte). No database, no network.

    .venv/bin/python bench/json_guard.py [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks.bounded_json import JSONTooDeep, json_check_depth  # noqa: E402
from tests.adversarial_json import ADVERSARIAL_NAMES, adversarial_json  # noqa: E402

SIZES = {"64KB": 64 * 1024, "2MB": 2_000_000}


def valid_document(size: int) -> bytes:
    """A valid answer of about ``size`` bytes: objects of strings and numbers, 3 levels."""
    item = b'{"label": "positive", "prob": {"positive": 0.9, "negative": 0.1}, "x": "[]"},'
    count = max(1, (size - 20) // len(item))
    return b'{"outputs": [' + item * (count - 1) + item[:-1] + b"]}"


def best_seconds(data: bytes, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        with contextlib.suppress(JSONTooDeep):
            json_check_depth(data)
        best = min(best, time.perf_counter() - started)
    return best


def measure(repeat: int) -> dict[str, dict[str, float]]:
    texts = {
        name: lambda size, name=name: adversarial_json(name, size) for name in ADVERSARIAL_NAMES
    }
    texts["valid-document"] = valid_document
    report: dict[str, dict[str, float]] = {}
    for name, make in texts.items():
        row = {label: best_seconds(make(size), repeat) * 1000 for label, size in SIZES.items()}
        small, large = SIZES["64KB"], SIZES["2MB"]
        row["per_byte_ratio"] = (row["2MB"] / large) / max(row["64KB"] / small, 1e-9)
        report[name] = row
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="one JSON object on the last line")
    options = parser.parse_args()
    report = measure(max(1, options.repeat))
    print(f"{'input':38} {'64 KB ms':>9} {'2 MB ms':>9} {'per-byte 2MB/64KB':>18}")
    for name, row in report.items():
        print(f"{name:38} {row['64KB']:9.2f} {row['2MB']:9.2f} {row['per_byte_ratio']:18.2f}")
    worst = max(row["2MB"] for row in report.values())
    print(f"slowest at 2 MB: {worst:.1f} ms")
    if options.json:
        print(json.dumps({"json_guard_ms": report, "slowest_2mb_ms": worst}))


if __name__ == "__main__":
    main()
