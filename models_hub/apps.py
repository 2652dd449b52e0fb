from django.apps import AppConfig


class ModelsHubConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "models_hub"

    def ready(self) -> None:
        # Imported here, not at the top: models and the modules that import them may load only
        # once the app registry is ready (Django's AppConfig.ready).
        from models_hub import (
            checks,  # noqa: F401 (importing it registers the system checks)
            receivers,
            selectors,
        )
        from tasks.selectors import register_round_check
        from tasks.signals import round_opened

        round_opened.connect(receivers.on_round_opened, dispatch_uid="models_hub.round_opened")
        register_round_check(selectors.loop_warnings)
