"""Crowd campaigns: workers without accounts who write and validate through a signed link.

- ``links``: the campaign's signed link;
- ``identities``: a worker id bound to one browser session, signed worker links;
- ``actors``: who acts on the create and validate pages (a user or a campaign worker);
- ``services``: campaigns and their workers, quotas, time and the bonus CSV.

Imports run one way: ``services`` -> ``actors`` -> ``identities`` -> ``links``.
"""
