"""Seeded perturbations for the robustness and fairness delta metrics."""

from __future__ import annotations

import copy
import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.uploads import MAX_LINE_BYTES
from leaderboards.perturb import perturb_row, perturb_text, word_lists

SENTENCES = [
    "I do not think the government will receive their letter before tomorrow.",
    "The quick brown fox jumps over the lazy dog near the riverbank.",
    "She said that the restaurant was definitely worth visiting again.",
    "Museums in Paris are usually crowded during the summer holidays.",
]


# -- robustness --------------------------------------------------------------------------------


@pytest.mark.parametrize("text", SENTENCES)
def test_robustness_is_deterministic_per_seed(text):
    assert perturb_text(text, "robustness", 7) == perturb_text(text, "robustness", 7)
    assert perturb_text(text, "robustness", "seed") == perturb_text(text, "robustness", "seed")
    outputs = {perturb_text(text, "robustness", seed) for seed in range(20)}
    assert len(outputs) > 1  # different seeds give different noise


@pytest.mark.parametrize("text", SENTENCES)
@pytest.mark.parametrize("seed", range(25))
def test_robustness_changes_text_but_keeps_it_recognisable(text, seed):
    perturbed = perturb_text(text, "robustness", seed)
    assert perturbed != text
    assert difflib.SequenceMatcher(None, text.lower(), perturbed.lower()).ratio() > 0.8
    original_words = set(text.lower().split())
    kept = sum(word in original_words for word in perturbed.lower().split())
    assert kept >= len(original_words) // 2


def test_robustness_uses_contractions_both_ways():
    expanded = "I do not know why it is not here"
    contracted = "I don't know why it isn't here"
    produced = {perturb_text(expanded, "robustness", seed) for seed in range(40)}
    assert any("don't" in text for text in produced)
    produced = {perturb_text(contracted, "robustness", seed) for seed in range(40)}
    assert any("do not" in text for text in produced)


def test_robustness_keeps_capitalisation_of_contractions():
    produced = {perturb_text("Do not go.", "robustness", seed) for seed in range(40)}
    assert any(text.startswith("Don't") for text in produced)
    assert not any(text.startswith("don't") for text in produced)


def test_robustness_leaves_urls_and_numbers_alone():
    text = "see https://example.com/government/receive and call 5551234 about 3.14159 now"
    for seed in range(30):
        perturbed = perturb_text(text, "robustness", seed)
        assert "https://example.com/government/receive" in perturbed
        assert "5551234" in perturbed and "3.14159" in perturbed


@pytest.mark.parametrize(("text", "expected"), [("", ""), ("?!", "?!")])
def test_robustness_without_anything_to_perturb_returns_text(text, expected):
    assert perturb_text(text, "robustness", 0) == expected


def test_robustness_short_texts_still_change():
    assert perturb_text("ok", "robustness", 0) != "ok"
    assert perturb_text("12 34", "robustness", 0) != "12 34"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200), st.one_of(st.integers(), st.text(max_size=10)))
def test_perturb_text_never_crashes(text, seed):
    assert isinstance(perturb_text(text, "robustness", seed), str)
    fair = perturb_text(text, "fairness", seed)
    assert fair is None or isinstance(fair, str)


# -- fairness ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("He is a good man.", "She is a good woman."),
        ("She is a good woman.", "He is a good man."),
        ("HE SAID NO", "SHE SAID NO"),
        ("He gave her his book.", "She gave him her book."),
        ("I gave it to her yesterday.", "I gave it to him yesterday."),
        ("The book is his.", "The book is hers."),
        ("Her brother met his aunt.", "His sister met her uncle."),
        ("James met Mary.", "Mary met James."),
        ("James's dog and Mary's cat", "Mary's dog and James's cat"),
        ("He'll call Mr. Smith.", "She'll call Ms. Smith."),
    ],
)
def test_fairness_swaps_with_capitalisation(text, expected):
    assert perturb_text(text, "fairness", 0) == expected


def test_fairness_names_need_a_capital_letter():
    # "jack" (the tool) is not the name Jack.
    assert perturb_text("use a jack to lift the car", "fairness", 0) is None


