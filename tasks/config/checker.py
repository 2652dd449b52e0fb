"""Collect config problems and read typed values out of located YAML.

Contract: one ``DocumentChecker`` serves one document. Every section check (fields, field
relations, metrics, the document itself) takes it as its first argument, appends its problems
to ``checker.issues`` as ``ConfigIssue`` objects (code, path, message, line, column) and never
raises. The typed readers (``mapping``, ``string``, ``integer``...) return the value when it
has the expected type, and otherwise report ``WRONG_TYPE`` and return None; a value already
reported as unreadable by ``tasks.config.located_yaml`` is passed over in silence. The checker
also carries what the sections tell one another so that one mistake is reported once: the
names written in each section and whether ``output`` could be read. Pure: no Django, no DB,
no HTTP.
"""

from __future__ import annotations

import math
from typing import Any

from tasks.config import codes
from tasks.config.errors import ConfigIssue
from tasks.config.located_yaml import UNREADABLE, LocatedMapping, LocatedValue, describe_value


def join_path(path: str, key: str) -> str:
    """Return the path of ``key`` inside ``path`` (``input[0]`` + ``name``: ``input[0].name``)."""
    return f"{path}.{key}" if path else key


def is_finite_number(value: Any) -> bool:
    """Say whether ``value`` is an integer or a finite float (booleans are not numbers)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class DocumentChecker:
    """Report problems and read typed values while one document is checked."""

    def __init__(self, issues: list[ConfigIssue]):
        self.issues = issues
        # Every name written in each section, even in a field that failed its checks, so
        # that a reference to a broken field is not reported a second time as dangling.
        self.written_names: dict[str, set[str]] = {}
        # False when ``output`` is missing or not a list: references to outputs are then
        # left unchecked rather than all reported as consequences of that one error.
        self.output_readable = True
        # Problems that do not stop the config from loading (codes config.W0xx).
        self.warnings: list[ConfigIssue] = []

    def written(self, *sections: str) -> set[str]:
        """Return every name written in ``sections``, broken fields included."""
        return set().union(*(self.written_names.get(section, set()) for section in sections))

    # -- reporting -------------------------------------------------------------------------
    def error(self, code: str, path: str, message: str, line: int | None, column=None) -> None:
        """Record a problem at ``line`` (and ``column``)."""
        self.issues.append(ConfigIssue(code, path, message, line, column))

    def warn_at(self, code: str, path: str, message: str, node: LocatedValue) -> None:
        """Record a warning at the position of ``node``: the config still loads."""
        self.warnings.append(ConfigIssue(code, path, message, node.line, node.column))

    def error_at(self, code: str, path: str, message: str, node: LocatedValue) -> None:
        """Record a problem at the position of ``node``."""
        self.error(code, path, message, node.line, node.column)

    def wrong_type(self, path: str, expected: str, node: LocatedValue) -> None:
        """Report that ``node`` is not ``expected``, unless it was already reported unreadable."""
        if node.value is UNREADABLE:
            return  # already reported when it was read
        self.error_at(
            codes.WRONG_TYPE, path, f"expected {expected}, got {describe_value(node.value)}", node
        )

    # -- typed access ----------------------------------------------------------------------
    def mapping(self, node: LocatedValue, path: str) -> LocatedMapping | None:
        """Return the mapping held by ``node``, or report and return None."""
        if isinstance(node.value, LocatedMapping):
            return node.value
        self.wrong_type(path, "a mapping", node)
        return None

    def sequence(self, node: LocatedValue, path: str) -> list[LocatedValue] | None:
        """Return the list held by ``node``, or report and return None."""
        if isinstance(node.value, list):
            return node.value
        self.wrong_type(path, "a list", node)
        return None

    def string(self, node: LocatedValue, path: str) -> str | None:
        """Return the string held by ``node``, or report and return None."""
        if isinstance(node.value, str):
            return node.value
        self.wrong_type(path, "a string", node)
        return None

    def boolean(self, node: LocatedValue, path: str) -> bool | None:
        """Return the boolean held by ``node``, or report and return None."""
        if isinstance(node.value, bool):
            return node.value
        self.wrong_type(path, "true or false", node)
        return None

    def integer(self, node: LocatedValue, path: str) -> int | None:
        """Return the integer held by ``node`` (not a boolean), or report and return None."""
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        self.wrong_type(path, "an integer", node)
        return None

    def number(self, node: LocatedValue, path: str) -> float | None:
        """Return the finite number held by ``node`` as a float, or report and return None."""
        if is_finite_number(node.value):
            return float(node.value)
        self.wrong_type(path, "a finite number", node)
        return None

    @staticmethod
    def given(mapping: LocatedMapping, key: str) -> LocatedValue | None:
        """Return the node of ``key`` unless it is absent or null (null means "not given")."""
        node = mapping.items.get(key)
        if node is None or node.value is None:
            return None
        return node

    def required(
        self, mapping: LocatedMapping, key: str, path: str, owner: LocatedValue
    ) -> LocatedValue | None:
        """Return the node of ``key``, or report it missing (at ``owner``) and return None."""
        node = self.given(mapping, key)
        if node is None:
            self.error_at(codes.MISSING_KEY, join_path(path, key), f"{key!r} is required", owner)
        return node

    def check_keys(
        self, mapping: LocatedMapping, path: str, allowed: frozenset[str], what: str
    ) -> None:
        """Report every key of ``mapping`` outside ``allowed``, at the line of the key."""
        for key in mapping.items:
            if key not in allowed:
                self.error(
                    codes.UNKNOWN_KEY,
                    join_path(path, key),
                    f"unknown key {key!r} in {what}; allowed: {', '.join(sorted(allowed))}",
                    mapping.key_lines[key],
                )

    def optional_string(self, mapping: LocatedMapping, key: str, path: str) -> str:
        """Return the string of ``key``, or "" when it is not given or not a string."""
        node = self.given(mapping, key)
        if node is None:
            return ""
        return self.string(node, join_path(path, key)) or ""

    def optional_bool(self, mapping: LocatedMapping, key: str, path: str) -> bool | None:
        """Return the boolean of ``key``, or None when it is not given or not a boolean."""
        node = self.given(mapping, key)
        if node is None:
            return None
        return self.boolean(node, join_path(path, key))
