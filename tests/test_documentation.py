"""README.md and docs/ link only to files of the repository, and the links resolve.

A plain clone has nothing beside it (no ../shared), so a link that leaves the repository is
a dead link there. Anchors (``file.md#section``) must name a heading of the target.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.shared_files import REPOSITORY

DOCUMENTS = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
# [text](target) outside code spans; images too.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
EXTERNAL = ("http://", "https://", "mailto:")


def links(path: Path) -> list[str]:
    """Return the link targets of a Markdown file, leaving out fenced code and code spans."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


def anchors(path: Path) -> set[str]:
    """Return GitHub's anchors of the headings of a Markdown file."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_links_stay_inside_the_repository_and_resolve(document):
    for target in links(document):
        if target.startswith(EXTERNAL):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (document.parent / file_part).resolve() if file_part else document
        assert resolved.is_relative_to(REPOSITORY), (
            f"{document.name}: {target} leaves the repository"
        )
        assert resolved.exists(), f"{document.name}: {target} does not exist"
        if anchor:
            assert anchor in anchors(resolved), f"{document.name}: no heading for #{anchor}"


def test_the_readme_links_the_references():
    readme_links = links(REPOSITORY / "README.md")
    assert "docs/task-config.md" in readme_links
    assert "docs/model-protocol.md" in readme_links
