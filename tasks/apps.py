from django.apps import AppConfig


class TasksConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tasks"

    def ready(self) -> None:
        # Imported here, not at the top: models and the modules that import them may load only
        # once the app registry is ready (Django's AppConfig.ready).
        from django.db.models.signals import post_delete, post_save

        from tasks.accounts import site_settings_forget
        from tasks.models import SiteSettings

        for signal in (post_save, post_delete):
            signal.connect(
                site_settings_forget,
                sender=SiteSettings,
                dispatch_uid=f"tasks.site_settings_{'saved' if signal is post_save else 'deleted'}",
            )
