"""The pages of forks (saved weightings at their own URL) and snapshots (frozen tables)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from core.errors import PermissionDenied
from leaderboards.models import LeaderboardFork, LeaderboardSnapshot, Score
from leaderboards.services.boards import snapshot_create
from tests.factories import UserFactory
from tests.leaderboards.boardkit import MAIN, table_for

SPEED_QUERY = f"w_{MAIN}=0.5&w_examples_per_second=5&d_alpha=2"


def frozen_part(html: str) -> str:
    """Return the snapshot's metadata and table (the CSRF token changes per request)."""
    return html[html.index('data-testid="snapshot-meta"') :]


@pytest.mark.django_db
def test_fork_round_trip(client, secret_board):
    user = UserFactory()
    client.force_login(user)
    expected = table_for(secret_board, querydict=SPEED_QUERY)
    form = dict(expected.weights.as_query(), name="Fast models", description="Speed first")
    response = client.post(reverse("leaderboards:fork_create", args=[secret_board.code]), form)
    fork = LeaderboardFork.objects.get(task=secret_board)
    assert response.status_code == 302
    assert response.url == reverse("leaderboards:fork", args=[secret_board.code, "fast-models"])
    assert fork.weights["metrics"]["examples_per_second"] == 5.0
    assert fork.weights["datasets"] == {"alpha": 2.0, "beta": 1.0}
    assert fork.created_by == user

    client.logout()
    page = client.get(response.url)
    assert page.status_code == 200
    assert "Fast models" in page.content.decode()
    shown = page.context["table"]
    assert [row.model_name for row in shown.rows] == [row.model_name for row in expected.rows]
    assert shown.weights == expected.weights
    # Query parameters still re-weight on top of the fork.
    again = client.get(response.url + f"?w_{MAIN}=5&w_examples_per_second=0")
    assert again.context["table"].weights.metrics["examples_per_second"] == 0.0


@pytest.mark.django_db
def test_anonymous_fork_post_is_refused_without_500(client, secret_board):
    response = client.post(
        reverse("leaderboards:fork_create", args=[secret_board.code]), {"name": "x"}
    )
    assert response.status_code == 302
    assert not LeaderboardFork.objects.exists()
    assert (
        client.get(reverse("leaderboards:fork", args=[secret_board.code, "nope"])).status_code
        == 404
    )


@pytest.mark.django_db
def test_snapshot_is_frozen(client, secret_board, owner):
    client.force_login(owner)
    expected = table_for(secret_board, querydict=SPEED_QUERY + "&sort=-examples_per_second")
    form = dict(expected.weights.as_query(), sort="-examples_per_second", name="Round 1 final")
    response = client.post(reverse("leaderboards:snapshot_create", args=[secret_board.code]), form)
    snapshot = LeaderboardSnapshot.objects.get(task=secret_board)
    assert response.url == reverse("leaderboards:snapshot", args=[secret_board.code, snapshot.pk])
    frozen = [row["model"] for row in snapshot.table["rows"]]
    assert frozen == [row.model_name for row in expected.rows]
    assert snapshot.created_by == owner
    assert "secret" not in str(snapshot.table)  # public view, even when an owner takes it

    before = frozen_part(client.get(response.url).content.decode())
    Score.objects.filter(dataset__task=secret_board).update(
        main_value=1.0, metrics={MAIN: 1.0}, updated_at=timezone.now()
    )
    after = frozen_part(client.get(response.url).content.decode())
    assert before == after
    assert "owner" in after and snapshot.created_at.strftime("%Y-%m-%d") in after
    live = table_for(secret_board, querydict=SPEED_QUERY)
    assert live.rows[0].metrics[MAIN] == 1.0


@pytest.mark.django_db
def test_only_owners_take_snapshots(client, secret_board):
    with pytest.raises(PermissionDenied):
        snapshot_create(secret_board, user=UserFactory(), weights=table_for(secret_board).weights)
    client.force_login(UserFactory())
    response = client.post(reverse("leaderboards:snapshot_create", args=[secret_board.code]), {})
    assert response.status_code == 302
    assert not LeaderboardSnapshot.objects.exists()
    assert (
        client.get(reverse("leaderboards:snapshot", args=[secret_board.code, 12345])).status_code
        == 404
    )
