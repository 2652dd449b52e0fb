"""Answer normalisation for the SQuAD and VQA metrics (pure string functions).

Both are written from the published descriptions of the official evaluation scripts:

* SQuAD v1.1 (the official ``evaluate-v1.1.py``): lower case, remove punctuation, remove
  the articles a/an/the, collapse whitespace; token F1 from the bag-of-tokens overlap, 0
  when no token is shared, so also when either answer normalises to no token at all (two
  such answers still match exactly).
* VQA (visualqa.org, "Evaluation"): lower case, remove periods except in decimals, drop the
  comma of digit groups, turn other punctuation (except the apostrophe and the colon) into
  spaces, number words to digits, drop articles, put the apostrophe back into contractions
  written without it ("dont" -> "don't").

``selection_text`` is the text of a ``context_string_selection`` value (the config's value
checks and the fooling rule both read it).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping
from typing import Any

_SQUAD_PUNCTUATION = frozenset(string.punctuation)
_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_squad_answer(text: str) -> str:
    """Return ``text`` normalised as the official SQuAD v1.1 script does."""
    text = text.lower()
    text = "".join(character for character in text if character not in _SQUAD_PUNCTUATION)
    text = _SQUAD_ARTICLES.sub(" ", text)
    return " ".join(text.split())


def squad_exact_match(prediction: str, gold: str) -> float:
    """Return 1.0 when both answers are equal after SQuAD normalisation, else 0.0."""
    return float(normalize_squad_answer(prediction) == normalize_squad_answer(gold))


def squad_token_f1(prediction: str, gold: str) -> float:
    """Return the SQuAD v1.1 token F1 (0..1) of ``prediction`` against one gold answer.

    As the official v1.1 script: 0.0 when the answers share no token, which includes an
    answer that normalises to no token at all ("the", "."), even against another such
    answer (SQuAD v2.0 scores two empty answers 1.0; v1.1 does not).
    """
    prediction_tokens = normalize_squad_answer(prediction).split()
    gold_tokens = normalize_squad_answer(gold).split()
    common = Counter(prediction_tokens) & Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(prediction_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


# -- VQA -----------------------------------------------------------------------------------

_VQA_NUMBER_WORDS = {
    # "none" counts as zero because counting questions are answered both ways.
    "none": "0",
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
}
_VQA_ARTICLES = frozenset({"a", "an", "the"})
# Contractions commonly typed without their apostrophe. Words that are also ordinary
# English words without one ("its", "ill", "were", "well", "shed", "lets") are left out.
_VQA_CONTRACTIONS = {
    "aint": "ain't",
    "arent": "aren't",
    "cant": "can't",
    "couldnt": "couldn't",
    "couldve": "could've",
    "didnt": "didn't",
    "doesnt": "doesn't",
    "dont": "don't",
    "hadnt": "hadn't",
    "hasnt": "hasn't",
    "havent": "haven't",
    "hes": "he's",
    "heres": "here's",
    "hows": "how's",
    "im": "i'm",
    "isnt": "isn't",
    "ive": "i've",
    "mightnt": "mightn't",
    "mightve": "might've",
    "mustnt": "mustn't",
    "mustve": "must've",
    "neednt": "needn't",
    "shant": "shan't",
    "shes": "she's",
    "shouldnt": "shouldn't",
    "shouldve": "should've",
    "thats": "that's",
    "theres": "there's",
    "theyd": "they'd",
    "theyll": "they'll",
    "theyre": "they're",
    "theyve": "they've",
    "wasnt": "wasn't",
    "werent": "weren't",
    "weve": "we've",
    "whats": "what's",
    "wheres": "where's",
    "whos": "who's",
    "whys": "why's",
    "wont": "won't",
    "wouldnt": "wouldn't",
    "wouldve": "would've",
    "yall": "y'all",
    "youd": "you'd",
    "youll": "you'll",
    "youre": "you're",
    "youve": "you've",
}
_VQA_DIGIT_GROUP_COMMA = re.compile(r"(?<=\d),(?=\d)")
_VQA_NON_DECIMAL_PERIOD = re.compile(r"(?<!\d)\.|\.(?!\d)")
_VQA_SPACED_PUNCTUATION = re.compile(
    "[" + re.escape("".join(set(string.punctuation) - {"'", ":", "."})) + "]"
)


def normalize_vqa_answer(text: str) -> str:
    """Return ``text`` normalised as the VQA evaluation describes (see module docstring)."""
    text = " ".join(text.lower().split())
    text = _VQA_DIGIT_GROUP_COMMA.sub("", text)
    text = _VQA_NON_DECIMAL_PERIOD.sub("", text)
    text = _VQA_SPACED_PUNCTUATION.sub(" ", text)
    words = []
    for word in text.split():
        word = _VQA_NUMBER_WORDS.get(word, word)
        if word in _VQA_ARTICLES:
            continue
        words.append(_VQA_CONTRACTIONS.get(word, word))
    return " ".join(words)


def selection_text(value: Any) -> str:
    """Return the selected text of a ``context_string_selection`` value (str or dict), or ""."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        text = value.get("text")
        if isinstance(text, str):
            return text
    return ""
