"""Writes of the annotation app.

- ``examples``: a worker's example (submit, ask the model again, verdict, metadata,
  retract, flag and its undo) and the showing of a context;
- ``answers``: what goes to the model and what its answer stores;
- ``validations``: validations, consensus and the owners' verdicts;
- ``guards``: the rules every write shares (invalid input, the writer, row locks, retries).

Rules kept here, nowhere else: an example is saved first, then the model is asked by the
live loop after the commit; each change of an example is made under its row lock (or by a
conditional UPDATE) and its counter deltas are buffered once it commits
(``annotation.stats``); an example settles when ``task.num_matching_validations`` verdicts of
one label agree, or at once on an owner's verdict.
"""
