"""URLs of the plumbing every deployment needs, included by name by ``dynatask_site.urls``."""

from django.urls import path

from core.readiness import readyz

urlpatterns = [
    # The load balancer's health check (docs/deploy.md): no sign-in, no secrets.
    path("readyz", readyz, name="readyz"),
]
