"""The chat fixtures are a plugin of the root conftest (``tests.annotation.chat.fixtures``):
the API tests use them too."""
