"""The API tokens page (``/profile/tokens/``), named ``api_tokens`` outside the ``tasks``
namespace; included by ``dynatask_site.urls``."""

from django.urls import path

from tasks.views import tokens as views_tokens

urlpatterns = [
    path("profile/tokens/", views_tokens.ApiTokensView.as_view(), name="api_tokens"),
]
