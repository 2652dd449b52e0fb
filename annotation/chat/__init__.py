"""Chat collection: conversations with the models in the loop (``docs/chat.md``).

A conversation (``models.Conversation``) talks to its seats (the models drawn for it) over
ordered turns; each turn holds the worker's message, one reply per seat and the worker's
choice. Finishing a conversation stores it as an ``Example`` (so stats, validation and
leaderboards count conversations). Replies stream: ``pump`` calls the models on the live
queue and appends their text to a Redis stream per reply (``streams``), which the page reads
with server-sent events (``views``) and the API with the same events (``api``).
"""
