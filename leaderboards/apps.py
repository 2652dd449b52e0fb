from django.apps import AppConfig


class LeaderboardsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "leaderboards"

    def ready(self) -> None:
        # Imported here, not at the top: models and the modules that import them may load only
        # once the app registry is ready (Django's AppConfig.ready).
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        from leaderboards import receivers
        from models_hub.signals import model_registered
        from tasks.signals import task_config_changed

        model_registered.connect(
            receivers.on_model_registered, dispatch_uid="leaderboards.model_registered"
        )
        task_config_changed.connect(
            receivers.on_task_config_changed, dispatch_uid="leaderboards.task_config_changed"
        )
        post_save.connect(
            receivers.on_user_saved,
            sender=get_user_model(),
            dispatch_uid="leaderboards.user_saved",
        )
