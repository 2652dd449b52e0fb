"""Read task-config YAML into located values: every value keeps its 1-based line and column.

Contract: ``read_located_yaml(text, issues)`` returns the root ``LocatedValue`` of the document,
or None when the root itself cannot be used. Problems that stop reading altogether (text too
long, invalid YAML, too many values once aliases are expanded, nesting too deep, an empty
document) raise ``TaskConfigError`` with that one issue. Problems confined to one value (an
unsupported tag, a scalar PyYAML cannot build, a non-string or repeated key, a merge key) are
appended to ``issues`` and reading goes on; the value is left out, or kept as ``UNREADABLE``
so that later checks stay silent on it. Pure: no Django, no DB, no HTTP.

The document is read as a node tree (``yaml.compose`` with the safe loader) rather than loaded
straight into Python objects, so that every value keeps its line, duplicate keys are caught
(``yaml.safe_load`` silently keeps the last one), and alias expansion is bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import yaml

from tasks.config import codes
from tasks.config.errors import ConfigIssue, TaskConfigError

MAX_TEXT_LENGTH = 200_000
# Aliases let a tiny text describe a huge tree ("billion laughs"); the budget counts nodes
# as they are expanded, so such a document is refused before it costs anything.
MAX_NODES = 20_000
MAX_DEPTH = 40

SCALAR_TAGS = frozenset(
    "tag:yaml.org,2002:" + name for name in ("str", "int", "float", "bool", "null", "timestamp")
)
SEQUENCE_TAG = "tag:yaml.org,2002:seq"
MAPPING_TAG = "tag:yaml.org,2002:map"
STRING_TAG = "tag:yaml.org,2002:str"
MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass
class LocatedValue:
    """A YAML value with its 1-based position: a scalar, a list of values or a mapping."""

    value: Any
    line: int
    column: int


@dataclass
class LocatedMapping:
    """A YAML mapping with string keys, in source order, and the line of each key."""

    items: dict[str, LocatedValue]
    key_lines: dict[str, int]


class _Unreadable:
    """Marker for a value already reported as unreadable: later checks stay silent on it."""

    def __repr__(self) -> str:
        return "<unreadable>"


UNREADABLE = _Unreadable()


def read_located_yaml(text: str, issues: list[ConfigIssue]) -> LocatedValue | None:
    """Return the located root of ``text``, appending per-value problems to ``issues``.

    Raise ``TaskConfigError`` with a single issue when the text cannot be read at all.
    """
    if len(text) > MAX_TEXT_LENGTH:
        raise TaskConfigError(
            [
                ConfigIssue(
                    codes.TEXT_TOO_LARGE,
                    "",
                    f"the config is {len(text):,} characters; the limit is {MAX_TEXT_LENGTH:,}",
                )
            ]
        )
    try:
        root_node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        raise TaskConfigError([_yaml_error_issue(error, text)])
    except RecursionError:
        raise TaskConfigError([ConfigIssue(codes.TOO_COMPLEX, "", "the YAML is nested too deeply")])
    if root_node is None:
        raise TaskConfigError([ConfigIssue(codes.EMPTY_DOCUMENT, "", "the config is empty", 1)])
    try:
        return _Reader(issues).read(root_node, "")
    except (_TooComplex, RecursionError):
        raise TaskConfigError(
            [
                ConfigIssue(
                    codes.TOO_COMPLEX,
                    "",
                    f"the YAML is too large once aliases are expanded (limit {MAX_NODES:,} "
                    f"values) or nested deeper than {MAX_DEPTH} levels",
                )
            ]
        )


def describe_value(value: Any) -> str:
    """Name the YAML type of ``value`` for messages."""
    if isinstance(value, LocatedMapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return f"a {type(value).__name__}"


def plain_value(value: Any) -> Any:
    """Turn a located value into an immutable plain value (tuples, read-only mappings)."""
    if isinstance(value, LocatedMapping):
        return MappingProxyType({key: plain_value(node.value) for key, node in value.items.items()})
    if isinstance(value, list):
        return tuple(plain_value(node.value) for node in value)
    return value


class _TooComplex(Exception):
    """The document exceeds the node budget or the depth limit."""


class _Reader:
    """Turn a composed YAML node tree into located values, recording reading problems."""

    def __init__(self, issues: list[ConfigIssue]):
        self.issues = issues
        self.budget = MAX_NODES
        self.constructor = yaml.constructor.SafeConstructor()

    def issue(self, code: str, path: str, message: str, node: yaml.Node) -> None:
        """Record a problem at the position of ``node``."""
        mark = node.start_mark
        self.issues.append(ConfigIssue(code, path, message, mark.line + 1, mark.column + 1))

    def read(self, node: yaml.Node, path: str, depth: int = 0) -> LocatedValue | None:
        """Return the located value of ``node``, or None when it cannot be used."""
        self.budget -= 1
        if self.budget < 0 or depth > MAX_DEPTH:
            raise _TooComplex
        line, column = node.start_mark.line + 1, node.start_mark.column + 1
        if isinstance(node, yaml.ScalarNode):
            if node.tag not in SCALAR_TAGS:
                self.issue(
                    codes.UNSUPPORTED_YAML_FEATURE,
                    path,
                    f"the YAML tag {node.tag!r} is not supported; write a plain value",
                    node,
                )
                return None
            try:
                value = self.constructor.construct_object(node)
            except Exception as error:  # any scalar PyYAML cannot build is a config problem
                self.issue(codes.UNREADABLE_VALUE, path, f"cannot read this value: {error}", node)
                return None
            return LocatedValue(value, line, column)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != SEQUENCE_TAG:
                self.issue(
                    codes.UNSUPPORTED_YAML_FEATURE,
                    path,
                    f"the YAML tag {node.tag!r} is not supported; write a plain list",
                    node,
                )
                return None
            items = []
            for index, child in enumerate(node.value):
                item = self.read(child, f"{path}[{index}]", depth + 1)
                # An unreadable item is already reported; a None placeholder keeps indexes.
                items.append(item if item is not None else LocatedValue(None, line, column))
            return LocatedValue(items, line, column)
        if isinstance(node, yaml.MappingNode):
            if node.tag != MAPPING_TAG:
                self.issue(
                    codes.UNSUPPORTED_YAML_FEATURE,
                    path,
                    f"the YAML tag {node.tag!r} is not supported; write a plain mapping",
                    node,
                )
                return None
            return LocatedValue(self.read_mapping(node, path, depth), line, column)
        return None

    def read_mapping(self, node: yaml.MappingNode, path: str, depth: int) -> LocatedMapping:
        """Return the located mapping of ``node``, leaving out unusable and repeated keys."""
        mapping = LocatedMapping({}, {})
        for key_node, value_node in node.value:
            self.budget -= 1
            if self.budget < 0:
                raise _TooComplex
            if key_node.tag == MERGE_TAG:
                self.issue(
                    codes.UNSUPPORTED_YAML_FEATURE,
                    path,
                    "merge keys (<<) are not supported; write the keys out",
                    key_node,
                )
                continue
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != STRING_TAG:
                shown = key_node.value if isinstance(key_node, yaml.ScalarNode) else "..."
                self.issue(
                    codes.NON_STRING_KEY,
                    path,
                    f"the key {str(shown)[:40]!r} is not a string; quote it",
                    key_node,
                )
                continue
            key = key_node.value
            child_path = f"{path}.{key}" if path else key
            if key in mapping.items:
                self.issue(
                    codes.DUPLICATE_KEY,
                    child_path,
                    f"the key {key!r} is repeated (first on line {mapping.key_lines[key]})",
                    key_node,
                )
                continue
            value = self.read(value_node, child_path, depth + 1)
            mapping.items[key] = (
                value
                if value is not None
                else LocatedValue(
                    UNREADABLE, value_node.start_mark.line + 1, value_node.start_mark.column + 1
                )
            )
            mapping.key_lines[key] = key_node.start_mark.line + 1
        return mapping


def _yaml_error_issue(error: yaml.YAMLError, text: str) -> ConfigIssue:
    """Describe a YAML syntax error with its 1-based line and column."""
    if isinstance(error, yaml.MarkedYAMLError):
        mark = error.problem_mark or error.context_mark
        parts = [part for part in (error.context, error.problem) if part]
        message = "invalid YAML: " + ("; ".join(parts) or "syntax error")
        if mark is not None:
            return ConfigIssue(codes.YAML_SYNTAX, "", message, mark.line + 1, mark.column + 1)
        return ConfigIssue(codes.YAML_SYNTAX, "", message)
    if isinstance(error, yaml.reader.ReaderError):
        # The reader reports a character offset, not a mark: count the lines up to it.
        before = text[: error.position]
        line = before.count("\n") + 1
        column = error.position - (before.rfind("\n") + 1) + 1
        return ConfigIssue(
            codes.YAML_SYNTAX,
            "",
            f"invalid YAML: the character {error.character!r} is not allowed",
            line,
            column,
        )
    return ConfigIssue(codes.YAML_SYNTAX, "", f"invalid YAML: {error}")
