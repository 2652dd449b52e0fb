"""Static files storages whose ``url()`` is computed once per file name.

Each ``{% static %}`` tag asks the storage for the file's URL: a quoted, joined path and, with
the manifest storage, a lookup of the hashed name. The hot pages carry four of them, for the
same few names on every request. Outside DEBUG the files and the manifest do not change while
a process runs (a deploy restarts it), so the answer is kept, for at most ``MEMO_SIZE`` names
(a template could pass a name built from data). In DEBUG nothing is kept: files come and go.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.staticfiles import storage as django_storage
from whitenoise import storage as whitenoise_storage

MEMO_SIZE = 1024


class MemoizedURLMixin:
    """Keep ``url(name)`` per name (not for ``force=True``, nor in DEBUG)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._url_memo: dict[str, str] = {}

    def url(self, name, force=False):
        if force:
            return super().url(name, force)
        if settings.DEBUG:
            return super().url(name)
        url = self._url_memo.get(name)
        if url is None:
            url = super().url(name)
            if len(self._url_memo) < MEMO_SIZE:
                self._url_memo[name] = url  # one dict store: atomic between threads
        return url


class StaticFilesStorage(MemoizedURLMixin, django_storage.StaticFilesStorage):
    pass


class CompressedManifestStaticFilesStorage(
    MemoizedURLMixin, whitenoise_storage.CompressedManifestStaticFilesStorage
):
    pass
