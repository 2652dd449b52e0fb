"""Crowdworker statistics: cached counters, how they move, their buffer, repair and reads.

- ``counters``: what each event adds to the counter rows (pure).
- ``buffer``: increments queued in Redis on the request path and applied by a periodic job.
- ``recompute``: ``stats_recompute``, which rebuilds every counter of a task from the data.
- ``summaries``: the reads of the stats pages and the workers' board.
"""
