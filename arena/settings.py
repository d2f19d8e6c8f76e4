"""Settings for LLM Arena. Every default is embedded so `make run` needs no config;
each can be overridden from the environment (see README, "Configuration")."""

import base64
import os
import secrets
from pathlib import Path
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

from inference import redis_connect

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("ARENA_DATA_DIR", BASE_DIR / "var")).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)


def _env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in ("1", "true", "yes", "on")


def _private_key(env_name: str, file_name: str, make) -> str:
    """The environment's `env_name`, else a key `make()` generated on first run and kept in a private file."""
    if os.environ.get(env_name):
        return os.environ[env_name]
    path = DATA_DIR / file_name
    if not path.exists():
        # Written whole under a private name, then linked into place: processes starting at
        # once (web, Celery and orchestrator services started together) all read the one key that won.
        draft = path.with_name(f"{file_name}.{os.getpid()}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(make())
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process got there first: use its key
        finally:
            draft.unlink()
    return path.read_text().strip()


DEBUG = _env_bool("ARENA_DEBUG")
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"] + [
    h.strip() for h in os.environ.get("ARENA_ALLOWED_HOSTS", "").split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("ARENA_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

# --- Production mode ------------------------------------------------------------------
# ARENA_PRODUCTION=1 refuses to start on a development configuration (DEBUG, a missing or
# weak secret key, no public host name) and sends cookies over HTTPS only, with HSTS.
ARENA_PRODUCTION = _env_bool("ARENA_PRODUCTION")
# Behind a proxy that sets X-Forwarded-Proto and appends the client's address to X-Forwarded-For
# (login throttling counts by that address: arena/accounts/throttle.py).
ARENA_BEHIND_PROXY = _env_bool("ARENA_BEHIND_PROXY")
if ARENA_PRODUCTION:
    from arena.security import production_problems

    _problems = production_problems(debug=DEBUG, secret_key=os.environ.get("ARENA_SECRET_KEY", ""),
                                    allowed_hosts=ALLOWED_HOSTS)
    if _problems:
        raise ImproperlyConfigured("ARENA_PRODUCTION=1, but:\n- " + "\n- ".join(_problems))
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = _env_bool("ARENA_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # a load balancer's plain-HTTP health check
    SECURE_HSTS_SECONDS = int(os.environ.get("ARENA_HSTS_SECONDS", 60 * 60 * 24 * 365))
    # Only the operator knows whether every subdomain is HTTPS too (Django's check warns until set).
    SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("ARENA_HSTS_INCLUDE_SUBDOMAINS")
    SECURE_HSTS_PRELOAD = _env_bool("ARENA_HSTS_PRELOAD")
    if ARENA_BEHIND_PROXY:
        # Only behind a proxy that sets X-Forwarded-Proto itself: anyone could send the header.
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECRET_KEY = _private_key("ARENA_SECRET_KEY", "secret_key", lambda: secrets.token_urlsafe(50))
# The key that encrypts endpoint API keys stored in the catalogue (Fernet: 32 random bytes, base64):
# its own, so a leaked SECRET_KEY does not open them. Every Ray node needs the same one in its own
# environment (ARENA_SECRETS_KEY), as a worker's key is opened on its node (orchestration/sealing.py).
ARENA_SECRETS_KEY = _private_key("ARENA_SECRETS_KEY", "secrets_key",
                                 lambda: base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "arena.accounts",
    "arena.catalogue",
    "arena.generations",
    "arena.categories",
    "arena.playground",
    "arena.battles",
    "arena.tournaments",
    "arena.suites",
    "arena.suite_runs",
    "arena.teams",  # teams: whose work a member sees (arena/access.py)
    "arena.raters",  # rater links: judging a suite run's pairs without an account
    "arena.leaderboard",
    "arena.history",
    "arena.workers",
    "arena.backups",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "arena.security.SecurityHeadersMiddleware",  # CSP and the rest, static files included
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "arena.accounts.throttle.LoginThrottleMiddleware",  # last: a held login's 429 page, the trusted-browser cookie
]

ROOT_URLCONF = "arena.urls"
ASGI_APPLICATION = "arena.asgi.application"

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
                "arena.teams.context.teams",  # the header's team switcher
            ],
        },
    },
]


