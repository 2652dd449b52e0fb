"""Integration events of the tasks app for the apps above it (which may not be imported here).

Receivers only hand over to a service of their own app (enqueue a job, recompute scores);
no business logic lives in a receiver.
"""

from django.dispatch import Signal

# Sent after a task's current config changed. Arguments: task, version (TaskConfigVersion),
# previous (the TaskConfigVersion before, or None).
task_config_changed = Signal()

# Sent inside the transaction that opened a round, so that what receivers write commits or
# rolls back with it. Arguments: round (the new Round), previous (the Round before it, or
# None), carry_over (True when the owner asked to carry the previous round over).
round_opened = Signal()
