#!/usr/bin/env python
"""Run the fault-injection scenarios and print one PASS/FAIL line each, then a JSON line.

    .venv/bin/python bench/faults.py

The scenarios live in ``tests/faults/`` (they also run in the default test command):

- a slow-loris model never holds a web request beyond the create page's wait;
- a slow-loris model never holds a live worker beyond the model's timeout (the body is read
  with ``read1`` and the total deadline is checked after every read);
- the model server killed (-9) during live collection: the worker sees the failure, no example
  is lost, and a retry works once the server is back on its port;
- a private Redis killed (-9) and restarted during collection: no example is lost and the
  site recovers; a long-running live worker and the cron process ride out the restart (they
  never quit) and answer what comes after;
- a long-running live worker (``manage.py rqworker live``) killed (-9) while its drain waits
  for the model: with no page polling, the periodic check (``run_cron``) gives the dead
  drain's claim back once its lease lapses, and the next worker answers it within 30 s;
- an eval worker (``manage.py rqworker eval`` and its job horse) killed (-9) in the middle of
  a run, then a new worker started: the run completes with one prediction per example and
  its Score equals that of an uninterrupted run of the same outputs
  (``test_eval_worker_kill.py``; ``leaderboards.jobs.EvalWorker`` re-enqueues dead shards).
Uses ``DATABASE_URL`` / ``REDIS_URL`` like the tests (PostgreSQL and Redis on loopback).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    env = dict(os.environ)
    env.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/dyn_faults")
    env.setdefault("REDIS_URL", "redis://127.0.0.1:6379/11")
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/faults", "-v", "-p", "no:cacheprovider", "-rN"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    results = {}
    for line in completed.stdout.splitlines():
        match = re.match(r"tests/faults/\S+::(\w+) (PASSED|FAILED|XFAIL|XPASS|ERROR|SKIPPED)", line)
        if match:
            name, outcome = match.groups()
            results[name] = outcome
            shown = {"PASSED": "PASS", "XFAIL": "FAIL (known bug, xfail)"}.get(outcome, outcome)
            print(f"{shown:<24} {name}")
    if not results:
        print(completed.stdout[-3000:], completed.stderr[-3000:])
    print(json.dumps({"scenarios": results, "exit_status": completed.returncode}))
    return 0 if completed.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