def _database() -> dict:
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        parsed = urlparse(url)
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": parsed.path.lstrip("/"),
            "USER": parsed.username or "",
            "PASSWORD": parsed.password or "",
            "HOST": parsed.hostname or "",
            "PORT": str(parsed.port or ""),
            "CONN_MAX_AGE": 60,
        }
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else DATA_DIR / "arena.sqlite3"
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        # WAL lets the web, Celery and orchestrator processes read while one writes;
        # IMMEDIATE transactions take the write lock up front instead of failing mid-way.
        "OPTIONS": {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        },
        "TEST": {"NAME": DATA_DIR / "test-arena.sqlite3"} if _env_bool("ARENA_FILE_TEST_DB") else {},
    }


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "arena.accounts.throttle.ThrottleBackend",  # first: refuses a held login before any password check
    "django.contrib.auth.backends.ModelBackend",
]
# --- Login throttling (arena/accounts/throttle.py, the rule in login_policy.py) ---------------
# Failures count for ARENA_LOGIN_WINDOW_MIN minutes. Per username and client (its address, or a
# browser that logged in to that account before): ARENA_LOGIN_FREE_FAILURES cost nothing, then
# each one more makes the next try wait 1, 2, 4 ... s, at most ARENA_LOGIN_MAX_DELAY_S. Per address
# across usernames: ARENA_LOGIN_ADDRESS_LIMIT; per username across addresses:
# ARENA_LOGIN_USERNAME_LIMIT. Neither holds a browser that logged in to the account within
# ARENA_LOGIN_TRUSTED_DAYS (and since its password last changed). Staff: manage.py arena_unlock.
ARENA_LOGIN_WINDOW_MIN = float(os.environ.get("ARENA_LOGIN_WINDOW_MIN", 15))
ARENA_LOGIN_FREE_FAILURES = int(os.environ.get("ARENA_LOGIN_FREE_FAILURES", 2))
ARENA_LOGIN_MAX_DELAY_S = float(os.environ.get("ARENA_LOGIN_MAX_DELAY_S", 300))
ARENA_LOGIN_ADDRESS_LIMIT = int(os.environ.get("ARENA_LOGIN_ADDRESS_LIMIT", 20))
ARENA_LOGIN_USERNAME_LIMIT = int(os.environ.get("ARENA_LOGIN_USERNAME_LIMIT", 50))
ARENA_LOGIN_TRUSTED_DAYS = int(os.environ.get("ARENA_LOGIN_TRUSTED_DAYS", 90))
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "playground"
LOGOUT_REDIRECT_URL = "login"
# --- Joining (arena/accounts/joining.py) -------------------------------------------------
# Staff invite people with one-time links that open for this many days; with ARENA_OPEN_SIGNUP=1
# anyone may also sign up, as an inactive user a staff member approves on /accounts/invitations/.
ARENA_INVITATION_DAYS = int(os.environ.get("ARENA_INVITATION_DAYS", 7))
ARENA_OPEN_SIGNUP = _env_bool("ARENA_OPEN_SIGNUP")
# E-mail (invitations, password reset): printed on the server's console unless EMAIL_HOST names an
# SMTP server (EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS / EMAIL_USE_SSL).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_BACKEND = ("django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST
                 else "django.core.mail.backends.console.EmailBackend")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", 587 if _env_bool("EMAIL_USE_TLS") else 25))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = _env_bool("EMAIL_USE_TLS")
EMAIL_USE_SSL = _env_bool("EMAIL_USE_SSL")
EMAIL_TIMEOUT = 20
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "LLM Arena <arena@localhost>")

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise serves from the finders; it only checks this exists
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads no cookie: the token is in hx-headers on <body>
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# --- Redis: Celery broker, token streams, worker registry -------------
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
ARENA_REDIS_PREFIX = os.environ.get("ARENA_REDIS_PREFIX", "arena")

