"""The depth check of JSON from outside: exact on valid JSON, safe on anything."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.bounded_json import (
    MAX_JSON_DEPTH,
    BoundedJSONDecoder,
    JSONTooDeep,
    json_check_depth,
    json_depth,
    json_loads_bounded,
)
from tests.adversarial_json import ADVERSARIAL_NAMES, ADVERSARIAL_TIMEOUT, adversarial_json


def nested(depth: int, leaf: str = "1") -> str:
    """Return arrays and objects nested ``depth`` levels, alternating, around ``leaf``."""
    text = leaf
    for level in range(depth):
        text = f'{{"k{level}": {text}}}' if level % 2 else f"[{text}]"
    return text


@pytest.mark.parametrize("depth", [0, 1, 2, 63, MAX_JSON_DEPTH])
def test_json_within_the_limit_is_read(depth):
    text = nested(depth)
    assert json_loads_bounded(text) == json.loads(text)
    assert json_loads_bounded(text.encode()) == json.loads(text)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 200, 100_000])
def test_json_beyond_the_limit_is_refused_before_parsing(depth):
    for data in (nested(depth), nested(depth).encode(), "[" * depth + "]" * depth):
        with pytest.raises(JSONTooDeep) as caught:
            json_loads_bounded(data)
        assert str(caught.value) == f"nested deeper than {MAX_JSON_DEPTH} levels"


def test_the_refusal_is_an_invalid_json_error():
    with pytest.raises(json.JSONDecodeError):
        json_check_depth("[" * 100)
    assert isinstance(JSONTooDeep(64), ValueError)
    copy = pickle.loads(pickle.dumps(JSONTooDeep(7)))
    assert copy.limit == 7 and str(copy) == "nested deeper than 7 levels"


def test_the_limit_is_a_parameter():
    json_check_depth("[[[1]]]", limit=3)
    with pytest.raises(JSONTooDeep):
        json_check_depth("[[[[1]]]]", limit=3)


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"text": "[" * 500 + "{" * 500}),
        json.dumps({"text": "]" * 500 + "[" * 500, "more": "}}}{{{"}),
        json.dumps(["\\" + "[" * 200, 'quote " and [[[' * 50]),  # escaped quotes, backslashes
        json.dumps({"a": "é" * 10, "b": "[" * 300}, ensure_ascii=True),
        json.dumps([[{"x": "[[["}] for _ in range(200)]),
    ],
)
def test_brackets_inside_strings_do_not_count(text):
    assert json_loads_bounded(text) == json.loads(text)


def test_closing_brackets_inside_strings_do_not_hide_depth():
    text = "[" * 40 + '"' + "]" * 40 + '"' + ", " + nested(40) + "]" * 40
    with pytest.raises(JSONTooDeep):
        json_check_depth(text)
    escaped = "[" * 40 + json.dumps('\\"' + "]" * 40) + ", " + nested(40) + "]" * 40
    with pytest.raises(JSONTooDeep):
        json_check_depth(escaped)


def test_utf16_bodies_are_read_as_characters():
    text = json.dumps({"t": "\u5b5b" * 100}, ensure_ascii=False)  # bytes 0x5b 0x5b are "[["
    for encoding in ("utf-16", "utf-16-le", "utf-32"):
        assert json_loads_bounded(text.encode(encoding)) == json.loads(text)
    with pytest.raises(JSONTooDeep):
        json_check_depth(nested(100).encode("utf-16"))


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000, "{" * 100_000, "]" * 10 + "[" * 100, "[" * 100 + '"unterminated'],
    ids=["open-brackets", "open-braces", "closes-then-opens", "opens-then-open-string"],
)
def test_unbalanced_text_that_could_nest_too_deep_is_refused(text):
    with pytest.raises(JSONTooDeep):
        json_check_depth(text)


@pytest.mark.parametrize(
    "text",
    ["[1, 2}", "[[[[", "]]]]]]]]" * 20, '{"a": [1}', '["unterminated' + "[" * 1000],
    ids=["mismatched", "unclosed", "closes", "mismatched-object", "brackets-in-open-string"],
)
def test_other_invalid_json_is_left_to_the_parser(text):
    json_check_depth(text)
    with pytest.raises(json.JSONDecodeError) as caught:
        json_loads_bounded(text)
    assert not isinstance(caught.value, JSONTooDeep)


def test_the_decoder_class_checks_first():
    assert json.loads(nested(10), cls=BoundedJSONDecoder) == json.loads(nested(10))
    with pytest.raises(JSONTooDeep):
        json.loads(nested(100_000), cls=BoundedJSONDecoder)


def test_loads_options_are_passed_on():
    assert json_loads_bounded('{"a": 1.5}', parse_float=str) == {"a": "1.5"}


# --- linear time: the check reads every byte once -----------------------------------------

MODEL_ANSWER_BYTES = 2_000_000  # MODELS_HUB_MAX_RESPONSE_BYTES, the largest answer read


def reference_depth(text: str) -> int:
    """The depth a parser reading from the left reaches before its first error (a closing
    bracket too many, a backslash outside a string), one character at a time."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
            if depth < 0:
                break
        elif char == "\\":
            break
    return deepest


def object_depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(object_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(object_depth, value), default=0)
    return 0


@pytest.mark.timeout(ADVERSARIAL_TIMEOUT)
@pytest.mark.parametrize("name", ADVERSARIAL_NAMES)
def test_the_check_is_linear_on_adversarial_text_of_a_model_answers_size(name):
    data = adversarial_json(name, MODEL_ANSWER_BYTES)
    too_deep = reference_depth(data.decode()) > MAX_JSON_DEPTH
    for text in (data, data.decode(), bytearray(data)):
        if too_deep:
            with pytest.raises(JSONTooDeep):
                json_check_depth(text)
        else:
            json_check_depth(text)
    assert json_depth(data) == reference_depth(data.decode())


@pytest.mark.timeout(ADVERSARIAL_TIMEOUT)
def test_the_check_is_linear_on_utf16_text():
    text = adversarial_json("escaped-quotes-in-unclosed-string", MODEL_ANSWER_BYTES // 2)
    with pytest.raises(JSONTooDeep):
        json_check_depth(text.decode().encode("utf-16"))


JSON_CHARACTERS = st.sampled_from(list('[]{}"\\ a,:1') + ["é", '\\"', '""', "\\\\"])
TRICKY_TEXT = st.text(alphabet=st.sampled_from(list('[]{}"\\ é\u5b5b')), max_size=8)
JSON_VALUES = st.recursive(
    st.none() | st.integers() | TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY_TEXT, inner, max_size=4),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(JSON_CHARACTERS, max_size=200).map("".join))
def test_the_depth_is_at_least_what_a_parser_reaches_before_its_first_error(text):
    assert json_depth(text) >= reference_depth(text)
    assert json_depth(text.encode()) >= reference_depth(text)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.booleans())
def test_the_depth_of_valid_json_is_exact(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert json_depth(text) == json_depth(text.encode()) == object_depth(value)
    assert json_depth(text.encode("utf-16")) == object_depth(value)
