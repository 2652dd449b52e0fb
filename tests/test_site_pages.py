"""What every page carries (templates/base.html, the root URLs) and the README's first line:
the favicon, and the navbar's sign-up link while self-sign-up is open."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.templatetags.static import static

from tasks.accounts import site_settings_get

REPOSITORY = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.django_db


def test_every_page_names_our_svg_favicon(client):
    html = client.get("/").content.decode()
    assert f'<link rel="icon" type="image/svg+xml" href="{static("favicon.svg")}">' in html
    icon = (REPOSITORY / "static" / "favicon.svg").read_text()
    assert icon.lstrip().startswith("<svg") and "Dynatask" in icon
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == static("favicon.svg")


@pytest.mark.django_db(transaction=True)  # the settings row's cache is forgotten on commit
def test_the_navbar_offers_sign_up_while_it_is_open(client, user):
    assert 'id="nav-signup"' in client.get("/").content.decode()
    row = site_settings_get()
    row.signup_open = False
    row.save()
    assert 'id="nav-signup"' not in client.get("/").content.decode()
    row.signup_open = True
    row.save()
    client.force_login(user)
    assert 'id="nav-signup"' not in client.get("/").content.decode()  # signed in: no need


def test_the_readme_opens_with_what_dynatask_is_then_the_two_commands():
    lines = [line for line in (REPOSITORY / "README.md").read_text().splitlines() if line]
    assert lines[0] == "# Dynatask"
    assert lines[1].startswith("Dynatask is ") and len(lines[1]) < 200
    assert lines[2] == "```sh"
    assert lines[3].startswith("sh scripts/dev.sh run")
    assert lines[4].startswith("sh scripts/dev.sh test")
