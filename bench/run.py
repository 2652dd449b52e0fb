#!/usr/bin/env python
"""Run every benchmark of the platform and print one JSON object.

    .venv/bin/python bench/run.py [--quick] [--json] [--only KEY ...] [--timeout SECONDS]

Each benchmark is a script of its own in ``bench/`` that prints one JSON line (the last line
of its output that parses as a JSON object is taken). They run one after the other, as
subprocesses, so that one crashing or hanging benchmark cannot take the others down: a
benchmark that fails gives ``{"error": ...}`` under its key, one that does not exist yet
``{"error": "missing"}``. With ``--quick`` every script gets ``--quick`` and the whole run
stays under three minutes on a 2-core machine.

Keys (the issue's targets are checked by ``targets`` at the end of the object):

- ``client_overhead``: what the model client and the live queue add to a model call;
- ``eval_throughput``: evaluation predictions per second;
- ``leaderboard``: leaderboard page timings;
- ``dataset_import``: rows/s of ``import_dataset`` against a bare ``bulk_create`` (ratio >= 0.33);
- ``validation_queue``: p50 of "next example to validate" at 1M against 10k (ratio <= 2);
- ``export``: rows/s of the JSON Lines export and memory growth (>= 20,000 rows/s, <= 50 MB);
- ``submit``: p50 from POST to the verdict on the page with the live demo model (<= 20 ms).

Without ``--json`` a table is printed instead.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

# key -> script; the order is the order they run in.
BENCHMARKS: dict[str, str] = {
    "client_overhead": "client_overhead.py",
    "eval_throughput": "eval_throughput.py",
    "leaderboard": "leaderboard.py",
    "dataset_import": "dataset_import.py",
    "validation_queue": "validation_queue.py",
    "export": "export.py",
    "submit": "submit.py",
}

# key -> (field, comparison, target): checked when the field is present.
TARGETS: dict[str, tuple[str, str, float]] = {
    "client_overhead": ("queue_overhead_ms", "<=", 10.0),
    "eval_throughput": ("ratio_vs_bare", ">=", 0.9),
    "eval_memory": ("memory_ratio_100k_vs_10k", "<=", 1.2),
    "leaderboard": ("render_ratio_1000_vs_10", "<=", 2.0),
    "dataset_import": ("ratio", ">=", 0.33),
    "validation_queue": ("ratio", "<=", 2.0),
    "export": ("rows_per_second", ">=", 20_000),
    "export_memory": ("memory_growth_mb", "<=", 50.0),
    "submit": ("p50_ms", "<=", 20.0),
}
TARGET_SOURCE = {"export_memory": "export", "eval_memory": "eval_throughput"}

QUICK_TIMEOUT_SECONDS = 90
# --quick must finish in under 3 minutes: no benchmark may start or run past this budget.
QUICK_BUDGET_SECONDS = 170
FULL_TIMEOUT_SECONDS = 1800


def last_json_object(text: str) -> dict | None:
    """Return the last line of ``text`` that parses as a JSON object."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    # A script may print its object over several lines (indent=2): try the whole tail.
    start = text.rfind("\n{")
    if start >= 0 or text.lstrip().startswith("{"):
        try:
            value = json.loads(text[start + 1 :] if start >= 0 else text)
            return value if isinstance(value, dict) else None
        except ValueError:
            return None
    return None


def run_one(key: str, script: str, quick: bool, timeout: float) -> dict:
    """Run one benchmark script; return its JSON object (or an ``error``) plus its duration."""
    path = BENCH / script
    if not path.exists():
        return {"error": "missing", "script": f"bench/{script}"}
    command = [sys.executable, str(path)]
    if quick:
        command.append("--quick")
    env = dict(os.environ)
    env.setdefault("LOG_LEVEL", "WARNING")
    started = time.monotonic()
    # A session of its own, so that a timeout ends the script's workers and servers too.
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        return {"error": f"timed out after {timeout:.0f} s", "stderr_tail": stderr[-500:]}
    completed = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    seconds = round(time.monotonic() - started, 1)
    value = last_json_object(completed.stdout)
    if completed.returncode != 0 or value is None:
        return {
            "error": f"exit status {completed.returncode}"
            + ("" if value is not None else ", no JSON object printed"),
            "stderr_tail": completed.stderr[-800:],
            "seconds": seconds,
        }
    value.setdefault("seconds", seconds)
    return value


def check_targets(results: dict[str, dict]) -> dict[str, dict]:
    """Compare the measured values with the issue's targets."""
    checks: dict[str, dict] = {}
    for name, (field, comparison, target) in TARGETS.items():
        value = results.get(TARGET_SOURCE.get(name, name), {}).get(field)
        if not isinstance(value, int | float):
            continue
        met = value <= target if comparison == "<=" else value >= target
        checks[name] = {"value": value, "target": f"{comparison} {target:g}", "met": met}
    return checks


def print_table(report: dict) -> None:
    print(f"{'benchmark':<18} {'seconds':>8}  result")
    for key in BENCHMARKS:
        result = report.get(key, {})
        shown = {k: v for k, v in result.items() if k not in ("seconds", "stderr_tail")}
        print(f"{key:<18} {result.get('seconds', ''):>8}  {json.dumps(shown)[:200]}")
    print()
    for name, check in report["targets"].items():
        mark = "ok  " if check["met"] else "MISS"
        print(f"{mark} {name:<18} {check['value']} (target {check['target']})")


def ensure_database() -> None:
    """Create the PostgreSQL database that DATABASE_URL names when it does not exist yet.

    The leaderboard and export benchmarks work inside the configured database (in a
    transaction they roll back), so it must exist before they start.
    """
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return
    import psycopg
    from psycopg import sql

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone()
        if not exists:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, < 3 minutes")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--only", nargs="*", choices=sorted(BENCHMARKS), help="run only these")
    parser.add_argument("--timeout", type=float, default=None, help="per-benchmark timeout")
    options = parser.parse_args()
    timeout = options.timeout or (QUICK_TIMEOUT_SECONDS if options.quick else FULL_TIMEOUT_SECONDS)
    started = time.monotonic()
    ensure_database()
    report: dict = {}
    for key, script in BENCHMARKS.items():
        if options.only and key not in options.only:
            continue
        if not options.json:
            print(f"running {script}...", file=sys.stderr, flush=True)
        budget = timeout
        if options.quick:
            budget = min(timeout, QUICK_BUDGET_SECONDS - (time.monotonic() - started))
            if budget < 5:
                report[key] = {"error": "skipped: the --quick time budget is spent"}
                continue
        report[key] = run_one(key, script, options.quick, budget)
    report["targets"] = check_targets(report)
    report["missing"] = [
        key
        for key, value in report.items()
        if value == {} or (isinstance(value, dict) and value.get("error") == "missing")
    ]
    report["quick"] = options.quick
    report["total_seconds"] = round(time.monotonic() - started, 1)
    if options.json:
        print(json.dumps(report), flush=True)
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
