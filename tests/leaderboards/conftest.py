"""The evaluation fixtures of ``evalkit`` for every leaderboards test module."""

from tests.leaderboards.evalkit import eval_owner, eval_task, fast_client  # noqa: F401