# No CHANNEL_LAYERS: every socket reads Redis streams itself. Without a layer no consumer,
# nor Channels' refusal of a bad Origin (WebsocketDenier), spends a Redis pop per socket or
# dies with a Redis restart; a Redis layer shared across event loops also hung a refused
# socket in tests.

CELERY_BROKER_URL = REDIS_URL
# rediss:// (TLS): the server's certificate verified, against ARENA_REDIS_TLS_CA if set, with this
# machine's ARENA_REDIS_TLS_CERT/KEY if the server asks for one (inference/redis_connect.py).
CELERY_BROKER_USE_SSL = redis_connect.celery_ssl(REDIS_URL)
CELERY_TASK_DEFAULT_QUEUE = f"{ARENA_REDIS_PREFIX}.control"
CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": f"{ARENA_REDIS_PREFIX}:celery:"}
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# No task is acks_late, so nothing is redelivered either way; set to keep Celery 5.x quiet about 6.0.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_TASK_ALWAYS_EAGER = False

# --- Inference and orchestration ------------------------------------------------------
ARENA_KEEP_ALIVE_S = float(os.environ.get("ARENA_KEEP_ALIVE_S", 600))
ARENA_LOAD_TIMEOUT_S = float(os.environ.get("ARENA_LOAD_TIMEOUT_S", 300))
# "local": workers are the orchestrator's subprocesses; "ray": Ray actors on the cluster RAY_ADDRESS names
ARENA_ORCHESTRATOR_BACKEND = os.environ.get("ARENA_ORCHESTRATOR_BACKEND", "local").strip().lower()
ARENA_GENERATION_TIMEOUT_S = float(os.environ.get("ARENA_GENERATION_TIMEOUT_S", 900))
ARENA_DISCONNECT_GRACE_S = float(os.environ.get("ARENA_DISCONNECT_GRACE_S", 5))
# A blind battle's sides are shown in word-sized pieces, both at once, at the pace of the
# slower one and at most this many pieces a second (arena/battles/pacing.py).
ARENA_BLIND_WORDS_PER_S = float(os.environ.get("ARENA_BLIND_WORDS_PER_S", 20))
# Anonymous battles (/arena/): the share of pairs drawn uniformly at random; the rest go where the
# verdicts leave the order least settled (arena/battles/draw.py).
ARENA_ANONYMOUS_RANDOM_SHARE = float(os.environ.get("ARENA_ANONYMOUS_RANDOM_SHARE", 0.25))
# The one token limit of both sides of a blind comparison (anonymous battles, suite runs, tournaments
# through the API) when the user gives none: an entry's own default never applies to one side (arena/battles/fair.py).
ARENA_BLIND_MAX_NEW_TOKENS = int(os.environ.get("ARENA_BLIND_MAX_NEW_TOKENS", 256))
# The sweeper (arena/generations/sweeper.py): a generation whose following task has been gone
# this long is ended; one no task picked up is queued again after the grace, failed after the timeout.
ARENA_WATCH_TTL_S = float(os.environ.get("ARENA_WATCH_TTL_S", 15))
ARENA_QUEUE_GRACE_S = float(os.environ.get("ARENA_QUEUE_GRACE_S", 60))
ARENA_QUEUE_TIMEOUT_S = float(os.environ.get("ARENA_QUEUE_TIMEOUT_S", 900))
ARENA_WORKER_LOG_DIR = DATA_DIR / "logs"
ARENA_MAX_PROMPT_CHARS = int(os.environ.get("ARENA_MAX_PROMPT_CHARS", 32000))
# A conversation (a follow-up's whole history, /v1/ messages, a tournament's API history): at most
# this many user turns (0: no limit) and characters in all (unset: the prompt limit) (arena/conversations.py).
ARENA_MAX_CONVERSATION_TURNS = int(os.environ.get("ARENA_MAX_CONVERSATION_TURNS", 20))
ARENA_MAX_CONVERSATION_CHARS = int(os.environ.get("ARENA_MAX_CONVERSATION_CHARS", 0)) or None
# WebSockets (arena/streams.py): the Redis connections one server process's sockets (and /v1/ completions) share, and
# the least time between two frames of one socket (tokens that come meanwhile go together;
# a first token after a pause and a generation's end go at once).
ARENA_WS_REDIS_CONNECTIONS = int(os.environ.get("ARENA_WS_REDIS_CONNECTIONS", 8))
ARENA_WS_FRAME_INTERVAL_MS = float(os.environ.get("ARENA_WS_FRAME_INTERVAL_MS", 30))
# Live WebSockets per user across every server process (0: no cap; staff too): the next is
# closed with 4429 and a message. A socket's slot in Redis is renewed while it lives, so one of
# a killed process lapses within the TTL (arena/accounts/socket_cap.py).
ARENA_MAX_SOCKETS_PER_USER = int(os.environ.get("ARENA_MAX_SOCKETS_PER_USER", 20))
ARENA_WS_SLOT_TTL_S = float(os.environ.get("ARENA_WS_SLOT_TTL_S", 60))
# The port the site is served on (the launcher's uvicorn): WebSocket handshakes from the site's
# own pages carry it in their Origin (arena/origins.py).
PORT = os.environ.get("PORT", "8000")

