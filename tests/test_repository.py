"""The repository's own history follows ``docs/CONTRIBUTING.md`` ("Commits").

Commit subjects keep to 72 characters, as Django's do; details go in the body. The rule holds
from commit ``8975805`` on (the older history is left as it was). The test reads the history
with ``git`` and skips, with a one-line reason, where there is none to read: no ``.git`` (an
exported tree), no ``git``, or a shallow clone that stops before ``8975805``.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.shared_files import REPOSITORY

SUBJECT_LIMIT = 72
RULE_SINCE = "8975805"


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", str(REPOSITORY), *args], capture_output=True, text=True, check=False
    )


def subjects_since(commit: str) -> list[str]:
    """Return the subject of every commit after ``commit`` up to ``HEAD``, or skip."""
    if not (REPOSITORY / ".git").exists():
        pytest.skip("no .git here (an exported tree): there is no history to read")
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the history cannot be read")
    if git("merge-base", "--is-ancestor", commit, "HEAD").returncode != 0:
        pytest.skip(f"commit {commit} is not in this history (a shallow clone?)")
    log = git("log", "--format=%s", f"{commit}..HEAD")
    assert log.returncode == 0, log.stderr
    return log.stdout.splitlines()


def test_commit_subjects_keep_to_72_characters():
    too_long = [
        f"{len(subject)}: {subject}"
        for subject in subjects_since(RULE_SINCE)
        if len(subject) > SUBJECT_LIMIT
    ]
    assert too_long == [], f"subjects over {SUBJECT_LIMIT} characters:\n" + "\n".join(too_long)
