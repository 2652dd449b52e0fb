"""Signal receivers of the models hub: hand over to a service, nothing else.

- ``tasks.signals.round_opened`` with ``carry_over`` -> the new round's loop gets the
  previous round's models (``services.loop_carry_over``).
"""

from __future__ import annotations

from models_hub import services


def on_round_opened(sender, round, previous, carry_over: bool, **kwargs) -> None:
    if carry_over and previous is not None:
        services.loop_carry_over(previous, round)
