"""Rejudge settings: one module, configured by environment variables.

With no variable set this is the embedded default: an SQLite file under var/, Celery tasks run
eagerly in the web process, media under var/media. The production shape (docker-compose.yml)
sets DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY and DEBUG=0.
"""
from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("REJUDGE_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def env_rate(name: str, default: str) -> str | None:
    """A DRF throttle rate such as '1200/min'; 'off' turns that throttle off."""
    value = (os.environ.get(name) or default).strip()
    if value.lower() in {"off", "none"}:
        return None
    if not re.fullmatch(r"[1-9]\d*/(s|sec|second|m|min|minute|h|hour|d|day)", value):
        raise ImproperlyConfigured(f"{name}={value!r}: expected a rate such as '1200/min' (per s, min, hour or day) or 'off'")
    return value


# --- Security: key, hosts, HTTPS, headers ------------------------------------------------------
DEBUG = env_bool("DEBUG", False)
# A 500 with DEBUG on (the demo) shows admins a traceback without settings or the environment, and
# everyone else the ordinary error page (config/error_reports.py says why).
DEFAULT_EXCEPTION_REPORTER = "config.error_reports.AdminsOnlyExceptionReporter"
DEFAULT_EXCEPTION_REPORTER_FILTER = "config.error_reports.NoEnvironmentFilter"
EMBEDDED_SECRET_KEY = "rejudge-embedded-default-not-for-production"


def _secret_key() -> str:
    """SECRET_KEY, else the file SECRET_KEY_FILE (default var/secret_key, which scripts/demo.sh
    writes once). The public embedded key is only for DEBUG: with it, anyone could forge sessions."""
    key = os.environ.get("SECRET_KEY", "").strip()
    key_file = Path(os.environ.get("SECRET_KEY_FILE") or VAR_DIR / "secret_key")
    if not key and os.environ.get("SECRET_KEY_FILE") and not key_file.is_file():
        raise ImproperlyConfigured(f"SECRET_KEY_FILE={key_file} does not exist")
    if not key and key_file.is_file():
        key = key_file.read_text().strip()
    if key and key != EMBEDDED_SECRET_KEY:
        return key
    if DEBUG:
        return EMBEDDED_SECRET_KEY
    raise ImproperlyConfigured(
        "SECRET_KEY is not set and DEBUG is off: refusing to start with the public development key. Set SECRET_KEY "
        "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(50))'`) or SECRET_KEY_FILE, or DEBUG=1 on a "
        "development machine.")


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

# HTTPS is the default whenever DEBUG is off; REJUDGE_HTTPS=0 is for plain-http runs that are not a
# deployment (the test suite, benchmarks). Each setting can still be named on its own.
HTTPS = env_bool("REJUDGE_HTTPS", not DEBUG)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", HTTPS)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", HTTPS)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", HTTPS)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Joining the browsers' preload list is the domain owner's decision and takes months to undo, so it
# is opt-in; without it check --deploy would warn (W021) on every deployment that has not decided.
SILENCED_SYSTEM_CHECKS = ["security.W021"] if SECURE_HSTS_SECONDS and not SECURE_HSTS_PRELOAD else []


def _meta_key(header: str) -> str:
    """'X-Forwarded-Proto' -> 'HTTP_X_FORWARDED_PROTO', the name Django's request.META uses."""
    meta = header.strip().upper().replace("-", "_")
    return meta if not meta or meta.startswith("HTTP_") else f"HTTP_{meta}"


def _proxy_ssl_header(value: str) -> tuple[str, str] | None:
    """'X-Forwarded-Proto,https' -> ('HTTP_X_FORWARDED_PROTO', 'https'). Only set it behind a proxy
    that always overwrites that header, or any client can claim to be on https."""
    if not value.strip():
        return None
    header, sep, expected = (part.strip() for part in value.partition(","))
    if not sep or not header or not expected:
        raise ImproperlyConfigured(f"SECURE_PROXY_SSL_HEADER={value!r}: expected 'Header-Name,value', e.g. 'X-Forwarded-Proto,https'")
    return (_meta_key(header), expected)


