"""Settings, read from the environment (12-factor) with django-environ."""

from decimal import Decimal
from importlib.util import find_spec
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from whitenoise.compress import Compressor

from core.strict_env import (
    env_bool,
    env_cache_url,
    env_choice,
    env_choice_list,
    env_database_url,
    env_decimal,
    env_float,
    env_int,
    env_int_list,
    env_matching,
    env_optional_database_url,
    env_origins,
    env_proxy_ssl_header,
    env_rate,
    env_time_zone,
    env_url,
    is_secure_secret_key,
    refuse_retired,
)

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env_bool("DEBUG", default=False)

_DEV_SECRET = "dev-only-insecure-secret-key-never-use-in-production"
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        # A production process must never sign sessions with a guessable key.
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off.")
    SECRET_KEY = _DEV_SECRET
elif not DEBUG and (SECRET_KEY == _DEV_SECRET or not is_secure_secret_key(SECRET_KEY)):
    raise ImproperlyConfigured(
        "SECRET_KEY is too weak for DEBUG off: at least 50 random characters, e.g. "
        "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'."
    )

# Earlier keys while SECRET_KEY is rotated: their signatures, cursors and tracking links
# still verify (docs/deployment.md).
SECRET_KEY_FALLBACKS = env.list("SECRET_KEY_FALLBACKS", default=[])

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_origins("CSRF_TRUSTED_ORIGINS")
BASE_URL = env_url("BASE_URL", default="")

# HTTPS. DEBUG off means production: secure by default, each switch overridable
# (docs/deployment.md).
# Behind a TLS-terminating proxy set SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO,https
# (only if the proxy always sets that header), or every request looks like plain http.
SECURE_PROXY_SSL_HEADER = env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
# How many proxies in front of the app append the client's address to X-Forwarded-For (the
# login throttle's client address, accounts/ratelimit.py): 0 = none, use REMOTE_ADDR; 1 = one
# load balancer or nginx. Never more than there are: the client writes every entry left of them.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", default=0, minimum=0)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
# The load balancer's probes may speak plain http.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", default=0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=not DEBUG)

INSTALLED_APPS = [
    "console.site.ConsoleAdminConfig",  # django.contrib.admin, the console's site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # Layers, lowest first: each app imports only the ones above it in this list
    # (docs/architecture.md; tests/test_layers.py holds the code to it).
    "core",
    "geo",
    "fleet",
    "accounts",
    "events",
    "billing",
    "orders",
    "couriers",
    "tracking",
    "dispatch",
    "notifications",
    "dashboard",
    "console",
    # After core: of two apps with a command of the same name Django runs the one listed
    # first, and core's db_worker (the worker plus the periodic jobs' scheduler) wraps theirs.
    "django_tasks",
    "django_tasks_db",
]

MIDDLEWARE = [
    "core.middleware.RequestIdMiddleware",
    "core.middleware.ApiHttpsOnlyMiddleware",
    "core.throttling.RateLimitHeadersMiddleware",
    "core.middleware.ApiBodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "core.languages.LanguageMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "core.replica.ReplicaReadsMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.middleware.ApiErrorMiddleware",
]

