"""Deterministic, seeded perturbations of dataset rows for the delta metrics.

Contract (pure: no DB, no HTTP; the same text, kind and seed always give the same result):

* ``robustness`` keeps the meaning and adds noise people make: contractions turned into
  expansions and back ("do not" <-> "don't"), common misspellings ("receive" ->
  "recieve"), character typos inside longer words (adjacent swap, drop or duplicate; the
  first and last letters stay, so words remain recognisable), case noise on a word's first
  letter and doubled spaces. Rates are low; a text with something to perturb always
  changes. Tokens with digits, URLs and other non-words are left alone.
* ``fairness`` swaps gendered words (he <-> she, man <-> woman, Mr <-> Ms...) and paired
  given names (James <-> Mary), keeping capitalisation. It returns None when the text has
  nothing to swap. "her" becomes "his" before a noun and "him" otherwise, "his" becomes
  "her" or "hers" alike; this is a heuristic from the next word. Fairness needs no
  randomness; the seed is accepted so both kinds share one signature.

Word lists are data files in ``leaderboards/wordlists/`` (tab-separated pairs, ``#``
comments), read once.
"""

from __future__ import annotations

import copy
import hashlib
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

Kind = Literal["robustness", "fairness"]
KINDS: tuple[str, ...] = ("robustness", "fairness")

WORDLIST_DIRECTORY = Path(__file__).resolve().parent / "wordlists"

CONTRACTION_RATE = 0.5
MISSPELLING_RATE = 0.25
TYPO_RATE = 0.05
CASE_RATE = 0.04
WHITESPACE_RATE = 0.04
MINIMUM_TYPO_WORD_LENGTH = 4

# A word: letters with an optional clitic ("don't", "James's"), but not a piece of a URL,
# an e-mail address, a hyphenated or dotted token, or a word glued to digits.
_WORD = re.compile(r"(?<![\w/@.:-])[A-Za-z]+(?:['’][A-Za-z]+)?(?![\w/@-]|[.:][\w/])")
_SINGLE_SPACE = re.compile(r"(?<=\S) (?=\S)")
# After "her"/"his", these words (or punctuation, or the end) mean a pronoun, not a
# determiner: "gave it to her yesterday", "the book is his."
_NOT_A_NOUN_AFTER_TEXT = """
    a an the my your his her its our their and or but nor so yet for to of in on at by with
    from up down out off over about into onto than as if when while because that this these
    those there here then now again too also very just still yesterday today tonight
    tomorrow back away home once twice is was are were be been am will would can could
    should may might must did does do has have had not never always
"""
_NOT_A_NOUN_AFTER = frozenset(_NOT_A_NOUN_AFTER_TEXT.split())


def _read_pairs(filename: str) -> tuple[tuple[str, str], ...]:
    pairs = []
    text = (WORDLIST_DIRECTORY / filename).read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not all(part.strip() for part in parts):
            raise ValueError(f"{filename}, line {number}: expected two tab-separated entries")
        pairs.append((parts[0].strip(), parts[1].strip()))
    return tuple(pairs)


def _two_way(pairs: Sequence[tuple[str, str]], *, lower: bool) -> dict[str, str]:
    """Map each side of ``pairs`` to the other; the first pair naming a word wins."""
    mapping: dict[str, str] = {}
    for left, right in pairs:
        if lower:
            left, right = left.lower(), right.lower()
        mapping.setdefault(left, right)
        mapping.setdefault(right, left)
    return mapping


@dataclass(frozen=True)
class WordLists:
    """The perturbation word lists, read from ``leaderboards/wordlists/``."""

    gendered_words: Mapping[str, str]
    given_names: Mapping[str, str]
    contractions: Mapping[str, str]
    misspellings: Mapping[str, str]


@cache
def word_lists() -> WordLists:
    """Return the word lists, reading the files on first use only."""
    return WordLists(
        gendered_words=_two_way(_read_pairs("gendered_words.tsv"), lower=True),
        given_names=_two_way(_read_pairs("given_names.tsv"), lower=True),
        contractions=_two_way(_read_pairs("contractions.tsv"), lower=True),
        misspellings={correct.lower(): wrong for correct, wrong in _read_pairs("misspellings.tsv")},
    )


@cache
def _contraction_pattern() -> re.Pattern[str]:
    forms = sorted(word_lists().contractions, key=len, reverse=True)
    alternatives = (
        r"\s+".join(re.escape(word) for word in form.split()).replace("'", "['’]") for form in forms
    )
    return re.compile(r"(?<![\w'’])(?:" + "|".join(alternatives) + r")(?![\w'’])", re.IGNORECASE)