# --- Caches --------------------------------------------------------------------------------
# Seconds a process reuses /healthz's checks (arena/health.py), the leaderboard's pages
# (arena/leaderboard/cache.py; a new battle makes them stale at once), and between writes of
# share pages' view counts (arena/history/view_counts.py).
ARENA_HEALTH_CACHE_S = float(os.environ.get("ARENA_HEALTH_CACHE_S", 5))
ARENA_LEADERBOARD_CACHE_S = float(os.environ.get("ARENA_LEADERBOARD_CACHE_S", 600))
ARENA_SHARE_VIEWS_FLUSH_S = float(os.environ.get("ARENA_SHARE_VIEWS_FLUSH_S", 10))
# The leaderboard marks an entry "provisional" below this many verdicts in the view shown
# (arena/leaderboard/uncertainty.py).
ARENA_LEADERBOARD_PROVISIONAL_VERDICTS = int(os.environ.get("ARENA_LEADERBOARD_PROVISIONAL_VERDICTS", 30))
# The catalogue entry that places a prompt no rule matched in a category (arena/categories).
ARENA_CATEGORY_CLASSIFIER = os.environ.get("ARENA_CATEGORY_CLASSIFIER", "smollm2-135m")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("ARENA_LOG_LEVEL", "INFO")},
    "loggers": {"django.channels.server": {"level": "WARNING"}},
}

# --- Limits (arena/generations/limits.py) ---------------------------------------------------------
# Per user: requests that start work (a generation, comparison, tournament, re-run, match...)
# in a sliding window, and generations running at once (a comparison or tournament match is
# 2). 0 turns either off; staff are exempt. A refusal is a 429 naming the limit, with Retry-After.
ARENA_RATE_LIMIT_PER_MIN = int(os.environ.get("ARENA_RATE_LIMIT_PER_MIN", 30))
ARENA_RATE_LIMIT_WINDOW_S = float(os.environ.get("ARENA_RATE_LIMIT_WINDOW_S", 60))
ARENA_MAX_CONCURRENT_PER_USER = int(os.environ.get("ARENA_MAX_CONCURRENT_PER_USER", 4))
# The whole installation: generations running at once (0: no limit). More wait in one line served
# round robin between users, staff included (arena/generations/admission.py); each admitted run
# holds one Celery thread (the launcher starts this many plus 16, at least 32).
ARENA_MAX_CONCURRENT_GENERATIONS = int(os.environ.get("ARENA_MAX_CONCURRENT_GENERATIONS", 16))
# Generations one suite run keeps live at once (its own window, outside the per-user limit above).
ARENA_SUITE_IN_FLIGHT = int(os.environ.get("ARENA_SUITE_IN_FLIGHT", 4))
# A request body past this many bytes gets a 413 before anything reads it (arena.asgi) or
# parses it. The default leaves room for a prompt and a system prompt at the prompt limit,
# every character escaped in JSON.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("ARENA_MAX_BODY_BYTES", max(2**20, 32 * ARENA_MAX_PROMPT_CHARS)))
