"""Static URLs are computed once per name outside DEBUG (``dynatask_site.staticfiles``)."""

from __future__ import annotations

from django.templatetags.static import static
from django.test import override_settings

from dynatask_site import staticfiles


def _storage():
    return staticfiles.StaticFilesStorage(location="/nonexistent", base_url="/static/")


def test_a_url_is_computed_once_per_name(monkeypatch):
    storage = _storage()
    calls = []
    original = staticfiles.django_storage.StaticFilesStorage.url

    def counting(self, name):
        calls.append(name)
        return original(self, name)

    monkeypatch.setattr(staticfiles.django_storage.StaticFilesStorage, "url", counting)
    with override_settings(DEBUG=False):
        first = storage.url("css/site.css")
        again = storage.url("css/site.css")
        other = storage.url("a b/é.js")
    assert first == again == "/static/css/site.css"
    assert other == "/static/a%20b/%C3%A9.js"
    assert calls == ["css/site.css", "a b/é.js"]
    with override_settings(DEBUG=True):  # files come and go while developing
        storage.url("css/site.css")
        storage.url("css/site.css")
    assert calls[2:] == ["css/site.css", "css/site.css"]


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(staticfiles, "MEMO_SIZE", 3)
    storage = _storage()
    with override_settings(DEBUG=False):
        urls = [storage.url(f"file-{index}.js") for index in range(10)]
    assert urls == [f"/static/file-{index}.js" for index in range(10)]
    assert len(storage._url_memo) == 3


def test_the_static_tag_goes_through_the_project_storage():
    assert static("css/site.css").endswith("css/site.css")
    from django.contrib.staticfiles.storage import staticfiles_storage

    assert isinstance(staticfiles_storage._wrapped, staticfiles.MemoizedURLMixin)


def test_the_production_storage_memoizes_the_hashed_names(tmp_path):
    (tmp_path / "staticfiles.json").write_text(
        '{"paths": {"css/site.css": "css/site.0123abcd.css"}, "version": "1.1", "hash": "x"}'
    )
    storage = staticfiles.CompressedManifestStaticFilesStorage(
        location=str(tmp_path), base_url="/static/"
    )
    with override_settings(DEBUG=False):
        assert storage.url("css/site.css") == "/static/css/site.0123abcd.css"
        storage.hashed_files.clear()  # the answer is kept: the manifest is not asked again
        assert storage.url("css/site.css") == "/static/css/site.0123abcd.css"
