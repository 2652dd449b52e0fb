"""The leaderboard table, pure: no DB, no HTTP.

- ``results``: the typed table (``LeaderboardTable``) and the parsed query's types;
- ``query``: the query string parsed into weights, sort and page (``parse_leaderboard_query``);
- ``records``: what the table is built from (models, datasets, scores as plain records);
- ``board``: the scores of the listed models as numpy arrays (``Board``);
- ``build``: one page of the leaderboard (``build_leaderboard_table``);
- ``summaries``: the best model per tag and the trends of the top models.
"""
