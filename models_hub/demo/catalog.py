"""The demo's models: which handler at which setting, on which port, with which card.

Pure data, no Django: ``scripts/dev.py run`` starts one ``python -m models_hub.demo.serve
TASK`` process per demo task, which serves every ``served`` model of that task on its own
port; the seeders register them (``models_hub/seed.py``) and score each ``predictions_file``
model from a predictions file they generate with its handler (``leaderboards/seed.py``).
Each demo task so has at least three models on its leaderboard, none downloaded.

Ports are fixed (``port``) so that the URLs stay the same from one run to the next; a port
that is taken falls back to a free one, and the seeder re-points every model registered
against the old URL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SERVED = "served"
PREDICTIONS_FILE = "predictions_file"

REPOSITORY_NOTE = "Written for Dynatask's demo; see docs/demo-models.md."


@dataclass(frozen=True)
class DemoModel:
    """One demo model of a task: served over HTTP, or scored from a generated predictions file."""

    key: str  # "--model-url KEY=URL" of seed_demo; also the model server's name for it
    task: str  # the demo task's code
    name: str  # the registered model's name (the seeder finds it again by it)
    handler: str  # "package.module:Class"
    kwargs: dict[str, Any] = field(default_factory=dict)
    kind: str = SERVED
    port: int | None = None  # the served model's default port
    in_loop: bool = False  # answers workers on the create page
    description: str = ""
    card: str = ""
    license: str = "MIT"
    source_url: str = ""
    languages: str = "en"
    # The protocol it is registered with, and its options (openai_chat needs ``model``).
    protocol: str = "dynatask"
    options: dict[str, Any] = field(default_factory=dict)

    def card_fields(self) -> dict[str, str]:
        """The model-card fields the models hub registers."""
        fields = {
            "name": self.name,
            "description": self.description,
            "card": self.card,
            "license": self.license,
            "languages": self.languages,
        }
        if self.source_url:
            fields["source_url"] = self.source_url
        return fields


VADER = "models_hub.demo.sentiment:SentimentHandler"
NLI = "models_hub.demo.nli:NLIHandler"
QA = "models_hub.demo.qa:QAHandler"
HATE = "models_hub.demo.hate:HateSpeechHandler"
CHAT_RETRIEVAL = "models_hub.demo.chat:RetrievalChatHandler"
CHAT_RULES = "models_hub.demo.chat:RuleChatHandler"
MAJORITY = "models_hub.demo.baselines:MajorityClassHandler"
FIRST_SPAN = "models_hub.demo.baselines:FirstSpanQAHandler"
VADER_SOURCE = "https://github.com/cjhutto/vaderSentiment"
PROFANITY_SOURCE = "https://github.com/dimitrismistriotis/alt-profanity-check"

DEMO_MODELS: tuple[DemoModel, ...] = (
    # -- sentiment ----------
    DemoModel(
        key="sentiment",
        task="sentiment",
        name="VADER sentiment (demo)",
        handler=VADER,
        port=8101,
        in_loop=True,
        description="The VADER lexicon and rules, mapped to negative/neutral/positive.",
        card="A rule-based sentiment model (VADER) served by the demo model server. "
        "Fast, offline and easy to fool with sarcasm or negation.",
        source_url=VADER_SOURCE,
    ),
    DemoModel(
        key="sentiment-narrow",
        task="sentiment",
        name="VADER, narrow neutral band (demo)",
        handler=VADER,
        kwargs={"neutral_margin": 0.05},
        port=8102,
        description="VADER that calls a statement neutral only when its score is near zero.",
        card="The same VADER model with a neutral band of ±0.05 instead of ±0.4: it takes "
        "sides more often.",
        source_url=VADER_SOURCE,
    ),
    DemoModel(
        key="sentiment-majority",
        task="sentiment",
        name="Majority class (demo baseline)",
        handler=MAJORITY,
        kwargs={"labels": ["negative", "positive", "neutral"], "answer": "negative"},
        port=8103,
        description="Always answers “negative”, the demo dataset's most frequent label.",
        card="A baseline: the floor any real model must beat. " + REPOSITORY_NOTE,
    ),
    DemoModel(
        key="sentiment-predictions",
        task="sentiment",
        name="VADER, wide neutral band (predictions file)",
        handler=VADER,
        kwargs={"neutral_margin": 0.6},
        kind=PREDICTIONS_FILE,
        description="Scored from an uploaded predictions file, without an endpoint.",
        card="VADER with a neutral band of ±0.6, run offline over the datasets; its outputs "
        "were uploaded as predictions files, as a submitter without a server would.",
        source_url=VADER_SOURCE,
    ),
    # -- natural language inference ----------
    DemoModel(
        key="nli",
        task="nli",
        name="Overlap NLI heuristic (demo)",
        handler=NLI,
        port=8111,
        in_loop=True,
        description="Word overlap and negation cues for entailment/neutral/contradiction.",
        card="A heuristic NLI model: high overlap means entailment, a negation means "
        "contradiction. Written for Dynatask as an easy-to-fool demo.",
    ),
    DemoModel(
        key="nli-overlap",
        task="nli",
        name="Word overlap only (demo)",
        handler=NLI,
        kwargs={"negation_weight": 0.0, "mismatch_weight": 0.0},
        port=8112,
        description="The overlap heuristic without its negation and number cues.",
        card="Entailment from word overlap alone: it never calls a pair contradictory. "
        + REPOSITORY_NOTE,
    ),
    DemoModel(
        key="nli-majority",
        task="nli",
        name="Majority class (demo baseline)",
        handler=MAJORITY,
        kwargs={"labels": ["entailed", "neutral", "contradictory"], "answer": "entailed"},
        port=8113,
        description="Always answers “entailed”, the demo dataset's most frequent label (tied).",
        card="A baseline: the floor any real model must beat. " + REPOSITORY_NOTE,
    ),
    DemoModel(
        key="nli-predictions",
        task="nli",
        name="Overlap NLI, strict entailment (predictions file)",
        handler=NLI,
        kwargs={"entail_offset": 0.99},
        kind=PREDICTIONS_FILE,
        description="Scored from an uploaded predictions file, without an endpoint.",
        card="The overlap heuristic that wants every hypothesis word in the premise before it "
        "says entailed; its outputs were uploaded as predictions files.",
    ),
    # -- question answering ----------
    DemoModel(
        key="qa",
        task="qa",
        name="Sliding-window QA (demo)",
        handler=QA,
        port=8121,
        in_loop=True,
        description="Extracts the passage window that overlaps the question most.",
        card="A sliding-window overlap span extractor (the classic MCTest baseline idea). "
        "Written for Dynatask as an easy-to-fool demo.",
    ),
    DemoModel(
        key="qa-wide",
        task="qa",
        name="Sliding-window QA, wide window (demo)",
        handler=QA,
        kwargs={"window_words": 8, "max_span_words": 4},
        port=8122,
        description="The sliding-window extractor looking 8 words around each span.",
        card="The same extractor with a wider window and longer answers. " + REPOSITORY_NOTE,
    ),
    DemoModel(
        key="qa-first-span",
        task="qa",
        name="First span of the asked kind (demo baseline)",
        handler=FIRST_SPAN,
        port=8123,
        description="Answers with the passage's first number, date or name the question asks "
        "for, else its first words.",
        card="A baseline that reads only the question word: the floor any real model must "
        "beat. " + REPOSITORY_NOTE,
    ),
    DemoModel(
        key="qa-predictions",
        task="qa",
        name="Sliding-window QA, one-word answers (predictions file)",
        handler=QA,
        kwargs={"max_span_words": 1},
        kind=PREDICTIONS_FILE,
        description="Scored from an uploaded predictions file, without an endpoint.",
        card="The sliding-window extractor limited to one-word answers; its outputs were "
        "uploaded as predictions files.",
    ),
    # -- hate speech ----------
    DemoModel(
        key="hs",
        task="hs",
        name="profanity-check (demo)",
        handler=HATE,
        port=8131,
        in_loop=True,
        description="alt-profanity-check's linear SVM, used as a hate-speech detector.",
        card="A profanity classifier standing in for a hate-speech model: it flags "
        "offensive words, not hateful meaning.",
        source_url=PROFANITY_SOURCE,
    ),
    DemoModel(
        key="hs-profanity",
        task="hs",
        name="profanity-check alone (demo)",
        handler=HATE,
        kwargs={"group_hostility_score": 0.0, "group_default_score": 0.0},
        port=8132,
        description="The profanity probability without the protected-group rules.",
        card="alt-profanity-check with none of the demo's rules about groups and hostile "
        "words: swearing is hate, slurs without swearing are not.",
        source_url=PROFANITY_SOURCE,
    ),
    DemoModel(
        key="hs-majority",
        task="hs",
        name="Majority class (demo baseline)",
        handler=MAJORITY,
        kwargs={"labels": ["not-hateful", "hateful"], "answer": "not-hateful"},
        port=8133,
        description="Always answers “not-hateful”, the demo dataset's most frequent label.",
        card="A baseline: the floor any real model must beat. " + REPOSITORY_NOTE,
    ),
    DemoModel(
        key="hs-predictions",
        task="hs",
        name="profanity-check, strict threshold (predictions file)",
        handler=HATE,
        kwargs={"threshold": 0.7},
        kind=PREDICTIONS_FILE,
        description="Scored from an uploaded predictions file, without an endpoint.",
        card="The demo hate-speech model that says hateful only above 0.7; its outputs were "
        "uploaded as predictions files.",
        source_url=PROFANITY_SOURCE,
    ),
    # -- chat (served over the OpenAI-compatible /v1/chat/completions, streaming) ----------
    DemoModel(
        key="chat-retrieval",
        task="chat",
        name="Notes retrieval chat (demo)",
        handler=CHAT_RETRIEVAL,
        port=8141,
        in_loop=True,
        protocol="openai_chat",
        options={"model": "retrieval-notes-1"},
        description="Answers with the sentences of its notes (solar system, tea, bicycles) that "
        "share the most rare words with your message.",
        card="A TF-IDF retrieval responder over notes shipped in the repository "
        "(models_hub/demo/data/chat_corpus.md). It never invents facts, but it happily answers "
        "with the wrong note. " + REPOSITORY_NOTE,
    ),
    DemoModel(
        key="chat-rules",
        task="chat",
        name="Pattern-rule chat (demo)",
        handler=CHAT_RULES,
        port=8142,
        in_loop=True,
        protocol="openai_chat",
        options={"model": "rules-1"},
        description="A confident pattern-rule chatbot in the spirit of ELIZA: it knows no facts.",
        card="Greetings, 'what is', 'how do I', 'why' and yes/no rules that answer with "
        "confidence and no knowledge: easy to catch out. " + REPOSITORY_NOTE,
    ),
)

DEMO_TASKS: tuple[str, ...] = ("sentiment", "nli", "qa", "hs", "chat")
# The demo tasks with datasets and a Dynascore board (the chat task collects conversations).
RANKED_DEMO_TASKS: tuple[str, ...] = ("sentiment", "nli", "qa", "hs")


def demo_model(key: str) -> DemoModel | None:
    """Return the demo model ``key``, or None."""
    return next((model for model in DEMO_MODELS if model.key == key), None)


def served_models(task: str) -> list[DemoModel]:
    """Return the models that the demo server of ``task`` serves."""
    return [model for model in DEMO_MODELS if model.task == task and model.kind == SERVED]


def predictions_file_models(task: str | None = None) -> list[DemoModel]:
    """Return the demo models scored from generated predictions files (of ``task``)."""
    return [
        model
        for model in DEMO_MODELS
        if model.kind == PREDICTIONS_FILE and (task is None or model.task == task)
    ]