def _match_case(original: str, replacement: str) -> str:
    """Return ``replacement`` written with the capitalisation of ``original``."""
    if len(original) > 1 and original.isupper():
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def _random(seed: int | str, *salt: str) -> random.Random:
    # hashlib, not hash(): the result must not depend on PYTHONHASHSEED or the process.
    digest = hashlib.sha256(repr((seed, *salt)).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


# -- robustness --------------------------------------------------------------------------------


def _typo(word: str, rng: random.Random) -> str:
    """Return ``word`` with one typo inside it (first and last letters kept)."""
    position = rng.randrange(1, len(word) - 2) if len(word) > 3 else 1
    operation = rng.choice(("swap", "drop", "duplicate"))
    if operation == "swap" and word[position] != word[position + 1]:
        return word[:position] + word[position + 1] + word[position] + word[position + 2 :]
    if operation == "drop":
        return word[:position] + word[position + 1 :]
    return word[: position + 1] + word[position] + word[position + 1 :]


def _toggle_first_letter(word: str) -> str:
    first = word[0]
    return (first.lower() if first.isupper() else first.upper()) + word[1:]


def _robust(text: str, seed: int | str) -> str:
    rng = _random(seed, "robustness")
    contractions = word_lists().contractions
    misspellings = word_lists().misspellings

    def contract_or_expand(match: re.Match[str]) -> str:
        found = match.group(0)
        if rng.random() >= CONTRACTION_RATE:
            return found
        key = " ".join(found.lower().replace("’", "'").split())
        return _match_case(found, contractions[key])

    def noisy_word(match: re.Match[str]) -> str:
        word = match.group(0)
        if word.lower() in misspellings and rng.random() < MISSPELLING_RATE:
            word = _match_case(word, misspellings[word.lower()])
        elif word.isalpha() and len(word) >= MINIMUM_TYPO_WORD_LENGTH and rng.random() < TYPO_RATE:
            word = _typo(word, rng)
        if rng.random() < CASE_RATE:
            word = _toggle_first_letter(word)
        return word

    result = _contraction_pattern().sub(contract_or_expand, text)
    result = _WORD.sub(noisy_word, result)
    result = _SINGLE_SPACE.sub(lambda _: "  " if rng.random() < WHITESPACE_RATE else " ", result)
    if result != text:
        return result
    # Nothing was drawn: make one small change so the copy is a perturbation at all.
    long_words = [m for m in _WORD.finditer(text) if m.group(0).isalpha() and len(m.group(0)) >= 4]
    if long_words:
        chosen = rng.choice(long_words)
        return text[: chosen.start()] + _typo(chosen.group(0), rng) + text[chosen.end() :]
    spaces = list(_SINGLE_SPACE.finditer(text))
    if spaces:
        chosen_space = rng.choice(spaces)
        return text[: chosen_space.start()] + "  " + text[chosen_space.end() :]
    words = list(_WORD.finditer(text))
    if words:
        chosen = rng.choice(words)
        toggled = _toggle_first_letter(chosen.group(0))
        return text[: chosen.start()] + toggled + text[chosen.end() :]
    return text


# -- fairness ----------------------------------------------------------------------------------


_NEXT_WORD = re.compile(r"\s*([A-Za-z]+)")


def _next_word(text: str, end: int) -> str | None:
    """Return the next word after ``end`` in lower case, or None at punctuation/end.

    Read in place from ``end`` (no copy of the rest of the text), so the cost is the blanks
    and the word that follow: linear over a whole text full of "her".
    """
    match = _NEXT_WORD.match(text, end)
    if match is None:
        return None
    return match.group(1).lower()


def _fair(text: str) -> str | None:
    lists = word_lists()
    changed = False

    def swap(match: re.Match[str]) -> str:
        nonlocal changed
        # Swap the stem and keep a clitic: "James's" -> "Mary's", "He'll" -> "She'll".
        word, apostrophe, suffix = match.group(0), "", ""
        clitic = re.search(r"['’]", word)
        if clitic is not None:
            word, apostrophe, suffix = word[: clitic.start()], clitic.group(0), word[clitic.end() :]
        lower = word.lower()
        replacement: str | None = None
        if word[0].isupper() and lower in lists.given_names:
            replacement = lists.given_names[lower]
        elif lower in lists.gendered_words:
            replacement = lists.gendered_words[lower]
            if lower in ("her", "his"):
                following = _next_word(text, match.end())
                determiner = following is not None and following not in _NOT_A_NOUN_AFTER
                if lower == "her":
                    replacement = "his" if determiner else "him"
                else:
                    replacement = "her" if determiner else "hers"
        if replacement is None:
            return match.group(0)
        changed = True
        return _match_case(word, replacement) + apostrophe + suffix

    result = _WORD.sub(swap, text)
    return result if changed else None


# -- public API --------------------------------------------------------------------------------


def perturb_text(text: str, kind: Kind, seed: int | str) -> str | None:
    """Return a perturbed copy of ``text``; None when fairness finds nothing to swap."""
    if kind == "robustness":
        return _robust(text, seed)
    if kind == "fairness":
        return _fair(text)
    raise ValueError(f"unknown perturbation kind {kind!r}; expected one of {', '.join(KINDS)}")


def perturb_row(
    row: Mapping[str, object], text_fields: Sequence[str], kind: Kind, seed: int | str
) -> dict[str, object] | None:
    """Return a perturbed copy of a dataset row, or None if fairness changes nothing.

    The copy has ``uid`` ``"<uid>-<kind>"`` and ``input_id`` the original ``uid``; only
    the string values of ``text_fields`` change (others are copied as they are). Each
    field gets its own seed derived from ``seed``, the row's uid and the field name.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown perturbation kind {kind!r}; expected one of {', '.join(KINDS)}")
    uid = row.get("uid")
    if uid is None or uid == "":
        raise ValueError("the row has no 'uid' to derive the perturbed row from")
    perturbed = copy.deepcopy(dict(row))
    changed = False
    for name in text_fields:
        value = row.get(name)
        if not isinstance(value, str):
            continue
        new_value = perturb_text(value, kind, seed=f"{seed}\x1f{uid}\x1f{name}")
        if new_value is not None and new_value != value:
            perturbed[name] = new_value
            changed = True
    if kind == "fairness" and not changed:
        return None
    perturbed["uid"] = f"{uid}-{kind}"
    perturbed["input_id"] = uid
    return perturbed
