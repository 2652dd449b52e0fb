from django.apps import AppConfig


class ModelsHubConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "models_hub"
