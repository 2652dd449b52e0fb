"""Signal receivers: hand over to a service or a job, nothing else.

- ``models_hub.signals.model_registered`` -> evaluate the model on every dataset of its task;
- ``tasks.signals.task_config_changed`` -> recompute the task's scores from stored
  predictions (a job on the eval queue; the models are not called);
- a user saved (perhaps renamed) -> forget the score cubes that hold their name.
"""

from __future__ import annotations

from leaderboards.models import RunTrigger
from leaderboards.services.boards import board_cubes_forget_owner
from leaderboards.services.eval_queue import enqueue_rescore
from leaderboards.services.runs import evaluation_runs_for_model


def on_model_registered(sender, model, **kwargs) -> None:
    evaluation_runs_for_model(model, trigger=RunTrigger.MODEL_REGISTERED)


def on_task_config_changed(sender, task, version=None, previous=None, **kwargs) -> None:
    enqueue_rescore(task.pk)


def on_user_saved(sender, instance, created=False, update_fields=None, **kwargs) -> None:
    # A new user owns no models; a save of other fields (a sign-in's ``last_login``) keeps
    # the name.
    if created or (update_fields is not None and "username" not in update_fields):
        return
    board_cubes_forget_owner(instance.pk)
