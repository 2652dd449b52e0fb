"""The Dynabench example configs used by the task-config tests (see dynabench/SOURCE.md)."""

from __future__ import annotations

from pathlib import Path

DYNABENCH_DIRECTORY = Path(__file__).parent / "dynabench"
# The six configs that must load unchanged (dataperf is rejected on purpose).
SUPPORTED_DYNABENCH_TASKS = ("nli", "qa", "sentiment", "hs", "vqa", "flores")
ALL_DYNABENCH_TASKS = SUPPORTED_DYNABENCH_TASKS + ("dataperf_image_labelling",)


def dynabench_text(task: str) -> str:
    """Return the YAML text of a Dynabench example config, byte for byte."""
    return (DYNABENCH_DIRECTORY / f"{task}_task_config.yaml").read_text(encoding="utf-8")
