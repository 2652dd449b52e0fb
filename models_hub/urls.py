from django.urls import path  # noqa: F401

app_name = "models_hub"

urlpatterns: list = []
