"""The reference documents of ``docs/``, served as pages of the site (works offline)."""

from __future__ import annotations

from django.http import Http404
from django.views.generic import TemplateView

from core.errors import NotFound
from tasks.documentation import DOCUMENTS, documentation_page, documentation_url


class DocumentationView(TemplateView):
    template_name = "tasks/documentation.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        try:
            context["page"] = documentation_page(kwargs["slug"])
        except NotFound as error:
            raise Http404(error.message) from None
        context["contents"] = [
            {"title": documentation_page(slug).title, "url": documentation_url(slug), "slug": slug}
            for slug in DOCUMENTS
        ]
        return context
