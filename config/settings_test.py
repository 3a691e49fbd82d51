"""Settings for the test suite: the real settings, with test-only defaults.

The database host and port are filled in by tests/conftest.py from the throwaway
PostgreSQL cluster it starts (tests/pgcluster.py).
"""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:1/delivery")
os.environ.setdefault("CONN_MAX_AGE", "0")

from config.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
