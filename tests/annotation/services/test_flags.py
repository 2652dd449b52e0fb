"""The writer's flag: once, with an optional reason (refused past its limit, never cut),
and its undo, which gives back the count the flag added."""

from __future__ import annotations

import pytest

from annotation.campaigns.actors import Actor
from annotation.models import Example
from annotation.services.examples import MAX_FLAG_REASON, example_flag, example_unflag
from core.errors import PermissionDenied, ServiceError
from tests.factories import ExampleFactory, TaskFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def example():
    return ExampleFactory(task=TaskFactory(code="sentiment"), user=UserFactory(username="writer"))


def writer(example) -> Actor:
    return Actor(user=example.user)


def test_flag_keeps_the_reason_and_counts_once(example):
    flagged = example_flag(example, writer(example), "  my label is wrong  ")
    again = example_flag(example, writer(example), "another reason")
    assert (flagged.creator_flagged, flagged.flag_count) == (True, 1)
    assert again.flag_count == 1
    stored = Example.objects.get(pk=example.pk)
    assert (stored.flag_count, stored.creator_flag_reason) == (1, "my label is wrong")


def test_the_reason_is_optional(example):
    flagged = example_flag(example, writer(example))
    assert (flagged.creator_flagged, flagged.creator_flag_reason) == (True, "")


def test_a_reason_over_the_limit_is_refused_not_cut(example):
    with pytest.raises(ServiceError) as raised:
        example_flag(example, writer(example), "x" * (MAX_FLAG_REASON + 1))
    assert raised.value.code == "flag.reason_too_long"
    stored = Example.objects.get(pk=example.pk)
    assert (stored.creator_flagged, stored.flag_count, stored.creator_flag_reason) == (
        False,
        0,
        "",
    )
    assert example_flag(example, writer(example), "x" * MAX_FLAG_REASON).creator_flagged


def test_undo_gives_back_the_flag_and_its_count(example):
    example_flag(example, writer(example), "typo")
    undone = example_unflag(example, writer(example))
    assert (undone.creator_flagged, undone.creator_flag_reason, undone.flag_count) == (
        False,
        "",
        0,
    )
    # Undoing twice changes nothing; flagging again counts again, once.
    assert example_unflag(example, writer(example)).flag_count == 0
    assert example_flag(example, writer(example), "again").flag_count == 1


def test_undo_keeps_the_validators_flags(example):
    Example.objects.filter(pk=example.pk).update(flag_count=2, flagged_count=2)
    example_flag(example, writer(example), "")
    assert Example.objects.get(pk=example.pk).flag_count == 3
    assert example_unflag(example, writer(example)).flag_count == 2


def test_only_the_writer_flags_or_undoes(example):
    stranger = Actor(user=UserFactory(username="stranger"))
    with pytest.raises(PermissionDenied):
        example_flag(example, stranger, "")
    example_flag(example, writer(example), "")
    with pytest.raises(PermissionDenied):
        example_unflag(example, stranger)
    assert Example.objects.get(pk=example.pk).creator_flagged
