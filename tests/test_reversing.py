"""``reverse_filled`` gives exactly what ``reverse`` gives."""

from __future__ import annotations

import pytest
from django.urls import NoReverseMatch, reverse, set_script_prefix

from dynatask_site.reversing import reverse_filled

CASES = [
    ("annotation:example", ("sentiment", 7)),
    ("annotation:example_retract", ("nli-r2_x", 123456789)),
    ("annotation:create", ("qa",)),
    ("annotation:example_status", ("sentiment", 0)),
    ("annotation:sandbox_status", ("sentiment", "job-1_a")),
    # Not filled in (reverse itself answers): quoting, slashes, non-ASCII, digit strings.
    ("annotation:sandbox_status", ("sentiment", "a b?c")),
    ("annotation:sandbox_status", ("sentiment", "zzreversedarg1zz")),
    ("annotation:example", ("sentiment", "42")),
    ("annotation:example", ("sentiment", 2_147_480_000)),
    ("tasks:home", ()),
]


@pytest.mark.parametrize(("name", "args"), CASES)
def test_equals_reverse(name, args):
    assert reverse_filled(name, *args) == reverse(name, args=args)
    assert reverse_filled(name, *args) == reverse(name, args=args)  # from the cached pattern


@pytest.mark.parametrize("prefix", ["/", "/mounted/", "/a/b/"])
def test_follows_the_script_prefix(prefix):
    set_script_prefix(prefix)
    try:
        for name, args in CASES:
            assert reverse_filled(name, *args) == reverse(name, args=args)
    finally:
        set_script_prefix("/")


def test_a_url_that_does_not_reverse_fails_as_reverse_does():
    with pytest.raises(NoReverseMatch):
        reverse_filled("annotation:example", "not a slug!", 1)
    with pytest.raises(NoReverseMatch):
        reverse_filled("annotation:example", "sentiment")
