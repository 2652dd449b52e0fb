"""A demo model with a fixed added latency: another handler, slowed down by a fixed time per
batch, as a model on a GPU server takes about the same time per batch whatever its load.

    manage.py serve_model models_hub.demo.delayed:DelayedHandler \\
        --kwargs '{"handler": "models_hub.demo.sentiment:SentimentHandler", "seconds": 0.1}'

The server answers requests on threads of their own, so batches in flight wait side by side:
a benchmark of the platform (``bench/cluster.py``) measures the platform, not the model.
"""

from __future__ import annotations

import time
from typing import Any

from models_hub.server import load_handler

DEFAULT_HANDLER = "models_hub.demo.sentiment:SentimentHandler"


class DelayedHandler:
    """``handler``'s answers, each batch after ``seconds`` more."""

    def __init__(self, handler: str = DEFAULT_HANDLER, seconds: float = 0.1, **kwargs: Any):
        self.inner = load_handler(handler, **kwargs)
        self.seconds = float(seconds)
        self.model_version = f"{getattr(self.inner, 'model_version', 'demo')}+{self.seconds}s"
        self.batch_size = getattr(self.inner, "batch_size", None)

    def predict(self, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        time.sleep(self.seconds)
        return self.inner.predict(batch)
