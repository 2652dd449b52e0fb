"""Demo hate-speech model: ``alt-profanity-check`` plus a small rule layer, offline.

Input ``statement``; outputs ``label`` (not-hateful/hateful) and ``prob``. The profanity
classifier alone only finds swearing; the rules add what hate speech adds to it: a protected
group named together with a hostile word, and a few counter-speech cues that lower the score.
"""

from __future__ import annotations

import re
from typing import Any

from profanity_check import predict_prob

from models_hub.demo.common import normalise, words

LABELS = ("not-hateful", "hateful")
GROUP_WORDS = frozenset(
    [
        "women",
        "woman",
        "girls",
        "girl",
        "females",
        "female",
        "trans",
        "transgender",
        "gay",
        "gays",
        "lesbian",
        "lesbians",
        "homosexual",
        "homosexuals",
        "queer",
        "black",
        "blacks",
        "immigrant",
        "immigrants",
        "refugee",
        "refugees",
        "migrants",
        "migrant",
        "foreigners",
        "muslim",
        "muslims",
        "islam",
        "jews",
        "jew",
        "jewish",
        "disabled",
        "retarded",
        "retards",
        "cripple",
        "cripples",
        "handicapped",
        "people",
    ]
)
HOSTILE_WORDS = frozenset(
    [
        "hate",
        "hated",
        "hating",
        "despise",
        "disgust",
        "disgusting",
        "disgusted",
        "vile",
        "scum",
        "vermin",
        "rats",
        "rat",
        "cockroaches",
        "parasites",
        "parasite",
        "animals",
        "animal",
        "trash",
        "garbage",
        "filth",
        "filthy",
        "pathetic",
        "worthless",
        "inferior",
        "stupid",
        "dumb",
        "idiots",
        "idiot",
        "subhuman",
        "dangerous",
        "criminals",
        "kill",
        "killed",
        "killing",
        "murder",
        "shoot",
        "hang",
        "die",
        "dead",
        "death",
        "exterminate",
        "eradicate",
        "destroy",
        "deport",
        "burn",
        "beat",
        "hurt",
        "slaughter",
        "harm",
        "evil",
        "dirty",
        "ugly",
        "lazy",
        "liars",
        "disease",
        "plague",
        "cancer",
        "burden",
        "sick",
        "freaks",
        "freak",
        "abomination",
    ]
)
COUNTER_CUES = (
    r"\bif you (say|call|think)\b",
    r"\bsaying\b",
    r"\bstatements? like\b",
    r"\bi (don'?t|do not|never) (hate|think|want)\b",
    r"\bno (one|\w+) (should|deserves?)\b",
    r"\bshouldn'?t\b",
    r"\".*\"",
    r"\bis wrong\b",
    r"\bnot ok\b",
)


EXTRA_GROUP_WORDS = frozenset(("person", "persons", "you", "your", "those", "these", "them"))
EXTRA_HOSTILE_WORDS = frozenset(
    (
        "nothing",
        "worthless",
        "furious",
        "throats",
        "throat",
        "cut",
        "trust",
        "nature",
        "uncivilised",
        "uncivilized",
        "deserve",
        "burned",
        "monkey",
        "monkeys",
        "apes",
        "ape",
        "infest",
        "infesting",
        "swarm",
        "shut",
        "rid",
        "removed",
        "eliminated",
        "gassed",
        "lynched",
        "lesser",
        "primitive",
        "savages",
        "savage",
        "hatred",
        "loathe",
        "annoying",
        "useless",
        "waste",
        "problem",
        "threat",
        "pests",
        "pest",
        "disgrace",
        "shame",
        "dangerous",
        "violent",
        "terrorists",
        "rapists",
        "thugs",
        "whores",
        "sluts",
    )
)
POSITIVE_WORDS = frozenset(
    ("love", "great", "respect", "admire", "wonderful", "welcome", "proud", "support", "brilliant")
)
NEGATED_POSITIVE = re.compile(
    r"\b(not|no|never|n't)\b[^.]{0,30}\b(matter|human|welcome|belong|worth|place|space|"
    r"respect|deserve|equal|trust)",
)
LEET = str.maketrans(
    {"4": "a", "@": "a", "3": "e", "0": "o", "1": "i", "!": "i", "$": "s", "5": "s", "7": "t"}
)
SPACED_LETTERS = re.compile(r"\b(?:\w ){2,}\w\b")


