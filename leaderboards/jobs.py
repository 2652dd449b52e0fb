"""RQ jobs of the leaderboards app (``eval`` queue) and the helpers that enqueue them.

Job functions live at module level, take ids, are idempotent and return JSON-ready dicts:

- ``eval_shard_job(shard_id)``: run one turn of a shard (resumable: stored predictions are
  skipped), fairly: at most ``EVAL_SHARDS_PER_MODEL`` shard jobs of a model at once, each
  for at most ``EVAL_SHARD_SLICE_SECONDS``, the models taking turns
  (``leaderboards.services.scheduling``);
- ``finalize_run_job(run_id)``: compute the Score once every shard is done (the last shard
  claims the run with a conditional update, so it is enqueued exactly once);
- ``rescore_task_job(task_id)``: recompute a task's scores from stored predictions;
- ``dataset_import_job(upload_id)`` (``default``, queued by ``tasks.jobs.enqueue_upload``):
  import a big dataset upload, all or nothing, with its progress page.

Enqueueing happens after the transaction commits (``services`` use ``on_commit``), so a
worker never looks for rows that are not visible yet. A failing shard job is marked failed
by ``on_shard_failure``; the run page then offers a Retry.

A worker killed outright (``kill -9``, OOM, lost host) leaves its shard ``running`` with a
job nobody runs. ``EvalWorker`` (run it with ``rqworker eval --worker-class
leaderboards.jobs.EvalWorker``) calls ``shards_recover`` when it starts and at each
maintenance pass, and so does the periodic ``eval_recover_job`` (every
``EVAL_RECOVER_SECONDS``, from ``run_cron``). A running shard job holds a lease that lapses
within ``EVAL_JOB_LEASE_SECONDS`` of its host's death (``leaderboards.job_leases``).
Unfinished shards of active runs whose job is no longer alive are enqueued again and resume
from their stored predictions. The dead job's late "abandoned" failure callback is then
ignored, since the shard names its new job. The slot of its model that the dead job held is
dropped, and free slots go to the model's waiting shards
(``scheduling.models_sweep``); a shard that waits for a slot is not "lost".
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import uuid
from typing import Any

import django_rq
from django.db import connections
from redis.exceptions import RedisError
from rq import Callback
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus, get_current_job
from rq.worker import Worker

from leaderboards.job_leases import JobLease, lease_alive, leases_prune
from leaderboards.models import EvaluationRun, EvaluationShard, RunStatus
from leaderboards.services import scheduling
from leaderboards.services.scores import run_finalize, scores_recompute_for_task
from leaderboards.services.shards import shard_fail
from leaderboards.services.uploads import dataset_upload_import
from tasks.models import Task
from tasks.services import upload_job_run

logger = logging.getLogger(__name__)

EVAL_QUEUE = "eval"
SHARD_JOB_TIMEOUT = 3 * 3600
FINALIZE_JOB_TIMEOUT = 1800
RESCORE_JOB_TIMEOUT = 3600
RESULT_TTL = 3600
FAILURE_TTL = 7 * 86_400


# -- job functions ----------------------------------------------------------------------------
def eval_shard_job(shard_id: int) -> dict[str, Any]:
    """Run a turn of evaluation shard ``shard_id`` (it may wait for its model's slot), under
    a lease that tells the other hosts it is alive (``leaderboards.job_leases``)."""
    job = get_current_job()
    if job is None:
        return scheduling.shard_run(shard_id, uuid.uuid4().hex)
    with JobLease(job.connection, job.id):
        return scheduling.shard_run(shard_id, job.id)


def eval_recover_job() -> dict[str, int]:
    """Periodic (``settings.PERIODIC_JOBS``): enqueue again the shards whose job died, on any
    host, and drop leases long lapsed. Workers also recover at their maintenance passes, but
    an idle worker blocks on its queue for minutes between two."""
    connection = queue().connection
    return {"recovered": shards_recover(connection), "pruned": leases_prune(connection)}


def finalize_run_job(run_id: int) -> dict[str, Any]:
    """Finalize evaluation run ``run_id`` (no-op unless it is finalizing)."""
    return run_finalize(run_id)


def rescore_task_job(task_id: int) -> dict[str, Any]:
    """Recompute the scores of task ``task_id`` from stored predictions."""
    task = Task.objects.select_related("current_config").filter(pk=task_id).first()
    if task is None:
        return {"status": "missing"}
    return {"status": "done", "scores": scores_recompute_for_task(task)}


def dataset_import_job(upload_id: int) -> dict[str, Any]:
    """Import the dataset of upload job ``upload_id`` (``tasks.models.UploadJob``)."""
    return upload_job_run(upload_id, dataset_upload_import)


def on_shard_failure(job, connection, exc_type, exc_value, traceback) -> None:
    """Mark the shard failed when its job raised or timed out (not for model errors), and
    give its model's slot on."""
    shard_id = job.args[0] if job.args else None
    if shard_id is None:
        return
    row = EvaluationShard.objects.filter(pk=shard_id).values_list("job_id", "run__model_id").first()
    if row is None:
        return
    current_job, model_id = row
    with contextlib.suppress(RedisError):
        scheduling.shards_enqueue(
            model_id, scheduling.model_slot_release(model_id, job.id, connection=connection)
        )
    if current_job and current_job != job.id:
        return  # a dead job whose shard was enqueued again (``shards_recover``)
    message = f"the evaluation job stopped: {exc_type.__name__}"
    with contextlib.suppress(EvaluationShard.DoesNotExist):
        shard_fail(int(shard_id), "run.job_failed", message)


# -- enqueue helpers --------------------------------------------------------------------------
def queue():
    return django_rq.get_queue(EVAL_QUEUE)


def enqueue_shard(shard: EvaluationShard, job_id: str | None = None) -> str | None:
    """Enqueue one shard job now (as ``job_id`` when given: a slot reserved for it); return
    its job id (None when Redis is unavailable)."""
    try:
        job = queue().enqueue_call(
            eval_shard_job,
            args=(shard.pk,),
            timeout=SHARD_JOB_TIMEOUT,
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
            on_failure=Callback(on_shard_failure),
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
            finalize_run_job,
            args=(run_id,),
            timeout=FINALIZE_JOB_TIMEOUT,
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
        )
    except RedisError as error:
        logger.warning("cannot enqueue the finalize job of run %s: %s", run_id, error)
        return None
    return job.id


def enqueue_run(run_id: int) -> int:
    """Submit every shard of ``run_id`` that is not done (finalize when there are none).

    The shards wait for their model's slots (``scheduling.shards_submit``): returns how many
    shard jobs were enqueued now. Used after a run is created or retried, and by
    ``run_evaluations --resume``.
    """
    run = EvaluationRun.objects.filter(pk=run_id).first()
    if run is None:
        return 0
    shards = list(run.shards.exclude(status=RunStatus.DONE).order_by("index"))
    if not shards:
        if run.status in (RunStatus.QUEUED, RunStatus.RUNNING):
            EvaluationRun.objects.filter(pk=run_id, status=run.status).update(
                status=RunStatus.FINALIZING
            )
            run.status = RunStatus.FINALIZING
        if run.status == RunStatus.FINALIZING:
            enqueue_finalize(run_id)
        return 0
    try:
        return scheduling.shards_submit(run.model_id, [shard.pk for shard in shards])
    except RedisError as error:
        # ``shards_recover`` enqueues them once Redis is back.
        logger.warning("cannot submit the shards of run %s: %s", run_id, error)
        return 0


def enqueue_rescore(task_id: int) -> str | None:
    """Enqueue a rescore of ``task_id`` (best effort: logs when Redis is down)."""
    try:
        job = queue().enqueue_call(
            rescore_task_job,
            args=(task_id,),
            timeout=RESCORE_JOB_TIMEOUT,
            result_ttl=RESULT_TTL,
            failure_ttl=FAILURE_TTL,
        )
    except RedisError as error:
        logger.warning("cannot enqueue the rescore of task %s: %s", task_id, error)
        return None
    return job.id


# -- recovery of shards whose worker died ----------------------------------------------------
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


def shards_recover(connection=None) -> int:
    """Enqueue again the unfinished shards of active runs whose job is not alive (and that do
    not wait for a slot), then hand their models' free slots out; return jobs enqueued.

    Idempotent and safe to run from several workers: a shard run twice keeps one prediction
    per example (stored ones are skipped, inserts ignore conflicts) and the run is finalized
    once (the claim is a conditional update).
    """
    connection = connection or queue().connection
    shards = (
        EvaluationShard.objects.filter(
            status__in=(RunStatus.QUEUED, RunStatus.RUNNING),
            run__status__in=(RunStatus.QUEUED, RunStatus.RUNNING),
        )
        .select_related("run")
        .order_by("run_id", "index")
    )
    recovered = 0
    models: set[int] = set()
    for shard in shards:
        models.add(shard.run.model_id)
        if job_alive(shard.job_id, connection):
            continue
        if scheduling.shard_is_waiting(shard.run.model_id, shard.pk, connection):
            continue
        logger.warning("re-enqueueing evaluation shard %s: job %r is gone", shard.pk, shard.job_id)
        if enqueue_shard(shard):
            recovered += 1
    return recovered + scheduling.models_sweep(sorted(models), connection)


class EvalWorker(Worker):
    """The ``eval`` queue's worker: recovers dead workers' shards at start and every maintenance."""

    def run_maintenance_tasks(self):
        super().run_maintenance_tasks()
        try:
            shards_recover(self.connection)
        except Exception:  # recovery must never stop the worker
            logger.exception("the recovery of evaluation shards failed")
        finally:
            # This process forks the job horses: they must not share its database socket.
            connections.close_all()