SECURE_PROXY_SSL_HEADER = _proxy_ssl_header(os.environ.get("SECURE_PROXY_SSL_HEADER", ""))
USE_X_FORWARDED_HOST = env_bool("USE_X_FORWARDED_HOST", False)
# Django's defaults, stated because the tests and check --deploy rely on them.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Prometheus scrapes /metrics from inside the deployment's network, over http (config/metrics.py).
SECURE_REDIRECT_EXEMPT = [r"^metrics$"]
# The bearer token a Prometheus scrape sends for /metrics; unset, only signed-in staff may read it.
REJUDGE_METRICS_TOKEN = os.environ.get("REJUDGE_METRICS_TOKEN", "").strip()

# Content-Security-Policy (django-csp; Django's own arrives in 6.0): nothing inline, nothing from
# elsewhere, except clips, which may be referenced by https URL (REJUDGE_CSP_MEDIA_SRC narrows or
# widens that, space-separated). The data: image is the empty favicon.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "media-src": [SELF, *(os.environ.get("REJUDGE_CSP_MEDIA_SRC") or "https:").split()],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}
# With clips in a bucket (REJUDGE_STORAGE=s3), the player loads signed URLs from the store's origin.
if os.environ.get("REJUDGE_STORAGE", "").strip().lower() == "s3" and os.environ.get("AWS_S3_ENDPOINT_URL"):
    _store_origin = re.match(r"^(https?://[^/]+)", os.environ["AWS_S3_ENDPOINT_URL"].strip())
    if _store_origin and _store_origin.group(1) not in CONTENT_SECURITY_POLICY["DIRECTIVES"]["media-src"]:
        CONTENT_SECURITY_POLICY["DIRECTIVES"]["media-src"].append(_store_origin.group(1))

# Login lockout (django-axes): after REJUDGE_LOGIN_FAILURE_LIMIT wrong passwords, every password is
# refused from that address until REJUDGE_LOGIN_COOLOFF_MINUTES after the last try. Counted per
# (user name, address) and per address (one address trying many accounts), never per user name
# alone: a count by name let anyone lock any named account, the admin's included, by guessing
# from anywhere. One limit serves both, so the address count trips first (the pair states the
# rule's intent; axes takes one limit). A success clears the counts. The address is the one
# config.proxy.client_ip gives (REJUDGE_CLIENT_IP_HEADER behind a proxy).
AXES_FAILURE_LIMIT = env_int("REJUDGE_LOGIN_FAILURE_LIMIT", 10)
if AXES_FAILURE_LIMIT < 1:
    raise ImproperlyConfigured(f"REJUDGE_LOGIN_FAILURE_LIMIT={AXES_FAILURE_LIMIT}: must be at least 1")
