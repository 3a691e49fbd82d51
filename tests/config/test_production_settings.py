"""Production settings: DEBUG off is secure by default, `check --deploy` is clean, bad values and
weak or missing secrets stop the start.

The real settings (config.settings, not the test settings) are imported in a subprocess with
a clean environment, as gunicorn would. DEBUG and SECRET_KEY are always given explicitly, so a
developer's .env (from `make run`, read with overwrite=False) cannot change the outcome.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from core import strict_env

PYTHON = sys.executable
STRONG_KEY = secrets.token_urlsafe(50)

PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": STRONG_KEY,
    "ALLOWED_HOSTS": "api.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://api.example.com",
    "BASE_URL": "https://api.example.com",
    "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
    "SECURE_HSTS_PRELOAD": "true",
    "DATABASE_URL": "postgres://delivery@db.internal:5432/delivery",
}


def run_python(environment: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        **environment,
    }
    return subprocess.run(
        [PYTHON, *args],
        env=env,
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )


SHOW_SETTINGS = """
import json
from django.conf import settings
names = [
    "DEBUG", "SECURE_SSL_REDIRECT", "SECURE_REDIRECT_EXEMPT", "SECURE_PROXY_SSL_HEADER",
    "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
    "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "STORAGES", "WHITENOISE_USE_FINDERS", "CACHES",
    "RATE_LIMIT_DEFAULT", "RATE_LIMIT_BULK", "SECRET_KEY_FALLBACKS", "STATIC_BROTLI",
]
print(json.dumps({n: getattr(settings, n) for n in names}))
"""


def settings_under(environment: dict[str, str]) -> dict:
    result = run_python(environment, "-c", SHOW_SETTINGS)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def start_error(environment: dict[str, str]) -> str:
    """Import the settings as a process starting up would; the error it stops with."""
    result = run_python(environment, "-c", "from django.conf import settings; settings.DEBUG")
    assert result.returncode != 0, "the settings loaded"
    assert "ImproperlyConfigured" in result.stderr, result.stderr
    return result.stderr.strip().splitlines()[-1]


# --- check --deploy ---------------------------------------------------------------------------


def test_check_deploy_is_clean_when_configured_for_production():
    result = run_python(PRODUCTION, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_out_of_the_box_only_the_hsts_preload_opt_in_is_left():
    """Preloading is a commitment for the whole domain, so it stays the operator's choice."""
    minimal = {k: v for k, v in PRODUCTION.items() if k != "SECURE_HSTS_PRELOAD"}
    result = run_python(minimal, "manage.py", "check", "--deploy")
    assert result.returncode == 0, result.stderr
    assert "(security.W021)" in result.stderr
    assert "identified 1 issue" in result.stderr


# --- the defaults: production when DEBUG is off, `make run` when it is on ----------------------


