"""What every app uses and no app owns: service errors, upload readers, JSON guards, CSV export,
sign-in hardening, log filters and the base admin of every app.

``core`` is the lowest layer of the project: it imports Django and libraries, never an app
(``tasks``, ``models_hub``, ``annotation``, ``leaderboards``) nor ``dynatask_site``; settings are
read through ``django.conf.settings``. See "Layers and imports" in ``docs/CONTRIBUTING.md``.
"""
