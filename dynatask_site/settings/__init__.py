"""Settings: ``base`` (shared), ``dev`` (default for manage.py), ``test``, ``prod``."""