def test_debug_off_is_secure_by_default():
    values = settings_under({"DEBUG": "false", "SECRET_KEY": STRONG_KEY})
    assert values["DEBUG"] is False
    assert values["SECURE_SSL_REDIRECT"] is True
    assert values["SECURE_REDIRECT_EXEMPT"] == ["^healthz$", "^readyz$"]
    assert values["SECURE_PROXY_SSL_HEADER"] is None  # only when the proxy is known to set it
    assert values["SECURE_HSTS_SECONDS"] == 31_536_000
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    assert values["SECURE_HSTS_PRELOAD"] is False
    assert values["SESSION_COOKIE_SECURE"] is True
    assert values["CSRF_COOKIE_SECURE"] is True
    assert values["STORAGES"]["staticfiles"]["BACKEND"] == "core.static.CompressedStatic"
    assert values["STATIC_BROTLI"] is True
    assert values["WHITENOISE_USE_FINDERS"] is False  # collectstatic's output only
    assert values["SECRET_KEY_FALLBACKS"] == []
    assert values["CACHES"]["default"]["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"
    assert values["CACHES"]["default"]["LOCATION"] == "django_cache"
    assert (values["RATE_LIMIT_DEFAULT"], values["RATE_LIMIT_BULK"]) == (
        "1200/minute",
        "120/minute",
    )


def test_every_switch_follows_its_variable():
    values = settings_under(
        {
            **PRODUCTION,
            "SECURE_SSL_REDIRECT": "false",
            "SECURE_HSTS_SECONDS": "3600",
            "SECURE_HSTS_INCLUDE_SUBDOMAINS": "false",
            "RATE_LIMIT_DEFAULT": "50/second",
            "RATE_LIMIT_BULK": "10/hour",
            "CACHE_URL": "redis://cache.internal:6379/1",
            "SECRET_KEY_FALLBACKS": "an-earlier-key,an-even-earlier-key",
        }
    )
    assert values["SECRET_KEY_FALLBACKS"] == ["an-earlier-key", "an-even-earlier-key"]
    assert values["SECURE_SSL_REDIRECT"] is False
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert values["SECURE_HSTS_SECONDS"] == 3600
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is False
    assert values["SECURE_HSTS_PRELOAD"] is True
    assert (values["RATE_LIMIT_DEFAULT"], values["RATE_LIMIT_BULK"]) == ("50/second", "10/hour")
    assert values["CACHES"]["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache"


def test_make_run_is_plain_http_with_debug_on():
    values = settings_under({"DEBUG": "true", "SECRET_KEY": ""})
    assert values["SECURE_SSL_REDIRECT"] is False
    assert values["SECURE_HSTS_SECONDS"] == 0
    assert values["SESSION_COOKIE_SECURE"] is False
    assert values["STORAGES"]["staticfiles"]["BACKEND"] == (
        "django.contrib.staticfiles.storage.StaticFilesStorage"
    )


def test_the_test_settings_speak_plain_http_without_collectstatic():
    assert settings.DEBUG is False
    assert settings.SECURE_SSL_REDIRECT is False
    assert settings.STORAGES["staticfiles"]["BACKEND"] == (
        "django.contrib.staticfiles.storage.StaticFilesStorage"
    )
    assert settings.WHITENOISE_USE_FINDERS is True


def test_pages_render_and_static_files_are_served_without_collectstatic(db, client):
    login = client.get("/login/")
    assert login.status_code == 200
    assert b'href="/static/dashboard.css"' in login.content
    assert client.get("/admin/login/").status_code == 200
    stylesheet = client.get("/static/dashboard.css")
    assert stylesheet.status_code == 200
    assert stylesheet["Content-Type"].startswith("text/css")


# --- refusing to start ------------------------------------------------------------------------


def test_refuses_to_start_without_secret_key_when_debug_is_off():
    assert "SECRET_KEY is required" in start_error({"DEBUG": "false", "SECRET_KEY": ""})


def test_debug_is_off_unless_asked_for():
    # Empty counts as unset (and keeps a .env's DEBUG=true out).
    assert "SECRET_KEY is required" in start_error({"DEBUG": "", "SECRET_KEY": ""})


@pytest.mark.parametrize(
    "key",
    [
        "short-but-secret",
        "a" * 60,
        "django-insecure-" + secrets.token_urlsafe(50),
        "dev-only-insecure-secret-key-never-use-in-production",
    ],
    ids=["short", "few distinct characters", "django-insecure prefix", "the dev key"],
)
def test_refuses_a_weak_secret_key_when_debug_is_off(key):
    assert "SECRET_KEY is too weak" in start_error({"DEBUG": "false", "SECRET_KEY": key})


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DEBUG", "treu"),
        ("SECURE_HSTS_SECONDS", "1y"),
        ("SECURE_HSTS_SECONDS", "-1"),
        ("SECURE_SSL_REDIRECT", "sometimes"),
        ("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto: https"),
        ("RATE_LIMIT_BULK", "lots"),
        ("RATE_LIMIT_DEFAULT", "0/minute"),
    ],
)
def test_refuses_a_bad_value_naming_the_variable(name, value):
    error = start_error({"DEBUG": "false", "SECRET_KEY": STRONG_KEY, name: value})
    assert f"{name}={value!r}" in error


# Three values that each used to start, with a silent guess.


def test_a_negative_batch_size_stops_the_start():
    error = start_error({**PRODUCTION, "MAX_DROPS_PER_BATCH": "-1"})
    assert error.endswith("MAX_DROPS_PER_BATCH='-1': must be at least 1.")


def test_a_starting_balance_that_is_not_a_decimal_stops_the_start():
    error = start_error({**PRODUCTION, "SANDBOX_STARTING_BALANCE": "100,00"})
    assert "SANDBOX_STARTING_BALANCE='100,00': must be a decimal number" in error


