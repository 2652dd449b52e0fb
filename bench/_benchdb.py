"""A throwaway database for the leaderboards benchmarks (created, migrated, dropped).

Uses ``DATABASE_URL`` (PostgreSQL in CI) through Django's test-database machinery, so the
benchmark never writes into a real database; SQLite gets a temporary file so that child
processes can share it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dynatask_site.settings.test")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
os.environ.setdefault("LOG_LEVEL", "WARNING")


def setup_django():
    import django

    django.setup()


def create_database() -> str:
    """Create and migrate a fresh database; return its NAME (set it with ``use_database``)."""
    from django.db import connection

    settings = connection.settings_dict
    if settings["ENGINE"].endswith("sqlite3"):
        settings.setdefault("TEST", {})["NAME"] = tempfile.mktemp(suffix=".sqlite3")
    else:
        settings.setdefault("TEST", {})["NAME"] = f"bench_{os.getpid()}"
    return connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)


def use_database(name: str) -> None:
    """Point the default connection at ``name`` (child processes of a benchmark)."""
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = name


def drop_database(name: str, old_name: str) -> None:
    from django.db import connection

    connection.creation.destroy_test_db(old_name, verbosity=0, keepdb=False)