AXES_COOLOFF_TIME = timedelta(minutes=env_int("REJUDGE_LOGIN_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # else every manage.py command starts with axes' banner
# Behind a reverse proxy every request comes from the proxy, which would lock everyone out at once:
# REJUDGE_CLIENT_IP_HEADER names the header where the proxy appends the client's address (e.g.
# X-Forwarded-For; the last entry is used, the one the proxy wrote). Unset: the connection's address.
CLIENT_IP_HEADER = _meta_key(os.environ.get("REJUDGE_CLIENT_IP_HEADER", ""))
AXES_CLIENT_IP_CALLABLE = "config.proxy.client_ip"
AXES_LOCKOUT_CALLABLE = "frontend.views.pages.login_locked"
# The recorded user name cut to axes' column: a longer one was an HTML 500 on every login page.
AXES_USERNAME_CALLABLE = "annotation.auth_backends.login_attempt_username"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc as static files: the docs pages use no CDN
    "csp",
    "axes",
    "django_guid",
    "annotation",
    "api",
    "frontend",
]

MIDDLEWARE = [
    # First: GET /healthz answers probes by address over plain http, before host checks and redirects.
    "config.health.HealthCheckMiddleware",
    # Request latency and status counts for /metrics (django-prometheus): outermost, to time it all.
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    # The request id that log lines carry (X-Request-ID).
    "django_guid.middleware.guid_middleware",
    "django.middleware.security.SecurityMiddleware",
    # Before anything reads the path or query: a NUL in them is a 400, not a database error.
    "api.middleware.RefuseNulMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.csp.CSPMiddleware",
    "config.request_metrics.PrometheusAfterMiddleware",
    # Last, as django-axes asks: it turns a refused login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

# --- Database -----------------------------------------------------------------------------
DEFAULT_SQLITE_URL = f"sqlite:///{VAR_DIR / 'rejudge.sqlite3'}"


def _private_sqlite_file(path: Path) -> None:
    """The embedded database holds API tokens and password hashes: readable by its owner only,
    whatever the umask (SQLite creates the file, and its journals with the file's mode, under the
    umask: 0644 in a usual shell). Made before SQLite opens it, or tightened if an older run left
    it open to others; a file someone else owns is left to them."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    info = path.stat()
    if info.st_uid == os.getuid() and info.st_mode & 0o077:
        path.chmod(0o600)


if not os.environ.get("DATABASE_URL"):
    _private_sqlite_file(VAR_DIR / "rejudge.sqlite3")
DATABASES = {"default": dj_database_url.parse(os.environ.get("DATABASE_URL") or DEFAULT_SQLITE_URL, conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite is single-writer: take the write lock at BEGIN so concurrent requests queue
    # instead of failing with "database is locked" when a read lock cannot be upgraded.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("REJUDGE_TEST_DATABASE_NAME") or None}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The axes backend comes first: it refuses a locked-out account before any password is checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "annotation.auth_backends.RoleAwareModelBackend"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
MEDIA_URL = "media/"
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))
# With a front server: after the access check, /media/ answers with X-Accel-Redirect to this
# internal prefix (e.g. "/protected-media/", an nginx `internal` location aliased to MEDIA_ROOT).
MEDIA_ACCEL_REDIRECT = os.environ.get("REJUDGE_MEDIA_ACCEL_REDIRECT", "")
# Uploaded run and dataset files wait here for their import job; never served over HTTP.
UPLOAD_ROOT = Path(os.environ.get("UPLOAD_ROOT", VAR_DIR / "uploads"))
EXPORT_ROOT = Path(os.environ.get("EXPORT_ROOT", VAR_DIR / "exports"))
# Imported judgment files and score-matrix runs, kept as imported; never served directly.
JUDGMENTS_ROOT = Path(os.environ.get("JUDGMENTS_ROOT", VAR_DIR / "judgments"))
RUNS_ROOT = Path(os.environ.get("RUNS_ROOT", VAR_DIR / "runs"))

# --- Storage: where the files above live (annotation/storage) -------------------------
# Every file one process writes and another reads (uploads, exports, report artefacts, proxy
# matrices, judgment files, score matrices, clips) goes through Django's storage API, one storage
# per area. REJUDGE_STORAGE=local (the embedded default) keeps the folders above; s3 puts each area
# under its own prefix of one bucket of any S3-compatible store (django-storages), so web servers
# and workers on different hosts share files through it. Clips and downloads are then served by
# short-lived signed URLs.
REJUDGE_STORAGE = (os.environ.get("REJUDGE_STORAGE") or "local").strip().lower()
if REJUDGE_STORAGE not in {"local", "s3"}:
    raise ImproperlyConfigured(f"REJUDGE_STORAGE must be 'local' or 's3', not {REJUDGE_STORAGE!r}")
STORAGE_AREAS = {"uploads": "UPLOAD_ROOT", "exports": "EXPORT_ROOT", "media": "MEDIA_ROOT",
                 "judgments": "JUDGMENTS_ROOT", "runs": "RUNS_ROOT"}
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Downloads of exports, matrices and judgment files from a bucket: `redirect` to a signed URL (the
# store sends the bytes) or `stream` through the web process (a store clients cannot reach).
REJUDGE_STORAGE_DOWNLOADS = (os.environ.get("REJUDGE_STORAGE_DOWNLOADS") or "redirect").strip().lower()
if REJUDGE_STORAGE_DOWNLOADS not in {"redirect", "stream"}:
    raise ImproperlyConfigured("REJUDGE_STORAGE_DOWNLOADS must be 'redirect' or 'stream'")
# Judgment files and score matrices are named by their checksum: a host reading them from a bucket
# keeps a copy here instead of downloading them for every report.
REJUDGE_STORAGE_CACHE_DIR = Path(os.environ.get("REJUDGE_STORAGE_CACHE_DIR") or VAR_DIR / "storage-cache")
# Releases (services/releases): anonymous visitors may read release pages and download archives
# only when this is on; admins and researchers always may, raters never.
REJUDGE_RELEASES_PUBLIC = env_bool("REJUDGE_RELEASES_PUBLIC", False)
# The site's public address (e.g. https://rejudge.example.org), written into a release's Croissant
# and CITATION.cff as where the release lives; empty leaves the url out of CITATION.cff.
REJUDGE_PUBLIC_URL = (os.environ.get("REJUDGE_PUBLIC_URL") or "").strip().rstrip("/")
# The most bytes of one answer a machine judge's run reads (runner/client.py): a verdict is a few
# hundred bytes, a chat answer with logprobs a few kilobytes; a larger answer is that pair's error.
REJUDGE_JUDGE_ANSWER_MAX_BYTES = env_int("REJUDGE_JUDGE_ANSWER_MAX_BYTES", 1 << 20)
if not 1024 <= REJUDGE_JUDGE_ANSWER_MAX_BYTES <= 1 << 30:
    raise ImproperlyConfigured("REJUDGE_JUDGE_ANSWER_MAX_BYTES must be from 1024 to 2^30 (bytes)")
if REJUDGE_STORAGE == "local":
    for _area, _root in STORAGE_AREAS.items():
        # The folder is read from settings at each use, so a test's override of EXPORT_ROOT holds.
        STORAGES[_area] = {"BACKEND": "annotation.storage.backends.LocalAreaStorage",
                           "OPTIONS": {"root_setting": _root}}
else:
    AWS_STORAGE_BUCKET_NAME = os.environ.get("AWS_STORAGE_BUCKET_NAME", "")
    if not AWS_STORAGE_BUCKET_NAME:
        raise ImproperlyConfigured("REJUDGE_STORAGE=s3 needs AWS_STORAGE_BUCKET_NAME")
    AWS_S3_ENDPOINT_URL = os.environ.get("AWS_S3_ENDPOINT_URL") or None  # None: AWS itself
    AWS_S3_REGION_NAME = os.environ.get("AWS_S3_REGION_NAME") or None
    # Keys come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (read by django-storages and boto3),
    # or from the host's role when unset.
    AWS_S3_ADDRESSING_STYLE = os.environ.get("AWS_S3_ADDRESSING_STYLE") or ("path" if AWS_S3_ENDPOINT_URL else None)
    AWS_S3_SIGNATURE_VERSION = "s3v4"
    AWS_QUERYSTRING_AUTH = True
    AWS_QUERYSTRING_EXPIRE = env_int("REJUDGE_SIGNED_URL_SECONDS", 300)
    AWS_DEFAULT_ACL = None
    AWS_S3_FILE_OVERWRITE = True  # names are chosen unique by the code (uuids, checksums, job ids)
    # Constant memory: writes go up as multipart parts of this size; reads spill to a temporary file
    # past AWS_S3_MAX_MEMORY_SIZE (django-storages' default, 0, would keep a whole file in memory).
    AWS_S3_FILE_BUFFER_SIZE = env_int("REJUDGE_S3_PART_BYTES", 8 * 1024 * 1024)
    AWS_S3_MAX_MEMORY_SIZE = env_int("REJUDGE_S3_MAX_MEMORY_BYTES", 8 * 1024 * 1024)
    _prefix = (os.environ.get("REJUDGE_S3_PREFIX") or "").strip("/")
    for _area in STORAGE_AREAS:
        STORAGES[_area] = {"BACKEND": "annotation.storage.backends.S3AreaStorage",
                           "OPTIONS": {"location": f"{_prefix}/{_area}" if _prefix else _area}}
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

# --- REST framework -------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "api.authentication.TokenWithRolesAuthentication",
        # An MTurk worker in MTurk's iframe (no cookies there): their study's work only. Last, as
        # DRF takes the first class's challenge to choose 401 or 403 for the anonymous.
        "api.authentication.StudyWorkerAuthentication",
    ],
    # Deny by default: every view states who may call it.
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
    "DEFAULT_SCHEMA_CLASS": "api.schema.RejudgeAutoSchema",
    # Our JSONParser turns deeply nested bodies into a 400 (DRF's lets RecursionError become a 500).
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JSONParser", "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
    # Limit/offset with a maximum page size (api/pagination.py); its default page is PAGE_SIZE.
    "DEFAULT_PAGINATION_CLASS": "api.pagination.RejudgePagination",
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    # The browsable API's HTML for staff only; everyone else gets JSON (api/negotiation.py).
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "api.negotiation.StaffBrowsableContentNegotiation",
    # Non-finite floats (a stored 1e308 averaged to infinity, NaN) render as null, not a 500.
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.JSONRenderer", "rest_framework.renderers.BrowsableAPIRenderer"],
}
# API rate limits, per user (token and session alike), per address for anonymous calls, and per user
# for file uploads (multipart POSTs: each starts an import job). A rater at full speed makes ~6
# requests/s; the defaults sit well above that. Counts live in the cache: set REDIS_URL when more
# than one web process serves, or each process counts on its own (the system check rejudge.E001,
# config/checks.py, refuses that with DEBUG off).
REST_FRAMEWORK |= {
    "DEFAULT_THROTTLE_CLASSES": ["config.throttling.AnonThrottle", "config.throttling.UserThrottle",
                                 "config.throttling.UploadThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_rate("REJUDGE_THROTTLE_ANON", "60/min"),
        "user": env_rate("REJUDGE_THROTTLE_USER", "1200/min"),
        "uploads": env_rate("REJUDGE_THROTTLE_UPLOADS", "120/hour"),
        # Study links (page and form) and the API arrival, per client address (config.proxy.client_ip):
        # each account a crowd worker makes is a rater in the pool, and each resume-code try a guess.
        # One arrival takes two (the link, then its form). A load rehearsal from one address raises it.
        "crowd_arrivals": env_rate("REJUDGE_THROTTLE_CROWD_ARRIVALS", "20/hour"),
        # Invitation links (services/accounts/invitations.py): made by an admin, per admin (one per
        # rater created without a password, or reset), and opened per client address (each try a
        # guess at a token; a rater opens the page, then sends its form).
        "invitations_issued": env_rate("REJUDGE_THROTTLE_INVITATIONS_ISSUED", "300/hour"),
        "invitation_uses": env_rate("REJUDGE_THROTTLE_INVITATION_USES", "30/hour"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Rejudge API",
    "DESCRIPTION": "Human relevance judgments for text-to-video retrieval benchmarks.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/v1/docs/ and /api/v1/redoc/ (api/docs.py) load these from STATIC_URL, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # <id:...> path parameters (api/bounds.py): integers the database holds.
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}},
    # One name for the relevant / not relevant answer, wherever a field carries it (an admin's
    # decision, a resolved label, a known answer).
    "ENUM_NAME_OVERRIDES": {"PairAnswerEnum": "annotation.models.pools.PooledPair.Answer",
                            # A rater's answer: submitted, changed, listed.
                            "LabelValueEnum": "annotation.models.labels.Label.Value",
                            # A strategy (build, PATCH) and the strategies a simulation replays.
                            "JudgingStrategyEnum": "annotation.analysis.judging.strategies.STRATEGIES",
                            # A job's status, and a submission's own (submitted, scored) beside it.
                            "JobStatusEnum": "annotation.models.jobs.Job.Status",
                            "SubmissionStatusEnum": "annotation.models.releases.Submission.Status"},
}

# --- Cache: job progress lives here so a job can report it while its import transaction is open.
# The throttles count here too: with DEBUG off and more than one web process, a per-process
# LocMemCache fails the system check rejudge.E001 (config/checks.py); set REDIS_URL.
REDIS_URL = os.environ.get("REDIS_URL") or os.environ.get("CELERY_BROKER_URL") or ""
if REDIS_URL.startswith("redis"):
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL,
                          "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "rejudge")}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Celery ---------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or os.environ.get("REDIS_URL") or ""
# No broker configured: run jobs eagerly in-process (the embedded default).
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", not CELERY_BROKER_URL)
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_BROKER_URL = CELERY_BROKER_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "rejudge")
# A job's message is acknowledged only once the job has ended, and handed back to the queue when
# the worker process running it dies, so a lost worker never loses a job. A job is claimed in the
# database before it runs (annotation/services/jobs/), so a message delivered twice runs it once.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis hands an unacknowledged message to another worker after this long. It must outlast the
# longest job (else the job's message comes back while it still runs: harmless thanks to the
# claim, but wasted); the reaper, not this timeout, is what recovers a job whose worker died.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("REJUDGE_JOB_VISIBILITY_TIMEOUT", 6 * 3600)}
REJUDGE_JOBS = {
    # A running job's worker renews its heartbeat this often...
    "HEARTBEAT_SECONDS": env_int("REJUDGE_JOB_HEARTBEAT_SECONDS", 30),
    # ...and a job whose heartbeat is older than this is taken back by the reaper.
    "STALE_AFTER_SECONDS": env_int("REJUDGE_JOB_STALE_AFTER_SECONDS", 300),
    "RECOVER_EVERY_SECONDS": env_int("REJUDGE_JOB_RECOVER_EVERY_SECONDS", 60),
    # Executions per submission when workers are lost (1 = never retried automatically).
    "MAX_ATTEMPTS": env_int("REJUDGE_JOB_MAX_ATTEMPTS", 2),
    # A job still queued this long after its message was sent is sent again (back-off doubling).
    "RESEND_AFTER_SECONDS": env_int("REJUDGE_JOB_RESEND_AFTER_SECONDS", 900),
    # Uploads of jobs that failed (and may be retried) are kept this long.
    "UPLOAD_RETENTION_DAYS": env_int("REJUDGE_UPLOAD_RETENTION_DAYS", 7),
    "MESSAGE_MAX_CHARS": 2000,
    "ERRORS_MAX": 100,
    "ERROR_TEXT_MAX_CHARS": 500,
    "ERRORS_MAX_BYTES": 64 * 1024,
}
if REJUDGE_JOBS["STALE_AFTER_SECONDS"] < 3 * REJUDGE_JOBS["HEARTBEAT_SECONDS"]:
    raise ImproperlyConfigured("REJUDGE_JOB_STALE_AFTER_SECONDS must be at least 3 heartbeats "
                               "(REJUDGE_JOB_HEARTBEAT_SECONDS), or live jobs would be taken for lost")
# The periodic upkeep goes to the jobs' queue unless REJUDGE_MAINTENANCE_QUEUE names another: a
# worker of its own on that queue keeps the reaper running while long jobs hold every other one.
REJUDGE_MAINTENANCE_QUEUE = os.environ.get("REJUDGE_MAINTENANCE_QUEUE") or CELERY_TASK_DEFAULT_QUEUE
_UPKEEP = {"queue": REJUDGE_MAINTENANCE_QUEUE}
CELERY_BEAT_SCHEDULE = {
    "release-expired-leases": {"task": "annotation.tasks.release_expired_leases", "schedule": 60.0, "options": _UPKEEP},
    "release-expired-ranking-leases": {"task": "annotation.tasks.release_expired_ranking_leases", "schedule": 60.0,
                                       "options": _UPKEEP},
    "recover-jobs": {"task": "annotation.tasks.recover_jobs", "schedule": float(REJUDGE_JOBS["RECOVER_EVERY_SECONDS"]),
                     "options": _UPKEEP},
    "clean-job-files": {"task": "annotation.tasks.clean_job_files", "schedule": 3600.0, "options": _UPKEEP},
}

# --- Rejudge --------------------------------------------------------------------------------
REJUDGE = {
    "MAX_RUN_DEPTH": env_int("REJUDGE_MAX_RUN_DEPTH", 1000),
    # The largest score matrix (.npz run) accepted, in captions x clips cells, checked on the
    # file's header before anything is decompressed: 100 million = 10,000 x 10,000, 800 MB as
    # float64 (400 MB as float32) held by the import. Hard ceiling 2**31 - 1 (Run.prediction_count).
    "SCORE_MATRIX_MAX_CELLS": env_int("REJUDGE_SCORE_MATRIX_MAX_CELLS", 100_000_000),
    "IMPORT_ERROR_CAP": env_int("REJUDGE_IMPORT_ERROR_CAP", 100),
    "IMPORT_BATCH_SIZE": env_int("REJUDGE_IMPORT_BATCH_SIZE", 5000),
    "LEASE_SECONDS": env_int("REJUDGE_LEASE_SECONDS", 300),
    "BROKEN_REPORTS_BEFORE_SET_ASIDE": env_int("REJUDGE_BROKEN_REPORTS_BEFORE_SET_ASIDE", 3),
    # A relevant / not relevant answer needs the clip watched this long (its span if shorter); the
    # server refuses one sooner than this after the lease was handed out. 0 turns the floor off.
    "MIN_WATCH_SECONDS": float(os.environ.get("REJUDGE_MIN_WATCH_SECONDS") or 2.0),
    # A judging page nobody has touched this long gives its pairs back (after a visible countdown).
    "IDLE_RELEASE_SECONDS": env_int("REJUDGE_IDLE_RELEASE_SECONDS", 300),
    # The statements every judged pair runs are prepared once per connection on PostgreSQL
    # (annotation/prepared.py). Off (0) behind a pooler that shares sessions between clients
    # (pgbouncer in transaction mode).
    "DB_PREPARED_STATEMENTS": env_bool("REJUDGE_DB_PREPARED_STATEMENTS", True),
}
# Outbound requests the workers make on an admin's say-so: machine judges' base URLs and clips'
# media URLs (annotation/services/outbound.py parses and applies these). Only public addresses
# on ports 80 and 443 by default; ALLOW_NETWORKS admits networks (e.g. "10.0.0.0/8" for a model
# server on the private network), ALLOW_PORTS ports and ranges ("8000,11434" or "8000-8099"; a
# range never opens a database's or cache's port such as 5432 or 6379, which must be listed alone).
REJUDGE_OUTBOUND = {
    "ALLOW_NETWORKS": os.environ.get("REJUDGE_OUTBOUND_ALLOW", ""),
    "ALLOW_PORTS": os.environ.get("REJUDGE_OUTBOUND_PORTS", ""),
    # A clip fetched by URL for a machine judge: at most this many bytes, within this many seconds.
    "MEDIA_MAX_BYTES": env_int("REJUDGE_OUTBOUND_MEDIA_MAX_BYTES", 1 << 30),
    "MEDIA_DEADLINE_SECONDS": env_int("REJUDGE_OUTBOUND_MEDIA_DEADLINE_SECONDS", 300),
}

# --- Logging -------------------------------------------------------------------------------
# One handler for everything. REJUDGE_LOG_FORMAT=json prints one JSON object per line (time, level,
# logger, message, request_id, and any extra fields) for a log collector; text (the default) the
# bare message. request_id is the request's X-Request-ID (django-guid: the proxy's, when it sends a
# valid one, else a new one, returned in the response), null outside a request.
REJUDGE_LOG_FORMAT = (os.environ.get("REJUDGE_LOG_FORMAT") or "text").strip().lower()
if REJUDGE_LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured(f"REJUDGE_LOG_FORMAT={REJUDGE_LOG_FORMAT!r}: expected 'text' or 'json'")
# Empty (as docker-compose.yml passes an unset one) is the default too.
LOG_LEVEL = (os.environ.get("LOG_LEVEL") or "INFO").strip().upper()
DJANGO_GUID = {"GUID_HEADER_NAME": "X-Request-ID", "VALIDATE_GUID": True, "RETURN_HEADER": True, "EXPOSE_HEADER": False}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_errors_without_traceback": {"()": "config.logging_filters.ClientErrorsWithoutTraceback"},
                "request_id": {"()": "django_guid.log_filters.CorrelationId", "correlation_id_field": "request_id"}},
    "formatters": {
        "text": {"format": "%(message)s"},
        "json": {"()": "config.logging_filters.JsonLinesFormatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": REJUDGE_LOG_FORMAT,
                             "filters": ["client_errors_without_traceback", "request_id"]}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        # Django's default config gives "django" its own console handler (DEBUG only) and lets it
        # propagate to the root's: every 4xx was printed twice. One handler, no propagation.
        "django": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        # It says at INFO, on every request, whether the header came with one.
        "django_guid": {"level": "WARNING"},
    },
}
# Celery workers print through this configuration too in JSON mode (by default Celery replaces the
# root logger's handlers with its own plain-text ones).
CELERY_WORKER_HIJACK_ROOT_LOGGER = REJUDGE_LOG_FORMAT != "json"
