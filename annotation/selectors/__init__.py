"""Reads of the annotation app.

- ``tasks``: the cached task bundle, and the task, round and context an actor works on;
- ``examples``: one example for its writer or an owner, and the owners' review queue;
- ``validation``: the validation queue;
- ``progress``: the worker's progress line (today's examples, fooled, a campaign's quota).
"""