ROOT_URLCONF = "config.urls"
CSRF_FAILURE_VIEW = "core.handlers.csrf_failure"
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
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env_database_url("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
}
DATABASES["default"].setdefault("CONN_MAX_AGE", env_int("CONN_MAX_AGE", default=60, minimum=0))
# A kept connection is checked before a request reuses it, so a database restart costs no
# failed request once the database is back (docs/contract.md §16).
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
# What sits between the app and PostgreSQL (docs/deployment.md): "pgbouncer" for PgBouncer in
# transaction mode, where a transaction may run on any server connection.
DATABASE_POOLER = env_choice("DATABASE_POOLER", default="none", choices=("none", "pgbouncer"))
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Parameters travel apart from the SQL: a list of 1000 ids is one array, not 1000 quoted
    # literals spliced into the statement by the client.
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options.setdefault("server_side_binding", True)
    # A statement a connection has run five times is prepared on its next run (psycopg's
    # threshold), so the server parses and plans the hot reads once per connection, not on
    # every call. Django turns psycopg's preparing off unless asked (for poolers): asked here.
    _options.setdefault("prepare_threshold", 5)
    if DATABASE_POOLER == "pgbouncer":
        # psycopg prepares a statement (a *named* one, kept in the server session) once a
        # connection has run it five times; behind a transaction pooler the next run may land on
        # another server session that never saw it. None: never prepare. Server-side binding
        # itself uses the unnamed statement of each call, which is safe there.
        _options["prepare_threshold"] = None
        # A named cursor (QuerySet.iterator()) lives in a session, not a transaction.
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
elif DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # `make run`: gunicorn's workers and a task worker share the file. WAL lets reads go on
    # beside a write; IMMEDIATE takes the write lock at BEGIN, so two transactions never
    # both read and then fail at once ("database is locked") trying to upgrade to write.
    _sqlite = DATABASES["default"].setdefault("OPTIONS", {})
    _sqlite.setdefault("init_command", "PRAGMA journal_mode=WAL;")
    _sqlite.setdefault("transaction_mode", "IMMEDIATE")
# A streaming replica for the reads that tolerate lag (core/replica.py, docs/contract.md §22):
# the same options as the primary; unset, every read is on the primary. A multi-host URL
# with target_session_attrs=prefer-standby reads from any standby that answers.
if (_replica := env_optional_database_url("DATABASE_REPLICA_URL")) is not None:
    DATABASES["replica"] = {
        **_replica,
        **{
            name: DATABASES["default"][name]
            for name in ("CONN_MAX_AGE", "CONN_HEALTH_CHECKS", "DISABLE_SERVER_SIDE_CURSORS")
            if name in DATABASES["default"]
        },
        # The driver's options this file sets, not the primary URL's own (its
        # target_session_attrs=read-write would refuse every standby).
        "OPTIONS": {
            **{
                name: value
                for name, value in DATABASES["default"].get("OPTIONS", {}).items()
                if name in ("server_side_binding", "prepare_threshold")
            },
            **_replica.get("OPTIONS", {}),
        },
    }
    DATABASE_ROUTERS = ["core.replica.ReplicaRouter"]
# How long a caller that wrote (an API key, or a browser session) reads from the
# primary, so that what it just wrote is what it reads back.
READ_YOUR_WRITES_SECONDS = env_int("READ_YOUR_WRITES_SECONDS", default=5, minimum=1)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Shared by every app process. Rate limits and the login throttle count in Redis when this is
# redis://…, else in the database's core_rate_counter table (core/counters.py); the default is
# a cache table in the main database (created by accounts' migration 0003).
CACHES = {"default": env_cache_url("CACHE_URL", default="dbcache://django_cache")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

# docs/contract.md §26: pages in Khmer and English (core/languages.py chooses), the catalogues
# in locale/ (README.md, "Adding a language"); the API stays English.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("km", "ភាសាខ្មែរ")]
LOCALE_PATHS = [BASE_DIR / "locale"]
FORMAT_MODULE_PATH = ["config.formats"]  # Khmer dates and money (config/formats/km)
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
TIME_ZONE = env_time_zone("TIME_ZONE", default="Asia/Phnom_Penh")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(BASE_DIR / "staticfiles")))
# In production collectstatic writes hashed, compressed copies that whitenoise serves with
# far-future caching; a page naming a file collectstatic did not see fails loudly.
# Uploaded files (proof-of-delivery photos), never served as static: only through a signed
# URL (tracking/pages.py).
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(BASE_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "core.static.CompressedStatic"  # whitenoise's, brotli as STATIC_BROTLI says
    },
}
# Brotli copies beside the gzip ones at collectstatic (core/static.py): ~90 % of its CPU.
STATIC_BROTLI = env_bool("STATIC_BROTLI", default=True)
STATICFILES_DIRS = [BASE_DIR / "static"] if (BASE_DIR / "static").is_dir() else []
# Leaflet 1.9.3 as django-leaflet ships it (pinned in pyproject.toml), served by us as
# leaflet/leaflet.js and leaflet/leaflet.css: the tracking page's map needs no CDN. Only its
# files: as an app, its admin module would import GeoDjango.
STATICFILES_DIRS.append(
    ("leaflet", Path(find_spec("leaflet").submodule_search_locations[0]) / "static" / "leaflet")
)
# Straight from the source folders while developing; in production only collectstatic's
# output, so every file is served hashed and compressed.
WHITENOISE_USE_FINDERS = DEBUG
# Files browsers ask for at the site's root, /favicon.ico, served as they are (not hashed).
WHITENOISE_ROOT = BASE_DIR / "static" / "root"
# Source maps are fetched only by a browser's developer tools: served as they are, not
# compressed. Compressing them (brotli, at its best quality) was more than half of
# collectstatic's time, on every deploy (docs/decisions.md, "Static files: no compressed
# source maps, brotli switchable").
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = [*Compressor.SKIP_COMPRESS_EXTENSIONS, "map"]

EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
# The SMTP server of django.core.mail.backends.smtp.EmailBackend (recipients' emails too:
# docs/notifications.md). Django's defaults: localhost:25, no login, no TLS.
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env_int("EMAIL_PORT", default=25, minimum=1)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", default=False)

# --- The product's own settings (docs/contract.md §4, §7, §8, §10) ---
# Every number, amount and choice goes through core/strict_env.py: a mistyped value stops the
# start with a message naming the variable, never a silent default.
SERVICE_COUNTRY = env_matching(
    "SERVICE_COUNTRY", "KH", r"[A-Z]{2}", "two capital letters (ISO 3166), e.g. KH"
)
CURRENCY = env_matching(
    "CURRENCY", "USD", r"[A-Z]{3}", "three capital letters (ISO 4217), e.g. USD"
)
SANDBOX_STARTING_BALANCE = env_decimal(
    "SANDBOX_STARTING_BALANCE", default="100.00", minimum=Decimal(0), places=2
)
MAX_BODY_BYTES = env_int("MAX_BODY_BYTES", default=10 * 1024 * 1024, minimum=1)
MAX_DROPS_PER_BATCH = env_int("MAX_DROPS_PER_BATCH", default=5000, minimum=1)
# The most cash a courier collects for one drop (docs/contract.md §18, INVALID_COD).
COD_MAX_AMOUNT = env_decimal("COD_MAX_AMOUNT", default="500.00", minimum=Decimal("0.01"), places=2)
# A courier holding more cash than this is offered no COD order until they hand it over at
# the hub (docs/contract.md §23).
COURIER_CASH_LIMIT = env_decimal(
    "COURIER_CASH_LIMIT", default="300.00", minimum=Decimal("0.00"), places=2
)
MAX_TRACKING_IDENTIFIERS = env_int("MAX_TRACKING_IDENTIFIERS", default=1000, minimum=1)
MAX_ACTIVE_KEYS_PER_ENVIRONMENT = env_int("MAX_ACTIVE_KEYS_PER_ENVIRONMENT", default=10, minimum=1)
SUPPORT_EMAIL = env.str("SUPPORT_EMAIL", default="support@example.com")
# The ETA model of docs/contract.md §14 (tracking/eta.py).
DISPATCH_MINUTES = env_int("DISPATCH_MINUTES", default=15, minimum=0)
COURIER_SPEED_KMH = env_float("COURIER_SPEED_KMH", default=25.0, above=0)
# Streets are not straight: the planner's riding distance is the great-circle km × this
# (dispatch/travel.py).
ROAD_FACTOR = env_float("ROAD_FACTOR", default=1.3, above=0)
HANDLING_MINUTES = env_int("HANDLING_MINUTES", default=5, minimum=0)
# Drop-off windows (docs/contract.md §17, orders/windows.py): the shortest window a drop may
# ask for, and how far ahead its start may be.
MIN_WINDOW_MINUTES = env_int("MIN_WINDOW_MINUTES", default=30, minimum=0)
MAX_SCHEDULE_DAYS = env_int("MAX_SCHEDULE_DAYS", default=7, minimum=1)
# The recipient's side (docs/contract.md §14). Links are BASE_URL + /t/<token>; without BASE_URL
# (a local run) they point at PUBLIC_URL_FALLBACK.
PUBLIC_URL_FALLBACK = "http://127.0.0.1:8000"
# Map tiles behind the pins of every map (the tracking page, the dashboard's order and batch
# pages): OpenStreetMap's by default, a self-hosted tile server's URL, or `off` (no tiles: the
# pins and the service areas still draw, and no page calls out). docs/deployment.md.
OSM_TILE_URL = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
OSM_ATTRIBUTION = (
    '&copy; <a href="https://www.openstreetmap.org/copyright">OpenStreetMap</a> contributors'
)
TRACKING_TILE_URL = env_matching(
    "TRACKING_TILE_URL",
    OSM_TILE_URL,
    r"off|(?=\S*\{z\})(?=\S*\{x\})(?=\S*\{y\})https?://[^/\s?#]+/\S*",
    "`off` or an http(s) URL with {z}, {x} and {y}, e.g. " + OSM_TILE_URL,
)
if TRACKING_TILE_URL == "off":
    TRACKING_TILE_URL = ""
