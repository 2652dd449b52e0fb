"""Integration events of the models hub for the apps above it (leaderboards, annotation).

Receivers only hand over to a service of their own app; no business logic lives in a receiver.
"""

from django.dispatch import Signal

# Sent (after commit) when a model was registered or its endpoint changed. Arguments: model.
model_registered = Signal()

# Sent (after commit) when rows of models changed by a bulk write that sends no ``post_save``:
# loop memberships set, a health check that changed a model's status. Arguments: task_ids.
model_rows_changed = Signal()
