"""Offline demo models for the Dynabench sentiment, hate-speech, NLI and QA tasks.

Serve one with ``manage.py serve_model models_hub.demo:SentimentHandler --port 8101``, or all
of a task's demo models with ``python -m models_hub.demo.serve sentiment`` (what
``scripts/dev.py run`` does; ``models_hub.demo.catalog`` lists them). Measured quality:
``docs/demo-models.md`` (``scripts/demo_accuracy.py``).

The handlers are imported on first use: a demo server loads only its own task's libraries
(the hate-speech model alone loads scikit-learn).
"""

from importlib import import_module

_HANDLERS = {
    "HateSpeechHandler": "models_hub.demo.hate",
    "NLIHandler": "models_hub.demo.nli",
    "QAHandler": "models_hub.demo.qa",
    "SentimentHandler": "models_hub.demo.sentiment",
}

__all__ = sorted(_HANDLERS)


def __getattr__(name: str):
    if name in _HANDLERS:
        return getattr(import_module(_HANDLERS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