# HTML shown in the map's corner. Unset: OpenStreetMap's, which tiles drawn from its data
# (most self-hosted servers' too) must show.
TRACKING_TILE_ATTRIBUTION = env.str("TRACKING_TILE_ATTRIBUTION", default="") or OSM_ATTRIBUTION
# The page reloads itself this often while the drop is active.
TRACKING_PAGE_REFRESH_SECONDS = env_int("TRACKING_PAGE_REFRESH_SECONDS", default=15, minimum=1)
# Per client address, across every tracking page.
RATE_LIMIT_TRACKING_PAGE = env_rate("RATE_LIMIT_TRACKING_PAGE", default="60/minute")
# A proof-of-delivery photo URL works this long after it was handed out.
POD_PHOTO_URL_SECONDS = env_int("POD_PHOTO_URL_SECONDS", default=3600, minimum=1)
# Wrong PINs before the drop fails with WRONG_PIN.
MAX_PIN_ATTEMPTS = env_int("MAX_PIN_ATTEMPTS", default=3, minimum=1)
# The sandbox test driver walks a scenario one step this often (tracking/scenarios.py).
SANDBOX_STEP_SECONDS = env_float("SANDBOX_STEP_SECONDS", default=10.0, above=0)

# Couriers (docs/contract.md §20): the shortest password, how far ahead of the server a
# phone's clock may be before its points are ignored, how long the trail is kept, how old a
# position may be and still be shown, and how often order.courier_position may go out.
COURIER_MIN_PASSWORD = env_int("COURIER_MIN_PASSWORD", default=8, minimum=6)
COURIER_CLOCK_SKEW_SECONDS = env_int("COURIER_CLOCK_SKEW_SECONDS", default=60, minimum=0)
COURIER_TRAIL_HOURS = env_int("COURIER_TRAIL_HOURS", default=24, minimum=1)
COURIER_POSITION_FRESH_SECONDS = env_int("COURIER_POSITION_FRESH_SECONDS", default=120, minimum=1)
COURIER_EVENT_SECONDS = env_int("COURIER_EVENT_SECONDS", default=30, minimum=1)
MAX_COURIER_POINTS = 100
# Dispatch (docs/contract.md §21, dispatch/): how long a courier has to accept an offer; after
# how long an order nobody accepted is flagged for operators; how old a courier's last position
# may be to be offered anything; how far from the pickup a courier is looked for (the box of
# the candidates' index); how often the dispatcher runs (a periodic job, core/schedule.py).
OFFER_SECONDS = env_int("OFFER_SECONDS", default=60, minimum=5)
# The planner (dispatch/solver.py): how often it plans the waiting orders into the couriers'
# runs, and how long the solver may search each time.
PLAN_SECONDS = env_int("PLAN_SECONDS", default=15, minimum=1)
PLAN_TIME_LIMIT_SECONDS = env_float("PLAN_TIME_LIMIT_SECONDS", default=2.0, above=0)
# How far ahead a courier's run is planned: nothing is added to a run that would end later
# than this from now (nor past the courier's shift), so work spreads over the fleet; but an
# idle courier's one order, or an order longer than this by itself (docs/dispatch.md).
RUN_HORIZON_MINUTES = env_int("RUN_HORIZON_MINUTES", default=90, minimum=5)
# How waiting orders reach couriers: "runs" (the planner: many orders per run) or "nearest"
# (one order at a time to the nearest free courier: the benchmark's baseline).
DISPATCH_PLANNER = env_choice("DISPATCH_PLANNER", default="runs", choices=("runs", "nearest"))
DISPATCH_ESCALATE_MINUTES = env_int("DISPATCH_ESCALATE_MINUTES", default=10, minimum=1)
DISPATCH_POSITION_MINUTES = env_int("DISPATCH_POSITION_MINUTES", default=5, minimum=1)
DISPATCH_RADIUS_KM = env_float("DISPATCH_RADIUS_KM", default=15.0, above=0)
QUOTE_TTL_MINUTES = env_int("QUOTE_TTL_MINUTES", default=15, minimum=1)
IDEMPOTENCY_TTL_HOURS = env_int("IDEMPOTENCY_TTL_HOURS", default=24, minimum=1)
# Per API key, "<requests>/<second|minute|hour|day>" (core/throttling.py).
RATE_LIMIT_DEFAULT = env_rate("RATE_LIMIT_DEFAULT", default="1200/minute")
RATE_LIMIT_BULK = env_rate("RATE_LIMIT_BULK", default="120/minute")
# The geocoder chain, tried in order until one finds the address (geo/geocoders.py,
# docs/deployment.md). GEOCODER, its one-provider name before chains, would now be ignored:
# it stops the start instead, so no deployment quietly loses its HTTP provider.
refuse_retired(
    "GEOCODER",
    "the setting is now GEOCODERS, a chain tried in order, e.g. GEOCODERS=gazetteer,nominatim.",
)
GEOCODERS = env_choice_list(
    "GEOCODERS", default=["gazetteer"], choices=("gazetteer", "nominatim", "photon")
)
NOMINATIM_URL = env_url("NOMINATIM_URL", default="https://nominatim.openstreetmap.org")
NOMINATIM_TIMEOUT_SECONDS = env_float("NOMINATIM_TIMEOUT_SECONDS", default=3.0, above=0)
# Sent by both HTTP providers: Nominatim's usage policy asks for an identifying one.
NOMINATIM_USER_AGENT = env.str("NOMINATIM_USER_AGENT", default="delivery-orders/0.1")
PHOTON_URL = env_url("PHOTON_URL", default="https://photon.komoot.io")
PHOTON_TIMEOUT_SECONDS = env_float("PHOTON_TIMEOUT_SECONDS", default=3.0, above=0)
# seed_demo's `admin` superuser: made with this password, or with `admin` when DEBUG is on;
# with neither, no superuser (docs/contract.md §9).
DEMO_ADMIN_PASSWORD = env.str("DEMO_ADMIN_PASSWORD", default="")
# Cached geocoder answers live this long; purge_geocode_cache deletes them after.
GEOCODE_TTL_DAYS = env_int("GEOCODE_TTL_DAYS", default=30, minimum=1)
GEOCODE_NEGATIVE_TTL_HOURS = env_int("GEOCODE_NEGATIVE_TTL_HOURS", default=24, minimum=1)

