"""Pages of the leaderboards app, by domain: parse the request, call a selector or service, render.

- ``boards``: the task leaderboard, its JSON and CSV, forks and snapshots;
- ``models``: the model page (scores, runs, example browser) and its runs' live progress;
- ``datasets``: dataset lists, uploads, pages and generated perturbations;
- ``runs``: an evaluation run's page, its progress partial and its retry;
- ``predictions``: predictions file uploads;
- ``common``: the lookups they share (a task or a model, or 404).
"""
