"""Errors of the task-config schema: every problem with a stable code, a path and a line."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfigIssue:
    """One problem found in a task config (or in a value checked against it).

    ``code`` is stable (``config.E012``) and is what tests and callers match on;
    ``path`` locates the problem (``input[1].labels``); ``line`` is 1-based in the YAML
    source, or None; ``column`` likewise when known; ``message`` is for people.
    """

    code: str
    path: str
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        at = f"{self.path}: " if self.path else ""
        return f"{where}{at}{self.message} [{self.code}]"


class TaskConfigError(ValueError):
    """Raised by ``parse_task_config`` with **every** problem found in ``issues``."""

    def __init__(self, issues: list[ConfigIssue] | tuple[ConfigIssue, ...]):
        self.issues: tuple[ConfigIssue, ...] = tuple(issues)
        summary = "; ".join(str(issue) for issue in self.issues[:5])
        more = f" (+{len(self.issues) - 5} more)" if len(self.issues) > 5 else ""
        super().__init__(f"invalid task config: {summary}{more}")

    @property
    def codes(self) -> list[str]:
        return [issue.code for issue in self.issues]
