"""Locate the ``shared`` folder beside the repository, or skip the tests that need it.

A plain ``git clone`` has no ``shared`` folder beside it; CI and the project's machines have
one (the Dynabench example configs, the real datasets). Every test that reads that folder
finds it through this module: it runs where the folder is present and is skipped, with a
one-line reason, where it is not. ``DYNATASK_SHARED_DIR`` overrides the location (an empty
folder stands for a plain clone).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DIR_VARIABLE = "DYNATASK_SHARED_DIR"
REPOSITORY = Path(__file__).resolve().parents[1]
SHARED_MISSING = "../shared is not beside the repository: the Dynabench configs are not here"
MLCOMMONS_MISSING = "../shared is not beside the repository: the Dynabench v2 configs are not here"
SHARED_DATA_MISSING = "../shared/data is not beside the repository: the real datasets are not here"


def shared_dir() -> Path:
    """Return the shared folder: ``$DYNATASK_SHARED_DIR``, else ``shared`` beside the repository."""
    configured = os.environ.get(SHARED_DIR_VARIABLE, "").strip()
    return Path(configured) if configured else REPOSITORY.parent / "shared"


def dynabench_dir() -> Path:
    """Return the folder of the Dynabench example configs (it may not exist)."""
    return shared_dir() / "task_configs" / "dynabench"


def has_dynabench_configs() -> bool:
    """Return True when the Dynabench example configs are beside the repository."""
    return dynabench_dir().is_dir()


# Marks a test (or a pytest.param) that reads the Dynabench configs.
needs_dynabench = pytest.mark.skipif(not has_dynabench_configs(), reason=SHARED_MISSING)


def dynabench_config_path(task: str) -> Path:
    """Return the path of a Dynabench example config; skip the test when they are absent.

    Only a missing folder skips: a folder without the named file is a failure.
    """
    if not has_dynabench_configs():
        pytest.skip(SHARED_MISSING)
    return dynabench_dir() / f"{task}_task_config.yaml"


def dynabench_text(task: str) -> str:
    """Return the YAML text of a Dynabench example config, byte for byte (or skip)."""
    return dynabench_config_path(task).read_text(encoding="utf-8")


def mlcommons_dir() -> Path:
    """Return the folder of Dynabench's current (v2) example configs (it may not exist)."""
    return shared_dir() / "task_configs" / "mlcommons"


# Marks a test (or a pytest.param) that reads the Dynabench v2 configs.
needs_mlcommons = pytest.mark.skipif(not mlcommons_dir().is_dir(), reason=MLCOMMONS_MISSING)


def mlcommons_config_path(task: str) -> Path:
    """Return the path of a Dynabench v2 example config; skip the test when they are absent."""
    if not mlcommons_dir().is_dir():
        pytest.skip(MLCOMMONS_MISSING)
    return mlcommons_dir() / f"{task}_task_config.yaml"


def shared_data_dir() -> Path:
    """Return the folder of the real datasets; skip the test when it is absent."""
    data = shared_dir() / "data"
    if not data.is_dir():
        pytest.skip(SHARED_DATA_MISSING)
    return data