# Django reads the body into memory up to this size; past it we answer 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_BODY_BYTES
DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000

# Webhooks (docs/contract.md §11). Plain http and private addresses (this machine, a LAN) only
# for local demos and tests: by default where `make run` runs, DEBUG on with the embedded
# SQLite database; never by default in production (DEBUG off, or PostgreSQL). events/ssrf.py
# reads it (docs/webhooks.md, "Try it locally").
WEBHOOK_ALLOW_PRIVATE_URLS = env_bool(
    "WEBHOOK_ALLOW_PRIVATE_URLS",
    default=DEBUG and DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3",
)
# Seconds between a failed attempt and the next, then the delivery is FAILED (events/delivery.py).
WEBHOOK_RETRY_SCHEDULE = env_int_list(
    "WEBHOOK_RETRY_SCHEDULE", default=[5, 300, 1800, 7200, 18000, 36000, 36000], minimum=1
)
# An endpoint failing with no success for this long is disabled.
WEBHOOK_DISABLE_AFTER_DAYS = env_int("WEBHOOK_DISABLE_AFTER_DAYS", default=5, minimum=1)
# A 2xx within WEBHOOK_TIMEOUT_SECONDS in all (connecting within the second) is a success.
WEBHOOK_TIMEOUT_SECONDS = env_float("WEBHOOK_TIMEOUT_SECONDS", default=10.0, above=0)
WEBHOOK_CONNECT_TIMEOUT_SECONDS = env_float("WEBHOOK_CONNECT_TIMEOUT_SECONDS", default=3.0, above=0)
# A worker's sender keeps up to this many attempts in flight, at most WEBHOOK_PER_ENDPOINT to
# one endpoint (events/delivery.py): a receiver that never answers costs a socket, not a worker.
WEBHOOK_CONCURRENCY = env_int("WEBHOOK_CONCURRENCY", default=100, minimum=1)
WEBHOOK_PER_ENDPOINT = env_int("WEBHOOK_PER_ENDPOINT", default=5, minimum=1)
# Events (and their deliveries) are kept this long; purge_old_events deletes them after.
EVENT_RETENTION_DAYS = env_int("EVENT_RETENTION_DAYS", default=30, minimum=1)

