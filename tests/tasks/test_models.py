"""The tasks app's models: the parsed config shared by every object of a version."""

from __future__ import annotations

import pytest

from tasks import models as task_models


@pytest.mark.django_db
def test_parsed_config_is_shared_between_objects_and_follows_the_text(task):
    version = task.current_config
    first = task_models.TaskConfigVersion.objects.get(pk=version.pk).parsed
    second = task_models.TaskConfigVersion.objects.get(pk=version.pk).parsed
    assert first is second  # parsed once for the process

    edited = task_models.TaskConfigVersion.objects.get(pk=version.pk)
    edited.yaml_text = version.yaml_text.replace("\n", "\n\n", 1)
    assert edited.parsed is not first  # another text is parsed again
    assert edited.parsed == first


def test_the_parsed_config_cache_is_bounded(monkeypatch):
    from tests.factories import demo_config

    monkeypatch.setattr(task_models, "PARSED_CACHE_SIZE", 2)
    monkeypatch.setattr(task_models, "_parsed_cache", {})
    text = demo_config("sentiment")
    for version_id in range(5):
        task_models.parsed_config_cached(version_id, text)
    assert len(task_models._parsed_cache) == 2
