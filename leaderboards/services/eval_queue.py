"""The ``eval`` queue: enqueue evaluation shards, finalize and rescore jobs; is a job alive.

Jobs are enqueued by their dotted paths: ``leaderboards.jobs`` imports the services, which
never import it (the rule of "Layers and imports" in ``docs/CONTRIBUTING.md``). Enqueueing
happens after the transaction commits (callers use ``on_commit``), so a worker never looks
for rows that are not visible yet.
"""

from __future__ import annotations

import logging
import os
import socket

import django_rq
from redis.exceptions import RedisError
from rq import Callback
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.worker import Worker

from leaderboards.job_leases import lease_alive
from leaderboards.models import EvaluationShard

logger = logging.getLogger(__name__)

EVAL_QUEUE = "eval"
SHARD_JOB_TIMEOUT = 3 * 3600
FINALIZE_JOB_TIMEOUT = 1800
RESCORE_JOB_TIMEOUT = 3600
RESULT_TTL = 3600
FAILURE_TTL = 7 * 86_400

SHARD_JOB = "leaderboards.jobs.eval_shard_job"
SHARD_FAILURE_CALLBACK = "leaderboards.jobs.on_shard_failure"
FINALIZE_JOB = "leaderboards.jobs.finalize_run_job"
RESCORE_JOB = "leaderboards.jobs.rescore_task_job"


def queue():
    return django_rq.get_queue(EVAL_QUEUE)


def enqueue_shard(shard: EvaluationShard, job_id: str | None = None) -> str | None:
    """Enqueue one shard job now (as ``job_id`` when given: a slot reserved for it); return
    its job id (None when Redis is unavailable)."""
    try:
        job = queue().enqueue_call(
            SHARD_JOB,
            args=(shard.pk,),
            timeout=SHARD_JOB_TIMEOUT,
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
            on_failure=Callback(SHARD_FAILURE_CALLBACK),
            job_id=job_id,
        )
    except RedisError as error:
        logger.warning("cannot enqueue evaluation shard %s: %s", shard.pk, error)
        return None
    EvaluationShard.objects.filter(pk=shard.pk).update(job_id=job.id)
    return job.id


def enqueue_finalize(run_id: int) -> str | None:
    """Enqueue the finalize job of ``run_id`` now."""
    try:
        job = queue().enqueue_call(
            FINALIZE_JOB,
            args=(run_id,),
            timeout=FINALIZE_JOB_TIMEOUT,
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
        )
    except RedisError as error:
        logger.warning("cannot enqueue the finalize job of run %s: %s", run_id, error)
        return None
    return job.id


def enqueue_rescore(task_id: int) -> str | None:
    """Enqueue a rescore of ``task_id`` (best effort: logs when Redis is down)."""
    try:
        job = queue().enqueue_call(
            RESCORE_JOB,
            args=(task_id,),
            timeout=RESCORE_JOB_TIMEOUT,
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
        )
    except RedisError as error:
        logger.warning("cannot enqueue the rescore of task %s: %s", task_id, error)
        return None
    return job.id


# -- is a job alive ---------------------------------------------------------------------------
_WAITING = (JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.SCHEDULED)


def job_alive(job_id: str, connection) -> bool:
    """Return True when job ``job_id`` waits in a queue or runs in a live worker.

    A started job is dead when its worker's key expired, when its worker is a dead process
    of this host, or when it holds a lease (a shard job) that lapsed: its host stopped
    renewing it, however long its worker's key lives on."""
    if not job_id:
        return False
    try:
        job = Job.fetch(job_id, connection=connection)
    except NoSuchJobError:
        return False
    status = job.get_status(refresh=False)
    if status in _WAITING:
        return True
    if status != JobStatus.STARTED or not job.worker_name:
        return False
    if not _worker_alive(job.worker_name, connection):
        return False
    return lease_alive(job_id, connection) is not False


def _worker_alive(name: str, connection) -> bool:
    worker = Worker.find_by_key(Worker.redis_worker_namespace_prefix + name, connection=connection)
    if worker is None:
        return False  # its heartbeat expired
    if worker.hostname == socket.gethostname() and worker.pid:
        try:
            os.kill(worker.pid, 0)  # on this host a dead pid is known at once
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return True
