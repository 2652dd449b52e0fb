"""RQ jobs of the leaderboards app (``eval`` queue) and the helpers that enqueue them.

Job functions live at module level, take ids, are idempotent and return JSON-ready dicts:

- ``eval_shard_job(shard_id)``: run one turn of a shard (resumable: stored predictions are
  skipped), fairly: at most ``EVAL_SHARDS_PER_MODEL`` shard jobs of a model at once, each
  for at most ``EVAL_SHARD_SLICE_SECONDS``, the models taking turns
  (``leaderboards.services.scheduling``);
- ``finalize_run_job(run_id)``: compute the Score once every shard is done (the last shard
  claims the run with a conditional update, so it is enqueued exactly once);
- ``rescore_task_job(task_id)``: recompute a task's scores from stored predictions;
- ``dataset_import_job(upload_id)`` (``default``, queued by ``tasks.upload_jobs.enqueue_upload``):
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
import uuid
from typing import Any

from django.db import connections
from redis.exceptions import RedisError
from rq.job import get_current_job
from rq.worker import Worker

from leaderboards.job_leases import JobLease, leases_prune
from leaderboards.models import EvaluationShard, RunStatus
from leaderboards.services import scheduling
from leaderboards.services.dataset_uploads import dataset_upload_import
from leaderboards.services.eval_queue import enqueue_shard, job_alive, queue
from leaderboards.services.scores import run_finalize, scores_recompute_for_task
from leaderboards.services.shards import shard_fail
from tasks.models import Task
from tasks.upload_jobs import upload_job_run

logger = logging.getLogger(__name__)


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


# -- recovery of shards whose worker died ----------------------------------------------------
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
