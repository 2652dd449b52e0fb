"""Self-sign-up: a worker creates their own account while an admin keeps sign-up open."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.generic import FormView

from core.errors import ServiceError
from tasks import accounts
from tasks.forms import SignUpForm


class SignUpView(FormView):
    """``/accounts/signup/``: the form while sign-up is open, a notice when it is closed."""

    template_name = "registration/signup.html"
    form_class = SignUpForm

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            return redirect(self.get_success_url())
        return super().dispatch(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(signup_open=accounts.signup_is_open(), next=self.next_url())
        return context

    def post(self, request, *args, **kwargs):
        if not accounts.signup_is_open():
            return self.render_to_response(self.get_context_data(), status=403)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        try:
            accounts.user_sign_up(self.request, form)
        except ServiceError as error:
            form.add_error(None, error.message)
            return self.render_to_response(self.get_context_data(form=form), status=error.status)
        messages.success(self.request, "Welcome! Your account is ready.")
        return redirect(self.get_success_url())

    def next_url(self) -> str:
        """The page to return to (``next``), when it is on this site."""
        candidate = self.request.POST.get("next") or self.request.GET.get("next") or ""
        if url_has_allowed_host_and_scheme(
            candidate,
            allowed_hosts={self.request.get_host()},
            require_https=self.request.is_secure(),
        ):
            return candidate
        return ""

    def get_success_url(self) -> str:
        return self.next_url() or resolve_url(settings.LOGIN_REDIRECT_URL)
