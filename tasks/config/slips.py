"""Warn about upstream slips: configs that load, but say something their author did not mean.

Contract: ``check_label_slips(checker, targets, validate)`` warns (``config.W001``) about a
``metadata.validate`` multiclass field whose labels share some but not all of a multiclass
target's labels and add others, as Dynabench's sentiment configs do (``negative, positive,
entailed``: ``neutral`` is missing and ``entailed`` belongs to NLI). A validate field with
every target label plus more (an extra "unclear") is deliberate and not reported. Warnings
never stop a config from loading. Pure: no Django, no DB, no HTTP.
"""

from __future__ import annotations

from tasks.config import codes
from tasks.config.checker import DocumentChecker, join_path
from tasks.config.fields import RawField
from tasks.config.types import FieldType


def check_label_slips(
    checker: DocumentChecker, targets: list[RawField], validate: list[RawField]
) -> None:
    """Warn about validate label lists that look copied from another task."""
    target_specs = [raw.spec for raw in targets if raw.spec.type == FieldType.MULTICLASS]
    for raw in validate:
        if raw.spec.type != FieldType.MULTICLASS:
            continue
        labels = set(raw.spec.labels)
        for target in target_specs:
            expected = set(target.labels)
            missing = [label for label in target.labels if label not in labels]
            extra = [label for label in raw.spec.labels if label not in expected]
            if labels & expected and missing and extra:
                checker.warn_at(
                    codes.LABELS_SLIP,
                    join_path(raw.path, "labels"),
                    f"these labels lack {', '.join(missing)} of the target {target.name!r} and "
                    f"add {', '.join(extra)}: probably copied from another task (loaded as "
                    "written)",
                    raw.node,
                )
                break
