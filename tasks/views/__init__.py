"""Pages of the tasks app: ``pages`` (the task list and page, proposals, the profile, the
leaderboards index) and ``tokens`` (API tokens)."""
