"""Render Markdown to sanitised HTML (nh3 strips scripts and handlers): owner-written text
and the project's own documents."""

from __future__ import annotations

import re
from functools import lru_cache

import markdown as markdown_lib
import nh3
from markdown.extensions.toc import TocExtension

ALLOWED_TAGS = {
    "a",
    "abbr",
    "b",
    "blockquote",
    "br",
    "code",
    "em",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "i",
    "li",
    "ol",
    "p",
    "pre",
    "strong",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "tr",
    "ul",
    "img",
    "del",
    "sup",
    "sub",
}
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "abbr": {"title"}}


# Instructions are rendered on every create and validate page, and they change only when the
# owner edits them: the text is the key (a pure function of it), a bounded cache per process.
@lru_cache(maxsize=512)
def render_markdown(text: str) -> str:
    """Return safe HTML for ``text``; raw HTML in the source is sanitised, not trusted."""
    html = markdown_lib.markdown(text or "", extensions=["tables", "fenced_code", "sane_lists"])
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def heading_anchor(text: str, separator: str = "-") -> str:
    """Return the anchor of a heading as GitHub spells it, so ``file.md#anchor`` links work."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", separator)


DOCUMENTATION_ATTRIBUTES = {
    **ALLOWED_ATTRIBUTES,
    **{f"h{level}": {"id"} for level in range(1, 7)},
}


def render_documentation(text: str) -> str:
    """Return safe HTML for one of the project's own Markdown documents.

    Like ``render_markdown``, with an ``id`` on every heading (GitHub's anchors), so that
    links to a section of a document keep working when it is served by the site.
    """
    html = markdown_lib.markdown(
        text,
        extensions=[
            "tables",
            "fenced_code",
            "sane_lists",
            TocExtension(slugify=heading_anchor, permalink=False),
        ],
    )
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=DOCUMENTATION_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
    )
