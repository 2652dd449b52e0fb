"""docs/internals.md stays true: it names every queue, every periodic job and every cache and
Redis key the code builds (by the constants and key functions of their owners)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from annotation.chat import pump, streams
from annotation.live import drain, queue
from annotation.selectors.contexts import context_key
from annotation.selectors.tasks import bundle_key
from annotation.stats import buffer
from leaderboards.services import scheduling
from tasks import accounts
from tasks import upload_jobs as task_upload_jobs

INTERNALS = Path(__file__).resolve().parents[1] / "docs" / "internals.md"


@pytest.fixture(scope="module")
def text() -> str:
    return INTERNALS.read_text()


def prefix(key: str, marker: str = "X") -> str:
    """The fixed part of a key built around ``marker`` (an id, a token, a code)."""
    return key.split(marker)[0].split("{")[0]


def test_every_queue_and_periodic_job_is_named(text):
    for name in settings.RQ_QUEUES:
        assert f"| `{name}` |" in text, name
    for path, queue_name, _interval in settings.PERIODIC_JOBS:
        assert f"`{path}` | `{queue_name}`" in text, path


def test_every_key_is_named(text):
    keys = [
        queue.PENDING_KEY,
        queue.DRAIN_QUEUED_KEY,
        prefix(queue.done_key("X")),
        drain.DRAINS_KEY,
        prefix(drain.claimed_key("X")),
        prefix(drain.lease_key("X")),
        pump.PENDING_KEY,
        pump.PUMP_FLAG_KEY,
        prefix(streams.reply_key("X", 1)),
        prefix(streams.cancel_key("X", 1)),
        buffer.ROW_KEY_PREFIX,
        buffer.DIRTY_KEY,
        buffer.FLUSH_LOCK_KEY,
        accounts.SITE_SETTINGS_CACHE_KEY,
        prefix(accounts.SIGNUP_COUNT_KEY),
        prefix(task_upload_jobs.UPLOAD_PROGRESS_KEY),
        scheduling.KEY_PREFIX + "slots:",
        scheduling.KEY_PREFIX + "waiting:",
        prefix(bundle_key("X")).rsplit(":", 2)[0],
        prefix(context_key(0), "0"),
        "annotation:sampling:",
        "annotation:round_agreement:",
        "leaderboard:",
        "leaderboard-intervals:",
    ]
    for key in keys:
        assert f"`{key}" in text, key
