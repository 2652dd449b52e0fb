"""The access matrix: every URL pattern, every role, one expected outcome each.

``tests/security/matrix.py`` holds the table. ``test_every_route_has_an_entry`` fails when a
URL pattern is added without one, so access rules are decided when a page is written, not
after it leaks. Outcomes: a status code, ``"login"`` (a redirect to a login page) or
``"302"`` (any other redirect).

To see what a new page answers, run with ``SECURITY_MATRIX_DUMP=1 -s``: the observed row of
every route is printed, in the table's syntax, for review (never paste it unread).
"""

from __future__ import annotations

import os

import pytest
from django.db import transaction

from tests.security.matrix import ADMIN_FAMILIES, ADMIN_MODELS, KNOWN_BUGS, MATRIX, check_for
from tests.security.probe import build_path, probe
from tests.security.urlwalk import admin_model_urls, all_routes
from tests.security.world import ROLES, build_world, role_client

ROUTES = all_routes()
ROUTE_KEYS = sorted(route.key for route in ROUTES)


def test_every_route_has_an_entry():
    missing = [f"{route.key}  ({route.pattern})" for route in ROUTES if check_for(route) is None]
    assert not missing, "URL patterns without an access-matrix entry:\n" + "\n".join(missing)


def test_every_admin_model_has_a_family():
    models = set(admin_model_urls().values())
    missing = sorted(models - set(ADMIN_MODELS))
    assert not missing, f"admin models without an access family: {missing}"
    unknown = {family for family, _ in ADMIN_MODELS.values()} - set(ADMIN_FAMILIES)
    assert not unknown


def test_matrix_has_no_stale_entries():
    stale = sorted(set(MATRIX) - set(ROUTE_KEYS))
    assert not stale, f"matrix entries for URL patterns that no longer exist: {stale}"


@pytest.fixture(scope="module")
def shared_world(django_db_setup, django_db_blocker):
    """One world for the whole module, rolled back at the end; each test runs in a savepoint."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield build_world()
        transaction.set_rollback(True)


@pytest.fixture
def world(shared_world, db):
    return shared_world


@pytest.fixture
def clients(world):
    return {role: role_client(world, role) for role in ROLES}


def _observe(world, clients, route, check):
    """Return the path and each role's outcome; roles not allowed must leave no effect."""
    path = build_path(world, route.key, route.pattern, check)
    data = check.data(world) if check.data else None
    observed, effects = {}, []
    for role in ROLES:
        before = check.effect(world) if check.effect else None
        observed[role] = probe(clients[role], check.method, path, data, check.headers)
        if check.effect and role not in check.allowed and check.effect(world) != before:
            effects.append(role)
    return path, observed, effects


def _params():
    for key in ROUTE_KEYS:
        if key in KNOWN_BUGS:
            yield pytest.param(key, marks=pytest.mark.xfail(reason=KNOWN_BUGS[key], strict=True))
        else:
            yield key


@pytest.mark.parametrize("key", list(_params()))
def test_route_access(key, world, clients):
    route = next(route for route in ROUTES if route.key == key)
    check = check_for(route)
    if check is None:
        pytest.fail(f"no matrix entry for {key}")
    path, observed, effects = _observe(world, clients, route, check)
    expected = {role: check.expect[role] for role in ROLES}
    if os.environ.get("SECURITY_MATRIX_DUMP"):
        print(f"\n{key!r}: {tuple(observed[r] for r in ROLES)!r},  # {check.method} {path}")
        return
    wrong = {
        role: f"expected {expected[role]!r}, got {observed[role]!r}"
        for role in ROLES
        if observed[role] != expected[role]
    }
    assert not wrong, f"{check.method} {path}: {wrong}"
    assert not effects, f"{check.method} {path} changed state for roles {effects}"
