"""A plain clone, with no ../shared beside it, passes the config tests on our own fixtures.

The config tests and the task commands run in a child pytest whose ``DYNATASK_SHARED_DIR`` is
an empty folder (as in a fresh ``git clone``) and whose database is a SQLite file of its own:
they must pass, and every test that needs ../shared must be skipped with the reason of
``tests.shared_files``, never fail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.shared_files import (
    MLCOMMONS_MISSING,
    REPOSITORY,
    SHARED_DATA_MISSING,
    SHARED_DIR_VARIABLE,
    SHARED_MISSING,
)

CHILD_TESTS = ("tests/tasks/config", "tests/tasks/test_commands.py")
# The random-text fuzz tests read no file: leaving them to the parent run saves seconds.
NOT_FILE_TESTS = "not arbitrary and not punctuation"


def counts(summary: str) -> dict[str, int]:
    """Return the outcome counts of pytest's last summary line ("12 passed, 3 skipped in...")."""
    return {word: int(number) for number, word in re.findall(r"(\d+) (\w+)", summary)}


@pytest.mark.slow
def test_the_config_tests_pass_without_the_shared_folder(tmp_path):
    empty = tmp_path / "shared"
    empty.mkdir()
    env = {
        **os.environ,
        SHARED_DIR_VARIABLE: str(empty),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *CHILD_TESTS, "-k", NOT_FILE_TESTS]
        + ["-q", "-rs", "-p", "no:cacheprovider"],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )

    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    outcome = counts(result.stdout.strip().splitlines()[-1])
    assert outcome.get("passed", 0) > 100, outcome
    assert outcome.get("skipped", 0) > 0, outcome
    assert set(outcome) <= {"passed", "skipped", "deselected"}, outcome
    skip_lines = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert skip_lines
    for line in skip_lines:
        assert line.endswith((SHARED_MISSING, MLCOMMONS_MISSING, SHARED_DATA_MISSING)), line
    assert any(line.endswith(SHARED_MISSING) for line in skip_lines)