# Recipient notifications (docs/notifications.md). SMS through a Twilio-compatible API
# (empty SMS_API_URL: SMS messages fail, "not configured"); email through EMAIL_* above.
SMS_API_URL = env_url("SMS_API_URL", default="")
SMS_ACCOUNT_SID = env.str("SMS_ACCOUNT_SID", default="")
SMS_AUTH_TOKEN = env.str("SMS_AUTH_TOKEN", default="")
SMS_FROM = env.str("SMS_FROM", default="")
NOTIFY_FROM_EMAIL = env.str("NOTIFY_FROM_EMAIL", default="notifications@example.com")
# "Courier nearby": the courier's reported position within this distance of the drop.
NOTIFY_NEARBY_METERS = env_int("NOTIFY_NEARBY_METERS", default=500, minimum=1)
# The throttle: at most this many messages to one address per channel in any hour.
NOTIFY_PER_RECIPIENT_PER_HOUR = env_int("NOTIFY_PER_RECIPIENT_PER_HOUR", default=6, minimum=1)
# Attempts of a message whose failures surely left it unsent; each send's timeout.
NOTIFY_MAX_ATTEMPTS = env_int("NOTIFY_MAX_ATTEMPTS", default=3, minimum=1)
NOTIFY_TIMEOUT_SECONDS = env_float("NOTIFY_TIMEOUT_SECONDS", default=10.0, above=0)
# An event older than this when read calls for no message (news too late to be news).
NOTIFY_MAX_EVENT_AGE_MINUTES = env_int("NOTIFY_MAX_EVENT_AGE_MINUTES", default=60, minimum=1)
# The delivery log is kept this long (notifications.tasks.purge_old_messages, hourly).
NOTIFY_LOG_DAYS = env_int("NOTIFY_LOG_DAYS", default=30, minimum=1)

