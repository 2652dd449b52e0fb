"""Self-sign-up: the form, Django's password rules, signing the new user in, the throttles,
and the admin's switch (the "Site settings" row) that closes it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from django.urls import reverse

from tasks.accounts import signup_is_open, site_settings_get
from tasks.models import SiteSettings
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

SIGNUP = "/accounts/signup/"
STRONG = "plum-harbour-lantern-42"


def form(username="newworker", password=STRONG, again=None, **extra) -> dict:
    return {"username": username, "password1": password, "password2": again or password, **extra}


def close_signup() -> None:
    row = site_settings_get()
    row.signup_open = False
    row.save()


def test_the_url_is_where_the_login_page_points():
    assert reverse("tasks:signup") == SIGNUP


def test_signing_up_creates_a_worker_and_signs_them_in(client):
    page = client.get(SIGNUP)
    assert page.status_code == 200
    html = page.content.decode()
    for name in ("username", "email", "password1", "password2"):
        assert f'name="{name}"' in html
    response = client.post(SIGNUP, form(email="", next="/tasks/sentiment/create"))
    assert response.status_code == 302
    assert response["Location"] == "/tasks/sentiment/create"
    user = get_user_model().objects.get(username="newworker")
    assert (user.is_staff, user.is_superuser, user.email) == (False, False, "")
    assert int(client.session["_auth_user_id"]) == user.pk
    assert user.check_password(STRONG)


def test_an_email_is_kept_when_given(client):
    client.post(SIGNUP, form(email="me@example.org"))
    assert get_user_model().objects.get(username="newworker").email == "me@example.org"


def test_an_outside_next_is_not_followed(client):
    response = client.post(SIGNUP, form(next="https://evil.example/steal"))
    assert response["Location"] == "/"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (form(password="short"), "too short"),
        (form(password="password123"), "too common"),
        (form(password="83749201938"), "entirely numeric"),
        (form(username="lanternkeeper", password="lanternkeeper1"), "too similar"),
        (form(again="something-else-entirely"), "didn’t match"),
        (form(email="not an email"), "valid email"),
    ],
)
def test_djangos_password_rules_and_the_fields_are_checked(client, data, message):
    response = client.post(SIGNUP, data)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not get_user_model().objects.filter(username=data["username"]).exists()
    assert "_auth_user_id" not in client.session


def test_a_username_taken_in_another_case_is_refused(client):
    UserFactory(username="Alice")
    response = client.post(SIGNUP, form(username="alice"))
    assert "already exists" in response.content.decode()
    assert get_user_model().objects.filter(username__iexact="alice").count() == 1


def test_a_signed_in_user_is_sent_on(client):
    client.force_login(UserFactory(username="member"))
    assert client.get(SIGNUP)["Location"] == "/"


def test_the_login_page_links_to_sign_up_while_it_is_open(client):
    html = client.get("/accounts/login/?next=/tasks/qa/create").content.decode()
    assert 'id="signup-link"' in html
    assert "/accounts/signup/?next=/tasks/qa/create" in html
    close_signup()
    html = client.get("/accounts/login/").content.decode()
    assert 'id="signup-link"' not in html
    assert 'name="username"' in html  # the login page itself works as before


def test_closed_sign_up_says_so_and_creates_nobody(client):
    close_signup()
    page = client.get(SIGNUP)
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="signup-closed"' in html and 'name="password1"' not in html
    response = client.post(SIGNUP, form())
    assert response.status_code == 403
    assert not get_user_model().objects.filter(username="newworker").exists()


def test_the_admin_switches_sign_up_off_and_on(client, admin_user_obj):
    client.force_login(admin_user_obj)
    # The list of one row opens the row.
    listing = client.get("/admin/tasks/sitesettings/")
    change = f"/admin/tasks/sitesettings/{SiteSettings.SINGLETON_PK}/change/"
    assert listing["Location"] == change
    assert client.get(change).status_code == 200
    response = client.post(change, {})  # the box unticked
    assert response.status_code == 302
    assert not signup_is_open()  # the cached row was forgotten
    client.logout()
    assert 'id="signup-closed"' in client.get(SIGNUP).content.decode()
    client.force_login(admin_user_obj)
    client.post(change, {"signup_open": "on"})
    assert signup_is_open()
    # One row: nobody adds or deletes it.
    assert client.get("/admin/tasks/sitesettings/add/").status_code == 403
    assert (
        client.get(f"/admin/tasks/sitesettings/{SiteSettings.SINGLETON_PK}/delete/").status_code
        == 403
    )


def test_staff_who_are_not_superusers_cannot_change_it(client, owner):
    client.force_login(owner)
    assert client.get("/admin/tasks/sitesettings/").status_code == 403


@override_settings(SIGNUP_OPEN_DEFAULT=False)
def test_the_setting_decides_until_the_row_exists():
    assert not signup_is_open()
    assert SiteSettings.objects.get().signup_open is False


@override_settings(SIGNUP_RATE_LIMIT=2)
def test_one_address_creates_a_few_accounts_an_hour(client):
    for index in range(2):
        client.post(SIGNUP, form(username=f"bulk{index}"))
        client.logout()
    response = client.post(SIGNUP, form(username="bulk2"))
    assert response.status_code == 429
    assert "Too many new accounts" in response.content.decode()
    assert not get_user_model().objects.filter(username="bulk2").exists()
    # Another address is not held back.
    assert client.post(SIGNUP, form(username="bulk3"), REMOTE_ADDR="10.9.8.7").status_code == 302


@override_settings(AXES_ENABLED=True, AXES_FAILURE_LIMIT=3)
def test_a_locked_out_login_is_not_lifted_by_signing_up(client):
    """The login throttling (django-axes) holds: a name locked out on the login page cannot
    be taken over by signing up with it from the same address."""
    for _ in range(3):
        client.post(
            "/accounts/login/", {"username": "newworker", "password": "x"}, REMOTE_ADDR="10.1.1.1"
        )
    response = client.post(SIGNUP, form(), REMOTE_ADDR="10.1.1.1")
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
