"""Signal receivers: hand over to a service or a job, nothing else.

- ``models_hub.signals.model_registered`` -> evaluate the model on every dataset of its task;
- ``tasks.signals.task_config_changed`` -> recompute the task's scores from stored
  predictions (a job on the eval queue; the models are not called).
"""

from __future__ import annotations

from leaderboards import jobs, services
from leaderboards.models import RunTrigger


def on_model_registered(sender, model, **kwargs) -> None:
    services.evaluation_runs_for_model(model, trigger=RunTrigger.MODEL_REGISTERED)


def on_task_config_changed(sender, task, version=None, previous=None, **kwargs) -> None:
    jobs.enqueue_rescore(task.pk)
