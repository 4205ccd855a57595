"""Django settings for artoo_web, read from the environment only.

Every variable is listed with its default in docs/configuration.md.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from artoo_web import livefile
from artoo_web.env import envbool, envint, envlist, envmcp, envnetwork, envstr
from roles.ggs import control

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(envstr("ARTOO_DATA_DIR", str(BASE_DIR / ".artoo"))).resolve()
WORKSPACE = Path(envstr("ARTOO_WORKSPACE", str(DATA_DIR / "workspace"))).resolve()
MEMORY_PATH = Path(envstr("ARTOO_MEMORY_PATH", str(DATA_DIR / "memory.leveldb")))
# Beside `make run`, its live file gives what the environment leaves unset: the
# generated key, the embedded Redis's URL, the database (artoo_web/livefile.py).
LIVE_ENV = livefile.environ(DATA_DIR)

DEBUG = envbool("DEBUG", False)
SECRET_KEY = envstr("SECRET_KEY", env=LIVE_ENV)
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is required when DEBUG is off: set it, or start artoo "
            f"once with make run, which leaves one in {DATA_DIR} for other commands"
        )
    SECRET_KEY = "insecure-debug-only-key"  # noqa: S105 (DEBUG only)

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = envlist(
    "CSRF_TRUSTED_ORIGINS", "http://127.0.0.1:8000,http://localhost:8000"
)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "artoo_web",
    "artoo_web.logins",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "artoo_web.middleware.ContentSecurityPolicy",
    "artoo_web.middleware.ApiErrors",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last: it turns a refused log-in into the lockout page, whatever the view
    # answered, and sets the device cookie of a successful one.
    "artoo_web.logins.web.LoginLockout",
]

ROOT_URLCONF = "artoo_web.urls"
ASGI_APPLICATION = "artoo_web.asgi.application"
WSGI_APPLICATION = "artoo_web.wsgi.application"

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


DB_CONN_MAX_AGE_S = 60


def _sqlite() -> dict:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    # WAL lets readers run beside the writer; IMMEDIATE takes the write lock at
    # BEGIN so two writers queue on the busy timeout instead of failing.
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DATA_DIR / "db.sqlite3",
        "OPTIONS": {
            "timeout": envint("ARTOO_SQLITE_TIMEOUT_S", 30, minimum=1),
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        "TEST": {"NAME": DATA_DIR / "test-db.sqlite3"},
        # Kept for a minute, as a PostgreSQL connection is: each hop of a run
        # is a Celery task, and opening a connection for each cost about a
        # millisecond of CPU (eleven per run).
        "CONN_MAX_AGE": DB_CONN_MAX_AGE_S,
    }


DATABASE_URL = envstr("DATABASE_URL", env=LIVE_ENV)
if DATABASE_URL:
    try:
        DATABASES = {
            "default": dj_database_url.parse(
                DATABASE_URL,
                conn_max_age=DB_CONN_MAX_AGE_S,
                # A kept connection the server closed is replaced, not used.
                conn_health_checks=True,
            )
        }
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is malformed: {exc}") from None
else:
    DATABASES = {"default": _sqlite()}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "run-list"
LOGOUT_REDIRECT_URL = "login"

# Login throttling (artoo_web/logins) on /login/ and /admin/login/ alike. A
# successful log-in gives the browser a signed device cookie for that username
# (ARTOO_LOGIN_DEVICE_DAYS). An attempt presenting it is counted for that
# username on that browser only: failures sent from anywhere else, the same
# shared address included, never lock it out. An attempt without it is counted
# per (username, address): ARTOO_LOGIN_FAILURE_LIMIT failures in a row refuse
# that username from that address for ARTOO_LOGIN_COOLOFF_S, the right password
# too; and per address across usernames: ARTOO_LOGIN_ADDRESS_FAILURE_LIMIT
# refuse every cookieless attempt from it for ARTOO_LOGIN_ADDRESS_COOLOFF_S.
# API tokens never pass through authenticate(), so the API is not throttled.
AUTHENTICATION_BACKENDS = [
    "artoo_web.logins.web.ThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
ARTOO_LOGIN_THROTTLE = envbool("ARTOO_LOGIN_THROTTLE", True)
ARTOO_LOGIN_FAILURE_LIMIT = envint("ARTOO_LOGIN_FAILURE_LIMIT", 5, minimum=1)
ARTOO_LOGIN_COOLOFF_S = envint("ARTOO_LOGIN_COOLOFF_S", 900, minimum=1)
ARTOO_LOGIN_ADDRESS_FAILURE_LIMIT = envint(
    "ARTOO_LOGIN_ADDRESS_FAILURE_LIMIT", 20, minimum=1
)
ARTOO_LOGIN_ADDRESS_COOLOFF_S = envint("ARTOO_LOGIN_ADDRESS_COOLOFF_S", 300, minimum=1)
ARTOO_LOGIN_DEVICE_DAYS = envint("ARTOO_LOGIN_DEVICE_DAYS", 180, minimum=1)

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
# The pages load scripts and styles from static files only (no inline script or
# style, no eval); the live stream's websocket is same-origin ('self').
ARTOO_CSP = envstr(
    "ARTOO_CSP",
    "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self'; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'",
)

REDIS_URL = envstr("REDIS_URL", "redis://127.0.0.1:6379/0", env=LIVE_ENV)
# Where the web process answers (for links printed by commands).
ARTOO_WEB_URL = envstr(
    "ARTOO_WEB_URL",
    f"http://127.0.0.1:{envstr('ARTOO_PORT', '8000')}",
    env=LIVE_ENV,
)

ARTOO_MAX_INPUT_CHARS = envint("ARTOO_MAX_INPUT_CHARS", 20_000, minimum=1)
# Per-user limits on submitting runs (0: none). 20 active leaves room for a
# user's ten long runs and ten more; 30 a minute is a run every 2 s, sustained.
ARTOO_USER_ACTIVE_RUNS = envint("ARTOO_USER_ACTIVE_RUNS", 20, minimum=0)
ARTOO_USER_RUNS_PER_MINUTE = envint("ARTOO_USER_RUNS_PER_MINUTE", 30, minimum=0)
# Subtasks executing at once across the pipeline workers, shared fairly between
# users (roles/fairshare.py; 0: no limit). The Procfile's worker has 12 threads:
# 9 for subtasks, the rest for the other roles' short handlers.
ARTOO_SUBTASK_SLOTS = envint("ARTOO_SUBTASK_SLOTS", 9, minimum=0)
ARTOO_SWEEP_AFTER_S = envint("ARTOO_SWEEP_AFTER_S", 60, minimum=1)
ARTOO_TASK_TIME_LIMIT_S = envint("ARTOO_TASK_TIME_LIMIT_S", 1800, minimum=10)

# Every shell command of a run executes in a sandbox (roles/tools/sandbox.py).
ARTOO_SANDBOX = envstr("ARTOO_SANDBOX", "on").strip().lower()
if ARTOO_SANDBOX not in ("on", "off"):
    raise ImproperlyConfigured(
        f"ARTOO_SANDBOX must be on or off, not {ARTOO_SANDBOX!r}"
    )
SANDBOX_DIR = DATA_DIR / "sandbox"
# What sandboxed commands reach on the network (roles/tools/egress.py): none,
# egress (out, never to this machine's loopback) or host (everything, Redis and
# PostgreSQL included: the operator's explicit choice, warned at start-up).
ARTOO_SANDBOX_NETWORK = envnetwork("ARTOO_SANDBOX_NETWORK")
ARTOO_SANDBOX_UID = envint("ARTOO_SANDBOX_UID", 65534, minimum=1)
ARTOO_SANDBOX_CPU_S = envint("ARTOO_SANDBOX_CPU_S", 120, minimum=1)
ARTOO_SANDBOX_MEMORY_MB = envint("ARTOO_SANDBOX_MEMORY_MB", 4096, minimum=64)
ARTOO_SANDBOX_PROCESSES = envint("ARTOO_SANDBOX_PROCESSES", 512, minimum=8)
ARTOO_SANDBOX_FILE_MB = envint("ARTOO_SANDBOX_FILE_MB", 1024, minimum=1)
# Disk quotas (roles/tools/diskquota.py; 0: none): the disk a command's writes
# take and the entries it makes, per command and per run; the apparent size of
# its files (sparse ones at full length); the free disk a command needs to start.
ARTOO_SANDBOX_QUOTA_MB = envint("ARTOO_SANDBOX_QUOTA_MB", 1024, minimum=0)
ARTOO_SANDBOX_RUN_QUOTA_MB = envint("ARTOO_SANDBOX_RUN_QUOTA_MB", 4096, minimum=0)
ARTOO_SANDBOX_QUOTA_FILES = envint("ARTOO_SANDBOX_QUOTA_FILES", 20000, minimum=0)
ARTOO_SANDBOX_APPARENT_MB = envint("ARTOO_SANDBOX_APPARENT_MB", 4096, minimum=0)
ARTOO_SANDBOX_MIN_FREE_MB = envint("ARTOO_SANDBOX_MIN_FREE_MB", 1024, minimum=0)
ARTOO_SANDBOX_ENV = envlist("ARTOO_SANDBOX_ENV")
ARTOO_ALLOWED_PATHS = [Path(p).resolve() for p in envlist("ARTOO_ALLOWED_PATHS")]
ARTOO_USER_SHARED = envbool("ARTOO_USER_SHARED", False)
ARTOO_SHELL_TIMEOUT_S = envint("ARTOO_SHELL_TIMEOUT_S", 30, minimum=1)
# MCP servers whose tools R3 is offered (docs/mcp.md); unset: none.
ARTOO_MCP_SERVERS = envmcp("ARTOO_MCP_CONFIG")

# The control strategy of a run submitted without one (roles/ggs/control.py).
ARTOO_CONTROL = envstr("ARTOO_CONTROL", control.DEFAULT).strip().lower()
if ARTOO_CONTROL not in control.NAMES:
    raise ImproperlyConfigured(
        f"ARTOO_CONTROL must be one of {', '.join(control.NAMES)}, "
        f"not {ARTOO_CONTROL!r}"
    )

# The loop's clocks and the bus's delivery policy.
ARTOO_APPROVAL_TIMEOUT_S = envint("ARTOO_APPROVAL_TIMEOUT_S", 300, minimum=1)
ARTOO_MEMORY_TIMEOUT_S = envint("ARTOO_MEMORY_TIMEOUT_S", 5, minimum=1)
ARTOO_WEB_MEMORY_TIMEOUT_S = envint("ARTOO_WEB_MEMORY_TIMEOUT_S", 5, minimum=1)
ARTOO_FANIN_DEADLINE_S = envint("ARTOO_FANIN_DEADLINE_S", 300, minimum=1)
ARTOO_RUN_DEADLINE_S = envint("ARTOO_RUN_DEADLINE_S", 900, minimum=10)
# GGS's time budget (the spec's 300 s); Ω counts elapsed time against it.
ARTOO_TIME_BUDGET_S = envint("ARTOO_TIME_BUDGET_S", 300, minimum=1)
ARTOO_LEASE_S = envint("ARTOO_LEASE_S", 30, minimum=1)
ARTOO_HANDLER_ATTEMPTS = envint("ARTOO_HANDLER_ATTEMPTS", 3, minimum=1)
ARTOO_OFFLINE_LATENCY_MS = envint("ARTOO_OFFLINE_LATENCY_MS", 0, minimum=0)
ARTOO_AUDIT_WINDOW_S = envint("ARTOO_AUDIT_WINDOW_S", 300, minimum=1)
# Log how long each live frame took from Redis to the clients' queues.
ARTOO_LIVE_TIMINGS = envbool("ARTOO_LIVE_TIMINGS", False)
ARTOO_AUDIT_FANIN_DEADLINE_S = envint("ARTOO_AUDIT_FANIN_DEADLINE_S", 300, minimum=1)

# OpenTelemetry: every run's spans go to this OTLP/HTTP collector (its base URL,
# e.g. http://127.0.0.1:4318; docs/telemetry.md); unset, nothing is exported.
OTEL_EXPORTER_OTLP_ENDPOINT = envstr("OTEL_EXPORTER_OTLP_ENDPOINT").strip()
if OTEL_EXPORTER_OTLP_ENDPOINT and not OTEL_EXPORTER_OTLP_ENDPOINT.startswith(
    ("http://", "https://")
):
    raise ImproperlyConfigured(
        "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, "
        f"not {OTEL_EXPORTER_OTLP_ENDPOINT!r}"
    )
OTEL_SERVICE_NAME = envstr("OTEL_SERVICE_NAME").strip() or "artoo_web"

CELERY_BROKER_URL = REDIS_URL
# kombu's Redis transport with a channel that survives its server's crash.
CELERY_BROKER_TRANSPORT = "artoo_web.celery:RedisTransport"
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_DEFAULT_QUEUE = "pipeline"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = ARTOO_TASK_TIME_LIMIT_S
# A task runs at most ARTOO_TASK_TIME_LIMIT_S; the broker must not hand an
# unacknowledged message to a second worker while the first still runs it.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": ARTOO_TASK_TIME_LIMIT_S * 2}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = CELERY_BROKER_TRANSPORT_OPTIONS
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fixup closes every database connection around each task
# unless this is set (then it closes them every 1,000 tasks); the handlers in
# artoo_web/celery.py close them as Django's requests do instead: when older
# than CONN_MAX_AGE or broken.
CELERY_DB_REUSE_MAX = 1000
CELERY_BEAT_SCHEDULE = {
    "sweep-outbox": {
        "task": "artoo_web.tasks.sweep_outbox",
        "schedule": envint("ARTOO_SWEEP_EVERY_S", 30, minimum=1),
        "options": {"queue": "pipeline", "expires": 30},
    },
    "expire-stuck-runs": {
        "task": "artoo_web.tasks.expire_stuck_runs",
        "schedule": 60,
        "options": {"queue": "pipeline", "expires": 60},
    },
    "verify-audit-chain": {
        "task": "artoo_web.tasks.verify_audit_chain",
        "schedule": envint("ARTOO_AUDIT_VERIFY_EVERY_S", 6 * 3600, minimum=1),
        "options": {"queue": "pipeline", "expires": 3600},
    },
    "dream": {
        "task": "artoo_web.tasks.dream",
        "schedule": envint("ARTOO_DREAM_EVERY_S", 300, minimum=1),
        "options": {"queue": "memory", "expires": 300},
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}
    },
    "filters": {"expected": {"()": "artoo_web.logfilters.ExpectedInOneLine"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["expected"],
        }
    },
    "root": {"handlers": ["console"], "level": envstr("ARTOO_LOG_LEVEL", "INFO")},
}
