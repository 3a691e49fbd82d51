"""Settings, read from the environment (12-factor) with django-environ."""

from decimal import Decimal
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DEBUG", default=False)

_DEV_SECRET = "dev-only-insecure-secret-key-never-use-in-production"
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        # A production process must never sign sessions with a guessable key.
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off.")
    SECRET_KEY = _DEV_SECRET

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
BASE_URL = env.str("BASE_URL", default="").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "config",
    "accounts",
    "billing",
    "geo",
    "orders",
    "tracking",
]

MIDDLEWARE = [
    "config.middleware.RequestIdMiddleware",
    "config.middleware.ApiBodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.ApiErrorMiddleware",
]

ROOT_URLCONF = "config.urls"
# No redirect-to-slash: an API client posting to a near-miss path gets a JSON 404, not a 301.
APPEND_SLASH = False
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=60))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="Asia/Phnom_Penh")
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []
WHITENOISE_USE_FINDERS = True

EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")

# --- The product's own settings (DESIGN.md §4, §7, §8, §10) ---
SERVICE_COUNTRY = env.str("SERVICE_COUNTRY", default="KH")
CURRENCY = env.str("CURRENCY", default="USD")
SANDBOX_STARTING_BALANCE = Decimal(env.str("SANDBOX_STARTING_BALANCE", default="100.00"))
MAX_BODY_BYTES = env.int("MAX_BODY_BYTES", default=10 * 1024 * 1024)
MAX_DROPS_PER_BATCH = env.int("MAX_DROPS_PER_BATCH", default=5000)
MAX_TRACKING_IDENTIFIERS = env.int("MAX_TRACKING_IDENTIFIERS", default=1000)
MAX_ACTIVE_KEYS_PER_ENVIRONMENT = env.int("MAX_ACTIVE_KEYS_PER_ENVIRONMENT", default=10)
IDEMPOTENCY_TTL_HOURS = env.int("IDEMPOTENCY_TTL_HOURS", default=24)
GEOCODER = env.str("GEOCODER", default="gazetteer")  # "gazetteer" or "nominatim"
NOMINATIM_URL = env.str("NOMINATIM_URL", default="https://nominatim.openstreetmap.org")
NOMINATIM_TIMEOUT_SECONDS = env.float("NOMINATIM_TIMEOUT_SECONDS", default=3.0)
NOMINATIM_USER_AGENT = env.str("NOMINATIM_USER_AGENT", default="delivery-orders/0.1")

# Django reads the body into memory up to this size; past it we answer 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_BODY_BYTES
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["config.api.JsonParser"],
    "DEFAULT_RENDERER_CLASSES": ["config.api.JsonRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.api.AlwaysJson",
    "EXCEPTION_HANDLER": "config.api.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.request": {"level": "ERROR"}},
}
