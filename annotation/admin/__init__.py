"""The annotation app's admin: examples and the form preview (``examples``), campaigns and
the read-only cached stats (``campaigns``)."""

from annotation.admin import campaigns, examples

__all__ = ["campaigns", "examples"]
