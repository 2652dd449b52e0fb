from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"

    def ready(self) -> None:
        # Imported here, not at the top: models and the modules that import them may load only
        # once the app registry is ready (Django's AppConfig.ready).
        from django.db.models.signals import m2m_changed, post_delete, post_save

        from annotation import receivers
        from models_hub.models import RegisteredModel, RoundModel
        from models_hub.signals import model_rows_changed
        from tasks.models import Context, Round, Task, TaskConfigVersion

        for signal in (post_save, post_delete):
            name = "saved" if signal is post_save else "deleted"
            signal.connect(
                receivers.on_task_saved, sender=Task, dispatch_uid=f"annotation.task_{name}"
            )
            for model in (TaskConfigVersion, Round, RegisteredModel):
                signal.connect(
                    receivers.on_row_of_task_saved,
                    sender=model,
                    dispatch_uid=f"annotation.{model.__name__}_{name}",
                )
            signal.connect(
                receivers.on_context_saved,
                sender=Context,
                dispatch_uid=f"annotation.context_{name}",
            )
            signal.connect(
                receivers.on_round_model_saved,
                sender=RoundModel,
                dispatch_uid=f"annotation.round_model_{name}",
            )
        m2m_changed.connect(
            receivers.on_owners_changed,
            sender=Task.owners.through,
            dispatch_uid="annotation.task_owners_changed",
        )
        model_rows_changed.connect(
            receivers.on_model_rows_changed, dispatch_uid="annotation.model_rows_changed"
        )
