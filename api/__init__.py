"""The REST API's plumbing, shared by every app's ``api`` module.

- ``api.errors``: the one error shape and DRF's exception handler;
- ``api.auth``: API tokens (only a hash stored) and their DRF authentication;
- ``api.parsers``: the JSON parser with the depth guard;
- ``api.permissions``: ``require`` a rule of ``tasks.permissions`` (or an app's own);
- ``api.throttles``: the write throttles;
- ``api.schema``: the OpenAPI schema's shared error responses (a postprocessing hook);
- ``api.fields``: serializer fields every app uses;
- ``api.urls``: ``/api/v1/`` (each app's ``api_urls``, included by name), schema and docs.

``api`` sits just above ``core``: it imports ``core`` and libraries, never an app module at
import time (see "Layers and imports" in ``docs/CONTRIBUTING.md``).
"""
