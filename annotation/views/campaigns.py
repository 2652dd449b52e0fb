"""Crowd campaign pages: the owners' list and CSV, the workers' entry link and done page."""

from __future__ import annotations

from crispy_forms.helper import FormHelper
from crispy_forms.layout import Submit
from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views import View
from django.views.generic import TemplateView

from annotation.campaigns import identities, links
from annotation.campaigns import services as campaigns
from annotation.campaigns.actors import SESSION_CAMPAIGN_KEY, SESSION_WORKER_KEY, actor_from_request
from annotation.models import Campaign
from core.errors import NotFound, ServiceError
from tasks.permissions import can_manage_campaigns
from tasks.selectors import task_get_visible


class CampaignForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    round = forms.TypedChoiceField(coerce=int, label="Round")
    kind = forms.ChoiceField(choices=Campaign.Kind.choices)
    quota = forms.IntegerField(min_value=1, max_value=10_000, initial=10)
    worker_id_param = forms.CharField(
        max_length=64,
        initial="PROLIFIC_PID",
        help_text="The URL parameter that carries the platform's worker id.",
    )
    completion_code = forms.CharField(max_length=100)
    signed_worker_links = forms.BooleanField(
        required=False,
        label="Signed worker links",
        help_text="Each worker needs a personal link signed for their id (you generate them).",
    )

    def __init__(self, *args, rounds=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.rounds = {round_.number: round_ for round_ in rounds}
        self.fields["round"].choices = [(number, f"Round {number}") for number in self.rounds]
        if self.rounds:
            self.fields["round"].initial = max(self.rounds)
        self.helper = FormHelper()
        self.helper.add_input(Submit("submit", "Create campaign"))


def _owned_task(request, code):
    """The task for one of its owners; 404 if invisible, 403 for other users."""
    try:
        task = task_get_visible(code, request.user)
    except NotFound as error:
        raise Http404(error.message) from None
    if not can_manage_campaigns(request.user, task):
        raise PermissionDenied("only the task's owners manage its campaigns")
    return task


class CampaignListView(TemplateView):
    """``/tasks/<code>/campaigns/``: the owners' campaigns, their links, and a create form."""

    template_name = "annotation/campaign_list.html"

    def dispatch(self, request, *args, **kwargs):
        self.task = _owned_task(request, kwargs["code"])
        return super().dispatch(request, *args, **kwargs)

    def _form(self, data=None):
        return CampaignForm(data, rounds=list(self.task.rounds.all()))

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        rows = []
        for campaign in campaigns.campaign_list(self.task):
            link = self.request.build_absolute_uri(links.campaign_link_path(campaign))
            rows.append({"campaign": campaign, "link": link})
        context.update(task=self.task, rows=rows, form=kwargs.get("form") or self._form())
        return context

    def post(self, request, *args, **kwargs):
        form = self._form(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                campaigns.campaign_create(
                    task=self.task,
                    round=form.rounds[data["round"]],
                    name=data["name"],
                    kind=data["kind"],
                    quota=data["quota"],
                    worker_id_param=data["worker_id_param"],
                    completion_code=data["completion_code"],
                    signed_worker_links=data["signed_worker_links"],
                    created_by=request.user,
                )
            except ServiceError as error:
                for problem in error.details.get("errors", []):
                    form.add_error(problem["field"], problem["code"])
                if not error.details.get("errors"):
                    form.add_error(None, error.message)
            else:
                messages.success(request, "Campaign created: give its link to the platform.")
                return redirect("annotation:campaigns", code=self.task.code)
        return self.render_to_response(self.get_context_data(form=form), status=400)


class CampaignToggleView(View):
    """POST: open or close a campaign (owners)."""

    def post(self, request, code, campaign_id):
        task = _owned_task(request, code)
        try:
            campaign = campaigns.campaign_get(task, campaign_id)
        except NotFound as error:
            raise Http404(error.message) from None
        campaigns.campaign_set_active(campaign, not campaign.is_active)
        return redirect("annotation:campaigns", code=task.code)


class CampaignCsvView(View):
    """The bonus CSV of a campaign: one line per worker (owners only), streamed."""

    def get(self, request, code, campaign_id):
        task = _owned_task(request, code)
        try:
            campaign = campaigns.campaign_get(task, campaign_id)
        except NotFound as error:
            raise Http404(error.message) from None
        response = StreamingHttpResponse(
            campaigns.campaign_csv_lines(campaign), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = (
            f'attachment; filename="{task.code}-campaign-{campaign.pk}-workers.csv"'
        )
        response["Cache-Control"] = "no-store"
        return response


def _owned_campaign(request, code, campaign_id) -> Campaign:
    """The campaign of an owned task; 404 when the task has no such campaign."""
    task = _owned_task(request, code)
    try:
        return campaigns.campaign_get(task, campaign_id)
    except NotFound as error:
        raise Http404(error.message) from None


class WorkerIdsForm(forms.Form):
    worker_ids = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "class": "font-monospace"}),
        max_length=200_000,
        label="Personal links for these worker ids",
        help_text="One per line (or separated by commas or spaces).",
    )


def _detail_page(request, campaign: Campaign, links_form=None, status=200):
    search = request.GET.get("q", "").strip()[:128]
    context = {
        "task": campaign.task,
        "campaign": campaign,
        "search": search,
        "workers": identities.campaign_bound_workers(campaign, search),
        "shown_limit": identities.BOUND_WORKERS_SHOWN,
        "link": request.build_absolute_uri(links.campaign_link_path(campaign)),
        "links_form": links_form or WorkerIdsForm(),
    }
    return render(request, "annotation/campaign_detail.html", context, status=status)


