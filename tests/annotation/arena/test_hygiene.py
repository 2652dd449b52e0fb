"""Vote hygiene rules of the arena (no DB)."""

from __future__ import annotations

from annotation.arena.hygiene import (
    A_WINS,
    B_WINS,
    Vote,
    flag_outliers,
    identity_phrases,
    names_a_model,
    rater_agreement,
)

TIE = 2


def test_an_answer_that_names_its_model_is_found_on_whole_words_in_any_case():
    phrases = identity_phrases(["GPT-4", "Llama", "open assistant", "  "])
    assert names_a_model("As gpt 4, I think so.", phrases) == "gpt 4"
    assert names_a_model("I am LLAMA.", phrases) == "llama"
    assert names_a_model("Built by the Open  Assistant team", phrases) == "open assistant"
    assert names_a_model("llamas are animals; gpt-3 is older", phrases) is None
    assert names_a_model("anything", set()) is None


def test_a_long_hostile_answer_is_scanned_in_one_pass():
    phrases = identity_phrases(["a b c d e f g h"])
    answer = "a b c d e f g " * 200_000  # never completes the phrase
    assert names_a_model(answer, phrases) is None


def test_agreement_is_counted_against_the_other_raters_only():
    votes = [
        Vote("ann", 1, 2, A_WINS),
        Vote("bob", 2, 1, B_WINS),  # 1 beats 2 as well, from the other side
        Vote("cy", 1, 2, A_WINS),
        Vote("eve", 1, 2, B_WINS),
        Vote("eve", 1, 3, TIE),  # ties are not counted
        Vote("ann", 1, 3, A_WINS),  # nobody else judged 1 against 3 decisively
    ]
    agreement = rater_agreement(votes)
    assert agreement["ann"] == (1, 1)
    assert agreement["bob"] == (1, 1)
    assert agreement["cy"] == (1, 1)
    assert agreement["eve"] == (0, 1)
    # Without cy, ann's others (bob and eve) split on 1 against 2: her vote is not counted.
    assert rater_agreement([vote for vote in votes if vote.rater != "cy"])["ann"] == (0, 0)


def test_a_rater_far_below_the_crowd_is_flagged_and_others_are_not():
    votes = []
    for rater in ("r1", "r2", "r3", "r4", "r5"):
        votes += [Vote(rater, 1, 2, A_WINS)] * 18 + [Vote(rater, 1, 2, B_WINS)] * 2
    votes += [Vote("contrarian", 1, 2, B_WINS)] * 20
    flagged = flag_outliers(rater_agreement(votes))
    assert list(flagged) == ["contrarian"]
    assert flagged["contrarian"] == 0.0


def test_few_votes_or_few_raters_flag_nobody():
    votes = [Vote("a", 1, 2, A_WINS)] * 3 + [Vote("b", 1, 2, B_WINS)] * 3
    assert flag_outliers(rater_agreement(votes)) == {}
