"""Rejudge settings: one module, configured by environment variables.

With no variable set this is the embedded default: an SQLite file under var/, Celery tasks run
eagerly in the web process, media under var/media. The production shape (docker-compose.yml)
sets DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY and DEBUG=0.
"""
from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

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


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "rejudge-embedded-default-not-for-production")
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

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
    "annotation",
    "api",
    "frontend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
if not os.environ.get("DATABASE_URL"):
    VAR_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {"default": dj_database_url.parse(os.environ.get("DATABASE_URL") or DEFAULT_SQLITE_URL, conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite is single-writer: take the write lock at BEGIN so concurrent requests queue
    # instead of failing with "database is locked" when a read lock cannot be upgraded.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("REJUDGE_TEST_DATABASE_NAME") or None}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = ["annotation.auth_backends.RoleAwareModelBackend"]

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
# Uploaded run and dataset files wait here for their import job; never served over HTTP.
UPLOAD_ROOT = Path(os.environ.get("UPLOAD_ROOT", VAR_DIR / "uploads"))
EXPORT_ROOT = Path(os.environ.get("EXPORT_ROOT", VAR_DIR / "exports"))
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
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Rejudge API",
    "DESCRIPTION": "Human relevance judgments for text-to-video retrieval benchmarks.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
}

# --- Cache: job progress lives here so a job can report it while its import transaction is open.
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
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE = {
    "release-expired-leases": {"task": "annotation.tasks.release_expired_leases", "schedule": 60.0},
    "release-expired-ranking-leases": {"task": "annotation.tasks.release_expired_ranking_leases", "schedule": 60.0},
}

# --- Rejudge --------------------------------------------------------------------------------
REJUDGE = {
    "MAX_RUN_DEPTH": env_int("REJUDGE_MAX_RUN_DEPTH", 1000),
    "IMPORT_ERROR_CAP": env_int("REJUDGE_IMPORT_ERROR_CAP", 100),
    "IMPORT_BATCH_SIZE": env_int("REJUDGE_IMPORT_BATCH_SIZE", 5000),
    "LEASE_SECONDS": env_int("REJUDGE_LEASE_SECONDS", 300),
    "BROKEN_REPORTS_BEFORE_SET_ASIDE": env_int("REJUDGE_BROKEN_REPORTS_BEFORE_SET_ASIDE", 3),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
