"""Reads of the leaderboards app, by domain (HackSoft's selectors: views and the API call them).

- ``boards``: the leaderboard table, forks and snapshots;
- ``cubes``: the task's score cube and the version of its data;
- ``models``: the model page (scores, runs, the per-example browser);
- ``runs``: evaluation runs and their progress;
- ``datasets``: datasets and pages of their examples.
"""
