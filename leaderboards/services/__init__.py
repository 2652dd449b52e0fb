"""Writes of the leaderboards app, by domain (HackSoft's services: interfaces call them).

- ``datasets``: dataset uploads and perturbed copies;
- ``uploads``: the rows of uploaded files (CSV cells, problems per line);
- ``runs``: evaluation runs (create, retry);
- ``shards``: an evaluation shard's work (read, call the model, write predictions);
- ``client``: the model client evaluation jobs call;
- ``scores``: run finalization and the one Score of (model, original dataset);
- ``predictions``: predictions files (score a model from its uploaded outputs);
- ``boards``: forks (saved weightings) and snapshots (frozen tables) of leaderboards.
"""
