"""Fixtures of the leaderboards tests: the evaluation's (``evalkit``) and small boards."""

from __future__ import annotations

import pytest

from tests.factories import DatasetFactory, ModelFactory
from tests.leaderboards.boardkit import make_models
from tests.leaderboards.evalkit import eval_owner, eval_task, fast_client  # noqa: F401


@pytest.fixture
def two_datasets(task):
    return [
        DatasetFactory(task=task, slug="alpha", name="Alpha"),
        DatasetFactory(task=task, slug="beta", name="Beta"),
    ]


@pytest.fixture
def file_model(eval_task, eval_owner):  # noqa: F811 - the fixtures imported above
    return ModelFactory(task=eval_task, owner=eval_owner, name="file-model")


@pytest.fixture
def secret_board(task):
    """Eight published models on two scoring datasets and a hidden one."""
    datasets = [
        DatasetFactory(task=task, slug="alpha", name="Alpha"),
        DatasetFactory(task=task, slug="beta", name="Beta"),
        DatasetFactory(task=task, slug="secret", name="Secret", access_type="hidden"),
    ]
    make_models(task, 8, datasets)
    return task
