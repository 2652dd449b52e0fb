"""Offline demo models for the Dynabench sentiment, hate-speech, NLI and QA tasks.

Serve one with ``manage.py serve_model models_hub.demo:SentimentHandler --port 8101``.
Measured quality: ``docs/demo-models.md`` (``scripts/demo_accuracy.py``).
"""

from models_hub.demo.hate import HateSpeechHandler
from models_hub.demo.nli import NLIHandler
from models_hub.demo.qa import QAHandler
from models_hub.demo.sentiment import SentimentHandler

__all__ = ["HateSpeechHandler", "NLIHandler", "QAHandler", "SentimentHandler"]