def normalise_text(statement: str) -> str:
    """Undo the obfuscations of hateful words: leetspeak and spaced-out letters."""
    lowered = statement.lower().translate(LEET)
    return SPACED_LETTERS.sub(lambda match: match.group(0).replace(" ", ""), lowered)


def names_specific_group(tokens: set[str]) -> bool:
    """Return True when a protected group itself is named (not just "people" or "you")."""
    return any(near(token, GROUP_WORDS - {"people"}) for token in tokens)


def near(word: str, vocabulary: frozenset[str]) -> bool:
    """Return True when ``word`` is in ``vocabulary`` up to one deleted or swapped letter."""
    if word in vocabulary:
        return True
    if len(word) < 4:
        return False
    for candidate in vocabulary:
        if abs(len(candidate) - len(word)) > 1 or len(candidate) < 4:
            continue
        if len(candidate) == len(word) + 1 and any(
            candidate[:i] + candidate[i + 1 :] == word for i in range(len(candidate))
        ):
            return True
        if len(candidate) == len(word) and sorted(candidate) == sorted(word):
            differences = [i for i in range(len(word)) if word[i] != candidate[i]]
            if len(differences) == 2 and differences[1] == differences[0] + 1:
                return True
    return False


class HateSpeechHandler:
    """Profanity probability raised by group+hostility cues and lowered by counter-speech."""

    model_version = "demo-alt-profanity-check-1.7.2"
    batch_size = 512

    def __init__(
        self,
        threshold: float = 0.5,
        group_hostility_score: float = 0.8,
        group_default_score: float = 0.6,
    ):
        self.threshold = threshold
        self.group_hostility_score = group_hostility_score
        self.group_default_score = group_default_score

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Return ``label`` and ``prob`` for every ``statement``."""
        statements = [str(item.get("statement", "")) for item in batch]
        if not statements:
            return []
        profanity = predict_prob(statements)
        return [
            self.output(statement, float(score))
            for statement, score in zip(statements, profanity, strict=True)
        ]

    def hateful_probability(self, statement: str, profanity: float) -> float:
        """Combine the profanity score with the rule cues into P(hateful)."""
        normalised = normalise_text(statement)
        tokens = set(words(normalised)) | {word.rstrip("s") for word in words(normalised)}
        groups = GROUP_WORDS | EXTRA_GROUP_WORDS
        hostile = HOSTILE_WORDS | EXTRA_HOSTILE_WORDS
        names_group = any(near(token, groups) for token in tokens)
        # Words run together ("stabthose", "gayvermin") hide both the group and the threat.
        glued = [token for token in tokens if len(token) >= 8]
        if glued:
            tokens |= {
                word
                for word in (*groups, *hostile)
                if len(word) >= 3 and any(word in token for token in glued)
            }
            names_group = names_group or bool(tokens & groups)
        score = profanity
        if names_group and (
            any(near(token, hostile) for token in tokens) or NEGATED_POSITIVE.search(normalised)
        ):
            score = max(score, self.group_hostility_score)
        elif names_specific_group(tokens) and self.group_default_score:
            # In a hate-speech task most statements about a protected group are attacks.
            score = max(score, self.group_default_score)
        if tokens & POSITIVE_WORDS and not NEGATED_POSITIVE.search(normalised):
            score *= 0.5
        lowered = normalised
        if any(re.search(cue, lowered) for cue in COUNTER_CUES):
            score *= 0.5
        return min(max(score, 0.0), 1.0)

    def output(self, statement: str, profanity: float) -> dict[str, Any]:
        """Build the outputs of one statement."""
        hateful = self.hateful_probability(statement, profanity)
        probabilities = normalise({"not-hateful": 1.0 - hateful, "hateful": hateful})
        label = "hateful" if probabilities["hateful"] >= self.threshold else "not-hateful"
        return {"label": label, "prob": probabilities}
