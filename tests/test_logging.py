"""Logging: a refused request (403) is one line, without a traceback."""

from __future__ import annotations

import logging

import pytest

pytestmark = pytest.mark.django_db


def test_a_403_is_logged_on_one_line(client, owner, caplog):
    client.force_login(owner)  # staff, not a superuser: the site settings are not theirs
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get("/admin/tasks/sitesettings/add/")
    assert response.status_code == 403
    records = [record for record in caplog.records if record.name == "django.request"]
    assert len(records) == 1
    record = records[0]
    assert record.getMessage() == "Forbidden (Permission denied): /admin/tasks/sitesettings/add/"
    assert record.exc_info is None and record.exc_text is None
    formatted = logging.Formatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert "\n" not in formatted and "Traceback" not in formatted


def test_other_errors_keep_their_traceback():
    from core.log_filters import ForbiddenOnOneLine

    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = logging.LogRecord(
            "django.request",
            logging.ERROR,
            __file__,
            1,
            "Internal Server Error",
            (),
            sys.exc_info(),
        )
    record.status_code = 500
    assert ForbiddenOnOneLine().filter(record) is True
    assert record.exc_info is not None
