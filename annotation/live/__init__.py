"""The live loop of the create page: examples wait in Redis for a model's answer.

- ``queue``: the web side. An example joins the pending list (with its counter increments,
  in one pipeline) and a drain job is queued when none is; pages wait for the answer.
- ``drain``: the ``live`` queue's job that answers the pending examples in batches, one
  model call per batch and model, under a lease that a dead worker lets lapse.
- ``watchdog``: the periodic job that gives the claims of dead drains back to the pending
  list and re-queues examples that waited too long in no list at all.
- ``sandbox``: questions to the model that store nothing.
"""
