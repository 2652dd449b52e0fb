"""The project's reference documents (``docs/*.md``), served as pages of the site.

The site must work offline, so the editor links here rather than to a code host. Only the
documents listed in ``DOCUMENTS`` are served; links between them are rewritten to their
pages, and each error-code row of the error catalogue gets an anchor (``#config-e012``) that
the config editor's messages link to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.urls import reverse

from core.errors import NotFound
from tasks.markdown import render_documentation

DOCUMENTS: dict[str, str] = {
    "task-config": "task-config.md",
    "task-config-errors": "task-config-errors.md",
    "task-builder": "task-builder.md",
    "model-protocol": "model-protocol.md",
    "leaderboard": "leaderboard.md",
    "demo-models": "demo-models.md",
    "api": "api.md",
}
_FILE_TO_SLUG = {filename: slug for slug, filename in DOCUMENTS.items()}
# A Markdown link to a sibling document: ](task-config.md) or ](task-config.md#errors).
_SIBLING_LINK = re.compile(r"\]\((?P<file>[\w.-]+\.md)(?P<anchor>#[\w-]*)?\)")
# A table row whose first cell is an error code: <tr>\n<td><code>config.E012</code></td>.
_CODE_ROW = re.compile(r"<tr>(\s*<td><code>)(?P<code>(?:config|value)\.[EW]\d{3})(</code>)")


@dataclass(frozen=True)
class DocumentationPage:
    slug: str
    title: str
    html: str


def error_code_anchor(code: str) -> str:
    """Return the anchor of ``code``'s row in the error catalogue (``config-e012``)."""
    return code.lower().replace(".", "-")


def documentation_url(slug: str, anchor: str = "") -> str:
    url = reverse("tasks:documentation", args=[slug])
    return f"{url}#{anchor}" if anchor else url


def documentation_page(slug: str) -> DocumentationPage:
    """Return the rendered document ``slug``; raise ``NotFound`` when it is not served."""
    filename = DOCUMENTS.get(slug)
    path = Path(settings.BASE_DIR) / "docs" / filename if filename else None
    if path is None or not path.is_file():
        raise NotFound(f"no document called {slug!r}", code="documentation.missing")
    title, html = _rendered(str(path), path.stat().st_mtime_ns)
    return DocumentationPage(slug=slug, title=title, html=html)


@lru_cache(maxsize=16)
def _rendered(path: str, modified: int) -> tuple[str, str]:
    # Keyed on the file's modification time, so an edited document is rendered again.
    text = Path(path).read_text(encoding="utf-8")
    heading = re.search(r"^# +(.+?) *$", text, flags=re.MULTILINE)
    title = heading.group(1).replace("`", "") if heading else Path(path).stem
    html = render_documentation(_SIBLING_LINK.sub(_sibling_page, text))
    html = _CODE_ROW.sub(
        lambda match: (
            f'<tr id="{error_code_anchor(match["code"])}">{match[1]}{match["code"]}{match[3]}'
        ),
        html,
    )
    return title, html


def _sibling_page(match: re.Match) -> str:
    slug = _FILE_TO_SLUG.get(match["file"])
    if slug is None:
        return match[0]
    return f"]({documentation_url(slug, (match['anchor'] or '').lstrip('#'))})"
