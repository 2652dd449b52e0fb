"""The Dynabench example configs used by the config tests (../shared/task_configs/dynabench)."""

from __future__ import annotations

from pathlib import Path

# Read from the shared folder beside the repository: the project ships only data it wrote.
DYNABENCH_DIRECTORY = Path(__file__).resolve().parents[4] / "shared" / "task_configs" / "dynabench"
# The six configs that must load unchanged (dataperf is rejected on purpose).
SUPPORTED_DYNABENCH_TASKS = ("nli", "qa", "sentiment", "hs", "vqa", "flores")
ALL_DYNABENCH_TASKS = SUPPORTED_DYNABENCH_TASKS + ("dataperf_image_labelling",)


def dynabench_text(task: str) -> str:
    """Return the YAML text of a Dynabench example config, byte for byte."""
    return (DYNABENCH_DIRECTORY / f"{task}_task_config.yaml").read_text(encoding="utf-8")
