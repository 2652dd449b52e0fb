"""Forks (saved weightings) and snapshots: slugs, signed-in users, no hidden dataset."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser

from core.errors import PermissionDenied, ServiceError
from leaderboards.services.boards import fork_create
from leaderboards.tables.results import LeaderboardWeights
from tests.factories import UserFactory
from tests.leaderboards.boardkit import MAIN


@pytest.mark.django_db
def test_fork_slugs_are_unique_and_forks_need_a_signed_in_user(secret_board):
    user = UserFactory()
    weights = LeaderboardWeights(metrics={MAIN: 1.0}, datasets={})
    first = fork_create(secret_board, user=user, name="Mine", weights=weights)
    second = fork_create(secret_board, user=user, name="Mine", weights=weights)
    assert (first.slug, second.slug) == ("mine", "mine-2")
    with pytest.raises(PermissionDenied):
        fork_create(secret_board, user=AnonymousUser(), name="x", weights=weights)
    with pytest.raises(ServiceError):
        fork_create(secret_board, user=user, name="   ", weights=weights)


@pytest.mark.django_db
def test_fork_never_stores_hidden_datasets(secret_board, owner):
    weights = LeaderboardWeights(metrics={}, datasets={"secret": 3.0, "alpha": 2.0})
    fork = fork_create(secret_board, user=owner, name="owner view", weights=weights)
    assert "secret" not in fork.weights["datasets"]
