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
import re

import pytest
from django.db import transaction

from tests.security.matrix import (
    ADMIN_FAMILIES,
    ADMIN_MODELS,
    HIDDEN_FIGURES,
    KNOWN_BUGS,
    MATRIX,
    check_for,
)
from tests.security.probe import build_path, probe, response_text
from tests.security.urlwalk import admin_model_urls, all_routes
from tests.security.world import ROLES, build_world, role_client, set_hidden_figures

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


# --- figures of the hidden dataset ------------------------------------------------------------
# A token that changes with every request (the CSRF token) is not a figure.
_VOLATILE = re.compile(r'(csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]*')


def _answer(client, path: str):
    """Return ``(status, body)`` of a GET, with the per-request tokens blanked."""
    response = client.get(path)
    return response.status_code, _VOLATILE.sub(r"\1", response_text(response))


@pytest.mark.parametrize("surface", sorted(HIDDEN_FIGURES))
def test_hidden_dataset_figures(surface, world, clients):
    """Each role's answer changes with the hidden dataset's figures exactly where the matrix
    says it may ("F": the task's owners), and nowhere else."""
    path_of, outcomes = HIDDEN_FIGURES[surface]
    path = path_of(world)
    before = {role: _answer(clients[role], path) for role in ROLES}
    set_hidden_figures(world, 1)
    after = {role: _answer(clients[role], path) for role in ROLES}
    observed = {}
    for role in ROLES:
        status = before[role][0]
        assert after[role][0] == status, (role, path)
        if status != 200:
            observed[role] = status
        else:
            observed[role] = "F" if before[role][1] != after[role][1] else "-"
    if os.environ.get("SECURITY_MATRIX_DUMP"):
        print(f"\n{surface!r}: {tuple(observed[r] for r in ROLES)!r},  # GET {path}")
        return
    expected = dict(zip(ROLES, outcomes, strict=True))
    wrong = {
        role: f"expected {expected[role]!r}, got {observed[role]!r}"
        for role in ROLES
        if observed[role] != expected[role]
    }
    assert not wrong, f"GET {path}: {wrong}"
