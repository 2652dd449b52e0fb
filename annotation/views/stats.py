"""Stats pages: a task's round numbers and agreement, the owners' per-worker table, and
the public user leaderboard."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import Http404, HttpResponseBadRequest
from django.views.generic import TemplateView

from annotation.stats import summaries as stats
from core.errors import NotFound, ServiceError
from tasks.permissions import can_export_examples, can_manage_campaigns, can_see_worker_stats
from tasks.selectors import task_get_visible

WORKER_TABLE_PAGE_SIZE = 50


class _TaskPage(TemplateView):
    """Resolve the visible task and the optional ``?round=N`` before rendering."""

    def get(self, request, *args, **kwargs):
        try:
            self.task = task_get_visible(kwargs["code"], request.user)
            self.round = stats.round_by_number(self.task, request.GET.get("round"))
        except NotFound as error:
            raise Http404(error.message) from None
        except ServiceError as error:
            return HttpResponseBadRequest(error.message)
        return super().get(request, *args, **kwargs)


class TaskStatsView(_TaskPage):
    """``/tasks/<code>/stats/``: public numbers per round (with agreement); owners also get
    the per-worker table (``?round=N`` narrows it)."""

    template_name = "annotation/stats_task.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        user = self.request.user
        rounds = [
            {"summary": summary, "agreement": stats.round_agreement_cached(summary.round_id)}
            for summary in stats.task_round_stats(self.task)
        ]
        is_owner = can_see_worker_stats(user, self.task)
        workers = None
        if is_owner:
            paginator = Paginator(stats.worker_stats(self.task, self.round), WORKER_TABLE_PAGE_SIZE)
            workers = paginator.get_page(self.request.GET.get("page"))
        context.update(
            task=self.task,
            rounds=rounds,
            selected_round=self.round,
            is_owner=is_owner,
            workers=workers,
            can_export=can_export_examples(user, self.task),
            can_manage_campaigns=can_manage_campaigns(user, self.task),
        )
        return context


class WorkerLeaderboardView(_TaskPage):
    """``/tasks/<code>/workers/[?round=N&page=P]``: users ranked by verified fooling examples."""

    template_name = "annotation/stats_workers.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        board = stats.user_leaderboard(self.task, self.round, self.request.GET.get("page"))
        context.update(
            task=self.task,
            board=board,
            selected_round=self.round,
            round_numbers=list(self.task.rounds.values_list("number", flat=True)),
        )
        return context