# Background work (docs/contract.md §15): task rows written in the transaction that asks for them,
# run by `manage.py db_worker` processes (any number, on any number of machines).
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        "QUEUES": ["default"],
    }
}
# Started beside the task loop by each `manage.py db_worker` (core/management/commands/
# db_worker.py) and stopped with it: each a callable answering something with a `stop()`.
# The webhook sender keeps deliveries in flight while the worker runs other tasks.
TASK_WORKER_COMPANIONS = ["events.delivery.start_sender"]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["accounts.auth.ApiKeyAuthentication"],
    # Who may call (accounts/permissions.py); a view adds its own after these.
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "accounts.permissions.AccountIsActive",
        "accounts.permissions.LiveAccessEnabled",
    ],
    "DEFAULT_PARSER_CLASSES": ["core.api.JsonParser"],
    "DEFAULT_RENDERER_CLASSES": ["core.api.JsonRenderer"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "core.api.AlwaysJson",
    "EXCEPTION_HANDLER": "core.api.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_THROTTLE_CLASSES": ["core.throttling.ApiKeyRateThrottle"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # OPTIONS answers 405 METHOD_NOT_ALLOWED in the envelope, not DRF's view metadata.
    "DEFAULT_METADATA_CLASS": None,
}

# The OpenAPI schema at /api/v1/schema/ and its docs page (core/openapi.py; each app
# documents its own endpoints in its schema.py); the page's
# assets come from drf-spectacular-sidecar's static files, never from a CDN.
SPECTACULAR_SETTINGS = {
    "TITLE": "Delivery Orders API",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_ADD_EXPLICIT_BLANK_NULL_CHOICE": False,
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,
    "ENUM_NAME_OVERRIDES": {
        "FailureReason": "orders.schema.FAILURE_REASONS",
        "DropStatus": "orders.schema.DROP_STATUSES",
        "BatchStatus": "orders.schema.BATCH_STATUSES",
        "WindowStatus": "orders.schema.WINDOW_STATUSES",
        "UndeliverableAction": "orders.schema.UNDELIVERABLE_ACTION_VALUES",
        "ParcelSize": "orders.inputs.PARCEL_SIZES",
        "CodStatus": "tracking.schema.COD_STATUSES",
        "Environment": "accounts.schema.ENVIRONMENTS",
        "BillingModel": "accounts.schema.BILLING_MODELS",
        "InvoiceStatus": "billing.schema.INVOICE_STATUSES",
        "AdvanceTarget": "tracking.inputs.ADVANCE_TARGET_VALUES",
        "Weekday": "geo.schema.WEEKDAYS",
        "EventType": "events.inputs.EVENT_TYPES",
        "SubscribedEventType": "events.inputs.SUBSCRIBABLE_TYPES",
        "DeliveryStatus": "events.schema.DELIVERY_STATUSES",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.openapi.describe_api",
        "orders.schema.describe_address",
    ],
}

# One JSON object per line on stderr, each with the request id (core/logging.py); the
# "api.access" logger writes one line per API request. LOG_FORMAT=text is one readable line
# a record instead: `make run` asks for it, with LOG_LEVEL=WARNING, so that its printed logins
# stay in sight (docs/deployment.md).
LOG_FORMAT = env_choice("LOG_FORMAT", default="json", choices=("json", "text"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "core.logging.RequestIdFilter"}},
    "formatters": {
        "json": {"()": "core.logging.JsonFormatter"},
        "text": {"()": "core.logging.TextFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "root": {
        "handlers": ["console"],
        "level": env_choice(
            "LOG_LEVEL", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
        ),
    },
    "loggers": {
        "django.request": {"level": "ERROR"},
        # The MCP SDK says INFO at every start and end of the session manager that /mcp
        # runs per request (agents/server.py); the access log already has the request.
        "mcp": {"level": "WARNING"},
    },
}
