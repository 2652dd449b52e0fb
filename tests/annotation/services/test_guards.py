"""Retries after a deadlock: only the outermost transaction starts over."""

from __future__ import annotations

import psycopg
import pytest
from django.db import OperationalError

from annotation.services.guards import DEADLOCK_ATTEMPTS, retry_on_deadlock


def _deadlock() -> OperationalError:
    error = OperationalError("deadlock detected")
    error.__cause__ = psycopg.errors.DeadlockDetected("deadlock detected")
    return error


@pytest.mark.django_db(transaction=True)
def test_a_deadlocked_service_runs_again():
    calls = []

    @retry_on_deadlock
    def service():
        calls.append(1)
        if len(calls) < 3:
            raise _deadlock()
        return "done"

    assert service() == "done" and len(calls) == 3


@pytest.mark.django_db(transaction=True)
def test_other_errors_and_endless_deadlocks_are_raised():
    @retry_on_deadlock
    def broken():
        raise OperationalError("connection lost")

    with pytest.raises(OperationalError, match="connection lost"):
        broken()

    calls = []

    @retry_on_deadlock
    def stuck():
        calls.append(1)
        raise _deadlock()

    with pytest.raises(OperationalError):
        stuck()
    assert len(calls) == DEADLOCK_ATTEMPTS


@pytest.mark.django_db
def test_no_retry_inside_an_outer_transaction():
    calls = []

    @retry_on_deadlock
    def service():
        calls.append(1)
        raise _deadlock()

    with pytest.raises(OperationalError):
        service()  # the test's own transaction is the outer block
    assert len(calls) == 1