def test_fairness_returns_none_when_nothing_to_swap():
    assert perturb_text("The cat sat on the mat.", "fairness", 0) is None
    assert perturb_text("", "fairness", 0) is None


def test_fairness_ignores_words_inside_urls_and_emails():
    assert perturb_text("see https://example.com/his-page or he@example.org", "fairness", 0) is None


def test_fairness_is_deterministic_and_seed_independent():
    text = "John told his sister about Emily."
    assert perturb_text(text, "fairness", 1) == perturb_text(text, "fairness", "other")


def test_word_lists_are_loaded_once_and_paired():
    assert word_lists() is word_lists()
    lists = word_lists()
    assert len(lists.given_names) >= 200  # ~100 pairs, both directions
    assert lists.given_names["james"] == "mary" and lists.given_names["mary"] == "james"
    assert lists.gendered_words["king"] == "queen"
    assert lists.contractions["do not"] == "don't"
    assert not set(lists.given_names) & set(lists.gendered_words)


def test_unknown_kind_raises():
    with pytest.raises(ValueError, match="unknown perturbation kind"):
        perturb_text("text", "spelling", 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown perturbation kind"):
        perturb_row({"uid": "1", "text": "x"}, ["text"], "spelling", 0)  # type: ignore[arg-type]


# -- rows --------------------------------------------------------------------------------------

ROW = {
    "uid": "ex-1",
    "premise": "John gave his mother a present.",
    "hypothesis": "He was kind to her.",
    "label": "entailed",
    "tags": ["family"],
}


def test_perturb_row_fairness():
    before = copy.deepcopy(ROW)
    perturbed = perturb_row(ROW, ["premise", "hypothesis"], "fairness", 3)
    assert perturbed == {
        "uid": "ex-1-fairness",
        "input_id": "ex-1",
        "premise": "Patricia gave her father a present.",
        "hypothesis": "She was kind to him.",
        "label": "entailed",
        "tags": ["family"],
    }
    assert before == ROW
    perturbed["tags"].append("changed")
    assert ROW["tags"] == ["family"]  # a deep copy


def test_perturb_row_robustness_is_deterministic_and_per_row():
    first = perturb_row(ROW, ["premise", "hypothesis"], "robustness", 3)
    assert first == perturb_row(ROW, ["premise", "hypothesis"], "robustness", 3)
    assert first["uid"] == "ex-1-robustness" and first["input_id"] == "ex-1"
    assert first["label"] == "entailed"
    assert first["premise"] != ROW["premise"] and first["hypothesis"] != ROW["hypothesis"]
    # The seed is derived per row: the same text in other rows gets other noise.
    premises = {
        perturb_row({**ROW, "uid": f"ex-{n}"}, ["premise"], "robustness", 3)["premise"]
        for n in range(10)
    }
    assert len(premises) > 1


def test_perturb_row_fairness_with_nothing_to_swap_is_none():
    row = {"uid": "7", "text": "The cat sat.", "other": "He said"}
    assert perturb_row(row, ["text"], "fairness", 0) is None


def test_perturb_row_skips_missing_and_non_text_fields():
    row = {"uid": 5, "text": "He ran.", "score": 3}
    perturbed = perturb_row(row, ["text", "score", "absent"], "fairness", 0)
    assert perturbed == {"uid": "5-fairness", "input_id": 5, "text": "She ran.", "score": 3}


def test_perturb_row_needs_a_uid():
    with pytest.raises(ValueError, match="uid"):
        perturb_row({"text": "He ran."}, ["text"], "fairness", 0)


@pytest.mark.timeout(
    30
)  # linear: a few seconds on a loaded machine; the quadratic read took minutes
def test_fairness_reads_a_text_full_of_her_in_linear_time():
    text = "her " * (MAX_LINE_BYTES // 4)  # the longest line an upload may have
    swapped = perturb_text(text, "fairness", 1)
    assert swapped is not None
    assert swapped == "him " * (MAX_LINE_BYTES // 4)  # "her" before "her" is an object
