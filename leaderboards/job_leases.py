"""Leases of running evaluation shard jobs: a host that dies is known within seconds.

RQ learns that a worker died when its heartbeat key expires, at least a minute after its last
heartbeat (RQ adds 60 s to every heartbeat), and another host's worker looks only at its own
maintenance pass. A running shard job therefore holds a lease of its own: its job id in the
sorted set ``LEASES_KEY``, scored by when the lease lapses, renewed by a thread of the job
every ``lease_seconds() / 3``. ``leaderboards.jobs.job_alive`` reads it: a job with a lapsed
lease is dead whatever its worker's key says; a job with no lease at all (a job of another
kind, or of an older release during a rolling upgrade) is judged by its worker's key, as
before. The periodic ``eval_recover_job`` then enqueues its shard again.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

LEASES_KEY = "dynatask:eval:leases"
DEFAULT_LEASE_SECONDS = 15.0
# Entries of jobs that died are dropped this long after their lease lapsed.
PRUNE_AFTER_SECONDS = 3600


def lease_seconds() -> float:
    return float(getattr(settings, "EVAL_JOB_LEASE_SECONDS", DEFAULT_LEASE_SECONDS))


def lease_alive(job_id: str, connection) -> bool | None:
    """True while ``job_id``'s lease holds, False once it lapsed, None when it has none."""
    expiry = connection.zscore(LEASES_KEY, job_id)
    if expiry is None:
        return None
    return expiry > time.time()


def leases_prune(connection) -> int:
    """Drop the leases that lapsed more than ``PRUNE_AFTER_SECONDS`` ago; return how many."""
    return connection.zremrangebyscore(LEASES_KEY, "-inf", time.time() - PRUNE_AFTER_SECONDS)


class JobLease:
    """The lease of one running job, set on entry, renewed by a thread, dropped on exit."""

    def __init__(self, connection, job_id: str):
        self.connection = connection
        self.job_id = job_id
        self.seconds = lease_seconds()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="eval-lease", daemon=True)

    def _set(self) -> None:
        self.connection.zadd(LEASES_KEY, {self.job_id: time.time() + self.seconds})

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self._set()
            except RedisError:
                logger.warning("could not renew the lease of evaluation job %s", self.job_id)

    def __enter__(self) -> JobLease:
        try:
            self._set()
        except RedisError:
            logger.warning("could not take a lease for evaluation job %s", self.job_id)
        self._thread.start()
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            self.connection.zrem(LEASES_KEY, self.job_id)
        except RedisError:
            logger.warning("could not drop the lease of evaluation job %s", self.job_id)