def test_a_misspelt_geocoder_stops_the_start_instead_of_meaning_the_gazetteer():
    error = start_error({**PRODUCTION, "GEOCODERS": "gazetteer, nominatum"})
    assert error.endswith(
        "GEOCODERS='gazetteer, nominatum': 'nominatum' is not one of gazetteer, nominatim, "
        "photon (did you mean nominatim?)."
    )


def test_a_geocoder_named_twice_stops_the_start():
    error = start_error({**PRODUCTION, "GEOCODERS": "nominatim,gazetteer,Nominatim"})
    assert error.endswith("GEOCODERS='nominatim,gazetteer,Nominatim': Nominatim is named twice.")


def test_the_retired_single_geocoder_setting_stops_the_start_naming_its_successor():
    error = start_error({**PRODUCTION, "GEOCODER": "nominatim"})
    assert error.endswith(
        "GEOCODER='nominatim': the setting is now GEOCODERS, a chain tried in order, "
        "e.g. GEOCODERS=gazetteer,nominatim."
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MAX_BODY_BYTES", "10MB"),
        ("MAX_BODY_BYTES", "0"),
        ("MAX_DROPS_PER_BATCH", "0"),
        ("MAX_DROPS_PER_BATCH", "5k"),
        ("MAX_TRACKING_IDENTIFIERS", "0"),
        ("MAX_ACTIVE_KEYS_PER_ENVIRONMENT", "0"),
        ("IDEMPOTENCY_TTL_HOURS", "0"),
        ("IDEMPOTENCY_TTL_HOURS", "1.5"),
        ("CONN_MAX_AGE", "-1"),
        ("CONN_MAX_AGE", "1m"),
        ("TRUSTED_PROXY_COUNT", "1_000"),
        ("GEOCODE_TTL_DAYS", "٣٠"),  # Arabic-Indic digits: int() reads them, we do not
        ("NOMINATIM_TIMEOUT_SECONDS", "0"),
        ("NOMINATIM_TIMEOUT_SECONDS", "-2"),
        ("NOMINATIM_TIMEOUT_SECONDS", "3s"),
        ("NOMINATIM_TIMEOUT_SECONDS", "nan"),
        ("SANDBOX_STARTING_BALANCE", "-5"),
        ("SANDBOX_STARTING_BALANCE", "1.005"),
        ("SANDBOX_STARTING_BALANCE", "$100"),
        ("SANDBOX_STARTING_BALANCE", "1e3"),
        ("GEOCODERS", "google"),
        ("GEOCODERS", "gazetteer,"),
        ("PHOTON_TIMEOUT_SECONDS", "0"),
        ("PHOTON_URL", "photon.internal:2322"),
        ("LOG_LEVEL", "verbose"),
        ("CURRENCY", "usd"),
        ("CURRENCY", "DOLLAR"),
        ("SERVICE_COUNTRY", "KHM"),
        ("TIME_ZONE", "Asia/Phnom_Pen"),
        ("BASE_URL", "api.example.com"),
        ("NOMINATIM_URL", "nominatim.internal:8080"),
    ],
)
def test_refuses_a_mistyped_product_setting_naming_the_variable(name, value):
    error = start_error({**PRODUCTION, name: value})
    assert f"{name}={value!r}" in error


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DATABASE_URL", "postgress://delivery:s3cret-password@db.internal/delivery"),
        ("CACHE_URL", "memcache://cache.internal:11211"),
        ("CACHE_URL", "redis-cache.internal:6379"),
        ("CSRF_TRUSTED_ORIGINS", "api.example.com"),
        ("CSRF_TRUSTED_ORIGINS", "https://api.example.com/dashboard"),
    ],
)
def test_refuses_a_bad_url_naming_the_variable_but_not_its_secrets(name, value):
    error = start_error({**PRODUCTION, name: value})
    assert error.split(": ", 1)[1].startswith(f"{name}")
    assert "s3cret" not in error


