"""Settings for the test suite: the real settings, with test-only defaults.

The database host and port are filled in by tests/conftest.py from the throwaway
PostgreSQL cluster it starts (tests/pgcluster.py).
"""

import os

# DEBUG off as in production (a developer's .env from `make run` must not turn it on), with
# what plain-http test clients need: no redirect to https, cookies sent over http.
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault(
    "SECRET_KEY", "test-only-secret-key-not-for-production-0123456789-abcdefghijklmnop"
)
if os.environ.get("TEST_DATABASE") == "sqlite":  # the embedded default, as `make run` has it
    os.environ.setdefault("DATABASE_URL", "sqlite:///delivery-test.sqlite3")
else:
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:1/delivery")
os.environ.setdefault("CONN_MAX_AGE", "0")
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")
os.environ.setdefault("SESSION_COOKIE_SECURE", "false")
os.environ.setdefault("CSRF_COOKIE_SECURE", "false")
# Tests that are about rate limits lower them with the `settings` fixture; the rest (and
# Schemathesis, which sends many requests with one key) must never meet them.
os.environ.setdefault("RATE_LIMIT_DEFAULT", "1000000/minute")
os.environ.setdefault("RATE_LIMIT_BULK", "1000000/minute")

from config.settings import *  # noqa: E402,F403

# Tests never run collectstatic: templates name the source files, which the finders serve.
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
# Each test's client builds its own middleware, and WhiteNoise would list every static file
# at each build (~0.17 s, a fifth of a small test): found per request instead, as DEBUG does.
WHITENOISE_AUTOREFRESH = True

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
