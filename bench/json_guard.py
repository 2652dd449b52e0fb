"""The JSON depth guard (``core.bounded_json.json_check_depth``) at 64 KB and 2 MB.

Every guard that reads untrusted JSON before a parser calls it: API bodies, model answers
and ``/health`` bodies, dataset and prediction lines, CSV cells, form fields. It must cost
time linear in its input: the report gives, for each adversarial text of
``tests/adversarial_json.py`` (and a plain valid document), the best of ``--repeat`` timings
at 64 KB, at 2 MB (the largest model answer, ``MODELS_HUB_MAX_RESPONSE_BYTES``) and at 8 MB,
and the ratios of the time per byte: 2 MB to 64 KB, and 8 MB to 2 MB (1.0: linear; a
quadratic check gives the ratio of the sizes, 31 and 4). 64 KB fits in the processor's
cache and 2 MB does not, so the first ratio is above 1 for a linear check as well; the
second compares two sizes beyond the cache. No database, no network.

    .venv/bin/python bench/json_guard.py [--repeat 9] [--json]
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

from core.bounded_json import JSONTooDeep, json_check_depth  # noqa: E402
from tests.adversarial_json import ADVERSARIAL_NAMES, adversarial_json  # noqa: E402

SIZES = {"64KB": 64 * 1024, "2MB": 2_000_000, "8MB": 8_000_000}


def valid_document(size: int) -> bytes:
    """A valid answer of about ``size`` bytes: objects of strings and numbers, 3 levels."""
    item = b'{"label": "positive", "prob": {"positive": 0.9, "negative": 0.1}, "x": "[]"},'
    count = max(1, (size - 20) // len(item))
    return b'{"outputs": [' + item * (count - 1) + item[:-1] + b"]}"


def _seconds(data: bytes) -> float:
    started = time.perf_counter()
    with contextlib.suppress(JSONTooDeep):
        json_check_depth(data)
    return time.perf_counter() - started


def _per_byte_ratio(row: dict[str, float], large: str, small: str) -> float:
    return (row[large] / SIZES[large]) / max(row[small] / SIZES[small], 1e-12)


def measure(repeat: int) -> dict[str, dict[str, float]]:
    """Time every text at both sizes, the sizes interleaved, and keep the best of ``repeat``
    (the machine's other work slows single timings, never speeds them up)."""
    texts = {
        name: lambda size, name=name: adversarial_json(name, size) for name in ADVERSARIAL_NAMES
    }
    texts["valid-document"] = valid_document
    report: dict[str, dict[str, float]] = {}
    for name, make in texts.items():
        data = {label: make(size) for label, size in SIZES.items()}
        best = dict.fromkeys(SIZES, float("inf"))
        for _ in range(repeat):
            for label in SIZES:
                best[label] = min(best[label], _seconds(data[label]))
        row = {label: seconds * 1000 for label, seconds in best.items()}
        row["per_byte_2MB_vs_64KB"] = _per_byte_ratio(row, "2MB", "64KB")
        row["per_byte_8MB_vs_2MB"] = _per_byte_ratio(row, "8MB", "2MB")
        report[name] = row
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", action="store_true", help="one JSON object on the last line")
    options = parser.parse_args()
    report = measure(max(1, options.repeat))
    print(
        f"{'input':36} {'64 KB ms':>9} {'2 MB ms':>9} {'8 MB ms':>9} {'2MB/64KB':>9} {'8MB/2MB':>8}"
    )
    for name, row in report.items():
        print(
            f"{name:36} {row['64KB']:9.2f} {row['2MB']:9.2f} {row['8MB']:9.2f} "
            f"{row['per_byte_2MB_vs_64KB']:9.2f} {row['per_byte_8MB_vs_2MB']:8.2f}"
        )
    worst = max(row["2MB"] for row in report.values())
    print(f"slowest at 2 MB: {worst:.1f} ms")
    if options.json:
        print(json.dumps({"json_guard_ms": report, "slowest_2mb_ms": worst}))


if __name__ == "__main__":
    main()
