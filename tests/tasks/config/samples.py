"""The task configs the tests run on: the project's own fixtures and the Dynabench examples.

Our fixtures (``fixtures/*.yaml``) were written for these tests and are always here; together
they use every key, field type, metric and option that the Dynabench example configs use
(``test_fixture_coverage.py`` checks it wherever ../shared is present). The Dynabench configs
are read from ../shared (see ``tests.shared_files``), and their tests are skipped when it is
absent. A test that runs "the configs" is parametrised over both with ``supported_params``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tasks.config import TaskConfig, parse_task_config
from tests.shared_files import (
    dynabench_config_path,
    mlcommons_config_path,
    needs_dynabench,
    needs_mlcommons,
)

FIXTURE_DIR = Path(__file__).resolve().parent / "fixtures"
OWN = "own"
DYNABENCH = "dynabench"
# Dynabench's current ("v2") example configs, ../shared/task_configs/mlcommons.
MLCOMMONS = "mlcommons"

# Our fixtures that must load, and the one rejected on purpose (like DataPerf).
OWN_SUPPORTED = (
    "claim_check",
    "span_answer",
    "picture_question",
    "translation",
    "toxicity",
    "v2_claim_review",
    "v2_span_answer",
    "v2_picture_label",
)
OWN_REJECTED = ("training_file_track",)
# The six Dynabench configs that must load unchanged (dataperf is rejected on purpose).
SUPPORTED_DYNABENCH_TASKS = ("nli", "qa", "sentiment", "hs", "vqa", "flores")
REJECTED_DYNABENCH_TASKS = ("dataperf_image_labelling",)
ALL_DYNABENCH_TASKS = SUPPORTED_DYNABENCH_TASKS + REJECTED_DYNABENCH_TASKS
# The v2 twins of Dynabench's nli and qa configs: both must load unchanged.
MLCOMMONS_TASKS = ("nli", "qa")


@dataclass(frozen=True)
class ConfigSample:
    """One task-config file: ``source`` is ``own`` (our fixtures) or ``dynabench``."""

    source: str
    name: str

    @property
    def id(self) -> str:
        return f"{self.source}-{self.name}"

    def path(self) -> Path:
        """Return the file's path (a Dynabench sample skips the test when ../shared is absent)."""
        if self.source == DYNABENCH:
            return dynabench_config_path(self.name)
        if self.source == MLCOMMONS:
            return mlcommons_config_path(self.name)
        return FIXTURE_DIR / f"{self.name}.yaml"

    def text(self) -> str:
        """Return the YAML text, byte for byte."""
        return self.path().read_text(encoding="utf-8")

    def parse(self) -> TaskConfig:
        """Parse the text (raises TaskConfigError for a rejected sample)."""
        return parse_task_config(self.text())


def own(name: str) -> ConfigSample:
    assert name in OWN_SUPPORTED + OWN_REJECTED, name
    return ConfigSample(OWN, name)


def dynabench(name: str) -> ConfigSample:
    assert name in ALL_DYNABENCH_TASKS, name
    return ConfigSample(DYNABENCH, name)


def mlcommons(name: str) -> ConfigSample:
    assert name in MLCOMMONS_TASKS, name
    return ConfigSample(MLCOMMONS, name)


def param(sample: ConfigSample, *values: object) -> object:
    """Return ``pytest.param(sample, *values)`` with its id, skipped if it needs ../shared."""
    marks = {DYNABENCH: [needs_dynabench], MLCOMMONS: [needs_mlcommons]}.get(sample.source, [])
    return pytest.param(sample, *values, id=sample.id, marks=marks)


def samples(source: str, *, rejected: bool = False) -> list[ConfigSample]:
    """Return the supported (or the rejected) samples of one source."""
    if source == OWN:
        return [own(name) for name in (OWN_REJECTED if rejected else OWN_SUPPORTED)]
    if source == MLCOMMONS:
        return [] if rejected else [mlcommons(name) for name in MLCOMMONS_TASKS]
    names = REJECTED_DYNABENCH_TASKS if rejected else SUPPORTED_DYNABENCH_TASKS
    return [dynabench(name) for name in names]


def supported_params() -> list[object]:
    """Every config that must load: ours (always run), then Dynabench's (need ../shared)."""
    sources = (OWN, DYNABENCH, MLCOMMONS)
    return [param(sample) for source in sources for sample in samples(source)]


def source_params() -> list[object]:
    """The two sources as parameters, the Dynabench one skipped when ../shared is absent."""
    return [OWN, pytest.param(DYNABENCH, marks=[needs_dynabench], id=DYNABENCH)]