class CampaignDetailView(View):
    """``/tasks/<code>/campaigns/<id>/``: a campaign's workers, which browser holds each id,
    the release buttons, and (signed links) the personal links of a list of worker ids."""

    def get(self, request, code, campaign_id):
        return _detail_page(request, _owned_campaign(request, code, campaign_id))


class CampaignReleaseView(View):
    """POST ``external_id``: release a worker id so that the next browser binds it (owners)."""

    def post(self, request, code, campaign_id):
        campaign = _owned_campaign(request, code, campaign_id)
        external_id = request.POST.get("external_id", "")
        try:
            released = identities.campaign_worker_release(campaign, external_id)
        except NotFound as error:
            raise Http404(error.message) from None
        if released:
            messages.success(request, f"Released {external_id}: the next browser binds it.")
        else:
            messages.info(request, f"{external_id} was not bound to a browser.")
        return redirect("annotation:campaign_detail", code=code, campaign_id=campaign.pk)


class CampaignSignedLinksView(View):
    """POST: require signed worker links, or stop requiring them (owners)."""

    def post(self, request, code, campaign_id):
        campaign = _owned_campaign(request, code, campaign_id)
        identities.campaign_set_signed_links(campaign, not campaign.signed_worker_links)
        return redirect("annotation:campaign_detail", code=code, campaign_id=campaign.pk)


class CampaignLinksCsvView(View):
    """POST ``worker_ids``: a CSV of personal links, one per worker id (owners)."""

    def post(self, request, code, campaign_id):
        campaign = _owned_campaign(request, code, campaign_id)
        form = WorkerIdsForm(request.POST)
        if form.is_valid():
            try:
                external_ids = identities.worker_ids_parse(form.cleaned_data["worker_ids"])
            except ServiceError as error:
                form.add_error("worker_ids", error.message)
                for problem in error.details["errors"]:
                    where = f"line {problem['line']}: " if problem["line"] else ""
                    form.add_error("worker_ids", f"{where}{problem['code']} {problem['value']}")
            else:
                base_url = request.build_absolute_uri("/").rstrip("/")
                response = StreamingHttpResponse(
                    identities.campaign_worker_links_csv_lines(campaign, external_ids, base_url),
                    content_type="text/csv; charset=utf-8",
                )
                response["Content-Disposition"] = (
                    f'attachment; filename="{campaign.task.code}-campaign-{campaign.pk}-links.csv"'
                )
                response["Cache-Control"] = "no-store"
                return response
        return _detail_page(request, campaign, links_form=form, status=400)


def _work_url(campaign: Campaign) -> str:
    name = "annotation:validate" if campaign.kind == Campaign.Kind.VALIDATE else "annotation:create"
    try:
        return reverse(name, args=[campaign.task.code])
    except NoReverseMatch:  # the work pages are not wired: fall back to the task page
        return reverse("tasks:detail", args=[campaign.task.code])


class CampaignEnterView(View):
    """``/c/<signed>/?<param>=<worker id>``: identify a crowd worker, then send them to work.

    The worker id is bound to this browser's session (``annotation.campaigns.identities``).
    """

    def get(self, request, signed):
        token = identities.session_binding_token(request.session)
        try:
            campaign = links.campaign_from_signed_token(signed)
            worker = campaigns.campaign_worker_enter(
                campaign,
                request.GET.get(campaign.worker_id_param),
                binding_token=token,
                signature=request.GET.get(identities.WORKER_SIGNATURE_PARAM),
            )
        except ServiceError as error:
            return _error_response(request, error)
        # A new identity: a fresh session key, so an earlier session id cannot follow it.
        # The binding token is session data: it stays.
        request.session.cycle_key()
        identities.session_bind(request.session, token)
        request.session[SESSION_WORKER_KEY] = worker.pk
        request.session[SESSION_CAMPAIGN_KEY] = campaign.pk
        if campaigns.campaign_worker_complete(worker):
            return redirect("annotation:campaign_done")
        return redirect(_work_url(campaign))


REFUSAL_TEXTS = {
    identities.WorkerIdInUse.code: (
        "This worker id is in use in another browser",
        "Only one browser works as a worker id. The campaign's owner can release the id; "
        "then open your study link again in this browser.",
    ),
    identities.BadWorkerSignature.code: ("This link is not signed for your worker id", None),
    "campaign.unsigned_worker_link": ("This campaign needs your personal link", None),
}


def _error_response(request, error: ServiceError):
    title, advice = REFUSAL_TEXTS.get(error.code, (None, None))
    return render(
        request,
        "annotation/campaign_error.html",
        {"message": error.message, "title": title, "advice": advice, "code": error.code},
        status=error.status,
    )


class CampaignDoneView(TemplateView):
    """``/c/done/``: the completion code, only for the session's worker who met the quota."""

    template_name = "annotation/campaign_done.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        actor = actor_from_request(self.request)
        if actor is None or not actor.is_campaign:
            raise PermissionDenied("open your campaign link first")
        worker = actor.campaign_worker
        campaign = worker.campaign
        done = campaigns.campaign_worker_complete(worker)
        context.update(
            campaign=campaign,
            done=done,
            progress=campaigns.campaign_worker_progress(worker),
            completion_code=campaign.completion_code if done else None,
            work_url=_work_url(campaign),
        )
        return context
