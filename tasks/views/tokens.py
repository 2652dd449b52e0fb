"""The API tokens page: create (or replace) and revoke your API token (POST + CSRF).

The key is shown once, right after it is created; only its hash is stored.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.shortcuts import redirect, render
from django.views import View

from api.auth import api_token_create, api_token_of, api_token_revoke


class ApiTokensView(LoginRequiredMixin, View):
    template_name = "tasks/tokens.html"

    def get(self, request):
        return render(request, self.template_name, {"token": api_token_of(request.user)})

    def post(self, request):
        action = request.POST.get("action")
        if action == "create":
            key = api_token_create(request.user)
            # Rendered directly (never stored in the session or a message): shown once.
            return render(
                request,
                self.template_name,
                {"token": api_token_of(request.user), "new_key": key},
            )
        if action == "revoke":
            if api_token_revoke(request.user):
                messages.success(request, "Your API token was revoked.")
            return redirect("api_tokens")
        messages.error(request, "Unknown action.")
        return redirect("api_tokens")
