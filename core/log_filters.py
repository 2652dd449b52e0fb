"""Logging filters of the site (named in ``settings.LOGGING``)."""

from __future__ import annotations

import logging


class ForbiddenOnOneLine(logging.Filter):
    """Log a refused request (403) on one line.

    Django's request logger attaches the ``PermissionDenied`` exception to its warning, so a
    refusal (an expected event: a visitor without the right) printed a whole traceback. The
    line it keeps says what and where: ``Forbidden (Permission denied): /admin/...``.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True
