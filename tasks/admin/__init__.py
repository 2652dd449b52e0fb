"""The admin of the tasks app (the base admin every app's admin derives from is ``core.admin``).

Django's admin autodiscovery imports ``tasks.admin``: importing the modules here is what
registers their admins.
"""

from tasks.admin import proposals, site_settings, tasks  # noqa: F401 (registers the admins)
