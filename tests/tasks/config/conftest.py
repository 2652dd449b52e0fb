"""Shared fixtures of the task-config tests."""

from __future__ import annotations

import pytest

from tasks.config import TaskConfig, parse_task_config
from tests.tasks.config.samples import dynabench_text


@pytest.fixture
def load_dynabench():
    """Parse a Dynabench example config by task name."""

    def load(task: str) -> TaskConfig:
        return parse_task_config(dynabench_text(task))

    return load