def test_product_settings_are_read_and_normalised():
    show = (
        "from django.conf import settings as s; print(repr((s.SANDBOX_STARTING_BALANCE, "
        "s.GEOCODERS, s.LOGGING['root']['level'], s.NOMINATIM_TIMEOUT_SECONDS, s.BASE_URL, "
        "s.MAX_DROPS_PER_BATCH, s.CURRENCY, s.CSRF_TRUSTED_ORIGINS)))"
    )
    environment = {
        **PRODUCTION,
        "SANDBOX_STARTING_BALANCE": "50",
        "GEOCODERS": "Gazetteer, PHOTON,nominatim",
        "LOG_LEVEL": "warning",
        "NOMINATIM_TIMEOUT_SECONDS": "2.5",
        "MAX_DROPS_PER_BATCH": "1",
        "CURRENCY": "KHR",
        "CSRF_TRUSTED_ORIGINS": "https://api.example.com, https://*.example.com",
    }
    result = run_python(environment, "-c", show)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr(
        (
            Decimal("50.00"),
            ["gazetteer", "photon", "nominatim"],
            "WARNING",
            2.5,
            "https://api.example.com",
            1,
            "KHR",
            ["https://api.example.com", "https://*.example.com"],
        )
    )


# --- the strict helpers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("1", True), ("Yes", True), ("on", True), ("false", False), ("0", False)],
)
def test_env_bool_reads_the_usual_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("FLAG", raw)
    assert strict_env.env_bool("FLAG", default=not expected) is expected


def test_unset_or_empty_means_the_default(monkeypatch):
    monkeypatch.delenv("FLAG", raising=False)
    assert strict_env.env_bool("FLAG", default=True) is True
    monkeypatch.setenv("FLAG", "")
    assert strict_env.env_int("FLAG", default=7) == 7
    assert strict_env.env_proxy_ssl_header("FLAG") is None


def test_env_int_refuses_what_is_not_a_whole_number(monkeypatch):
    monkeypatch.setenv("SECURE_HSTS_SECONDS", "3.5")
    with pytest.raises(ImproperlyConfigured, match="SECURE_HSTS_SECONDS='3.5'"):
        strict_env.env_int("SECURE_HSTS_SECONDS", default=0, minimum=0)


@pytest.mark.parametrize(
    ("text", "rate"),
    [("120/minute", (120, 60)), ("10/s", (10, 1)), ("5/hour", (5, 3600)), ("1 / day", (1, 86400))],
)
def test_rates(text, rate):
    assert strict_env.parse_rate(text) == rate


@pytest.mark.parametrize("text", ["120", "120/monkey", "x/minute", "0/minute", "1000000000/s"])
def test_bad_rates(text):
    with pytest.raises(ImproperlyConfigured):
        strict_env.parse_rate(text)


def test_proxy_ssl_header_is_a_meta_name_and_a_value(monkeypatch):
    monkeypatch.setenv("SECURE_PROXY_SSL_HEADER", "HTTP_X_FORWARDED_PROTO, https")
    assert strict_env.env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER") == (
        "HTTP_X_FORWARDED_PROTO",
        "https",
    )


# --- HTTPS behaviour with production's switches ------------------------------------------------


@pytest.fixture
def production_https(settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    return Client()  # middleware reads these settings when the client's handler loads it


def test_plain_http_is_redirected_to_https(db, production_https):
    response = production_https.get("/admin/login/")
    assert response.status_code == 301
    assert response["Location"] == "https://testserver/admin/login/"


def test_https_from_the_proxy_is_served_with_hsts(db, production_https):
    response = production_https.get("/admin/login/", HTTP_X_FORWARDED_PROTO="https")
    assert response.status_code == 200
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


def test_the_health_check_answers_plain_http(db, production_https):
    response = production_https.get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("0", Decimal("0.00")), ("100", Decimal("100.00")), ("12.5", Decimal("12.50"))],
)
def test_env_decimal_keeps_cents_exact(monkeypatch, raw, expected):
    monkeypatch.setenv("AMOUNT", raw)
    value = strict_env.env_decimal("AMOUNT", default="1.00", minimum=Decimal(0), places=2)
    assert value == expected
    assert str(value) == str(expected)


def test_env_choice_suggests_the_nearest_choice(monkeypatch):
    monkeypatch.setenv("GEOCODER", "gazeteer")
    with pytest.raises(ImproperlyConfigured, match=r"did you mean gazetteer\?"):
        strict_env.env_choice("GEOCODER", "gazetteer", ("gazetteer", "nominatim"))
    monkeypatch.setenv("GEOCODER", "GAZETTEER")
    assert strict_env.env_choice("GEOCODER", "nominatim", ("gazetteer", "nominatim")) == (
        "gazetteer"
    )
