"""Configuration read from the environment (or an Airflow connection), with embedded defaults.

Every setting has one environment variable. With none set, modelgate runs on embedded
defaults: a private PostgreSQL (from the ``pgserver`` package) and a local directory as
object store, both under ``MODELGATE_HOME``.

=================================  ==========================================================
Variable                           Meaning (default)
=================================  ==========================================================
``MODELGATE_HOME``                 data directory for the embedded services (``./.modelgate``)
``MODELGATE_DATABASE_URL``         PostgreSQL URL of the results store (embedded pgserver)
``MODELGATE_DB_CONN_ID``           Airflow connection used when no URL is set (``modelgate_db``)
``MODELGATE_S3_ENDPOINT``          ``host:port`` of an S3 API server, e.g. MinIO (local directory)
``MODELGATE_S3_ACCESS_KEY``        S3 access key
``MODELGATE_S3_SECRET_KEY``        S3 secret key
``MODELGATE_S3_BUCKET``            bucket for models and reports (``modelgate``)
``MODELGATE_S3_SECURE``            ``true`` to use HTTPS (``false``)
``MODELGATE_S3_REGION``            region sent to the server (``us-east-1``)
``MODELGATE_S3_CONN_ID``           Airflow connection used when no endpoint is set (``modelgate_s3``)
``MODELGATE_PRESIGN_EXPIRY_S``     lifetime of presigned report links, 1 .. 604800 s (``3600``)
``MODELGATE_ORT_PROVIDER``         ``auto``, ``cpu`` or ``cuda`` (``auto``)
``MODELGATE_ORT_GRAPH_OPT``        ``disable``, ``basic``, ``extended``, ``all`` (``all``)
``MODELGATE_ORT_INTRA_OP_THREADS`` ONNX Runtime intra-op threads (1 with parallel runs, else ORT's)
``MODELGATE_ORT_GPU_MEM_LIMIT_MB`` CUDA arena limit in MiB (no limit)
``MODELGATE_ORT_PARALLEL_RUNS``    concurrent runs a prediction is split over (CPU: one per core)
``MODELGATE_ORT_ALLOW_TF32``       ``true`` lets CUDA use TF32 matrix products (``false``)
``MODELGATE_ORT_LOG_LEVEL``        ONNX Runtime's own log: ``error`` ... ``verbose`` (``error``)
``MODELGATE_MIN_GROUP_SIZE``       fairness groups below this many rows are flagged (``30``)
``MODELGATE_STALE_RUN_MINUTES``    a running evaluation without heartbeat this long is abandoned (``30``)
``MODELGATE_MIGRATION_WAIT_S``     seconds a migration waits for its lock or a table (``60``)
``MODELGATE_POLICY_DIR``           per-model policy overrides ``<model>.yaml`` (``policies/``)
``MODELGATE_DAG_RETRIES``          task retries in both DAGs, 0 .. 100 (``1``)
``MODELGATE_DRIFT_SCHEDULE``       schedule of the drift DAG (``@daily``)
``MODELGATE_DRIFT_CATCHUP``        ``true`` to back-fill past intervals (``false``)
``MODELGATE_DRIFT_START_DATE``     first interval of the drift DAG (``1970-01-01``)
``MODELGATE_DEMO_SKIP_DRIFT``      set to skip the drift part of ``modelgate demo``
=================================  ==========================================================

Every value is checked when the settings are read, before any work: whole numbers within
their range (the presign expiry within S3's limit of 7 days, counts within the PostgreSQL
``integer`` they are used as), no control characters in any text. :class:`ConfigError`
names the variable, what was expected and what came (secrets are never shown).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from modelgate.input_limits import INTEGER_MAX, PRESIGN_EXPIRY_MAX_S, control_character, shown

ENV_VARS = (
    "MODELGATE_HOME",
    "MODELGATE_DATABASE_URL",
    "MODELGATE_DB_CONN_ID",
    "MODELGATE_S3_ENDPOINT",
    "MODELGATE_S3_ACCESS_KEY",
    "MODELGATE_S3_SECRET_KEY",
    "MODELGATE_S3_BUCKET",
    "MODELGATE_S3_SECURE",
    "MODELGATE_S3_REGION",
    "MODELGATE_S3_CONN_ID",
    "MODELGATE_PRESIGN_EXPIRY_S",
    "MODELGATE_ORT_PROVIDER",
    "MODELGATE_ORT_GRAPH_OPT",
    "MODELGATE_ORT_INTRA_OP_THREADS",
    "MODELGATE_ORT_GPU_MEM_LIMIT_MB",
    "MODELGATE_ORT_PARALLEL_RUNS",
    "MODELGATE_ORT_ALLOW_TF32",
    "MODELGATE_ORT_LOG_LEVEL",
    "MODELGATE_POLICY_DIR",
    "MODELGATE_MIN_GROUP_SIZE",
    "MODELGATE_STALE_RUN_MINUTES",
    "MODELGATE_MIGRATION_WAIT_S",
    "MODELGATE_DAG_RETRIES",
    "MODELGATE_DRIFT_SCHEDULE",
    "MODELGATE_DRIFT_CATCHUP",
    "MODELGATE_DRIFT_START_DATE",
    "MODELGATE_DEMO_SKIP_DRIFT",
)
#: Variables whose value may hold a secret: an error names them but never shows the value.
_SECRET_VARS = frozenset({"MODELGATE_DATABASE_URL", "MODELGATE_S3_ACCESS_KEY", "MODELGATE_S3_SECRET_KEY"})


class ConfigError(ValueError):
    """A configuration value is missing or malformed."""


@dataclass(frozen=True, slots=True)
class S3Settings:
    """Where the S3-compatible object store is and how to reach it.

    ``repr`` never shows the secret key, so settings can be logged safely.
    """

    endpoint: str
    access_key: str
    secret_key: str
    bucket: str = "modelgate"
    secure: bool = False
    region: str = "us-east-1"

    def __repr__(self) -> str:
        return (
            f"S3Settings(endpoint={self.endpoint!r}, bucket={self.bucket!r}, "
            f"secure={self.secure!r}, region={self.region!r}, access_key=***, secret_key=***)"
        )


@dataclass(frozen=True, slots=True)
class Settings:
    """All of modelgate's settings.

    Examples
    --------
    >>> s = Settings.from_env({"MODELGATE_HOME": "/tmp/mg"})
    >>> s.home.as_posix(), s.database_url, s.s3
    ('/tmp/mg', None, None)
    """

    home: Path
    database_url: str | None
    db_conn_id: str
    s3: S3Settings | None
    s3_conn_id: str
    presign_expiry_s: int
    min_group_size: int = 30
    stale_run_minutes: int = 30
    eval_memory_limit_mb: int = 4096
    migration_lock_timeout_s: float = 60.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        _refuse_control_characters(env)
        home = Path(env.get("MODELGATE_HOME") or ".modelgate").expanduser()
        endpoint = env.get("MODELGATE_S3_ENDPOINT") or None
        s3 = None
        if endpoint:
            s3 = S3Settings(
                endpoint=strip_scheme(endpoint),
                access_key=_required(env, "MODELGATE_S3_ACCESS_KEY"),
                secret_key=_required(env, "MODELGATE_S3_SECRET_KEY"),
                bucket=env.get("MODELGATE_S3_BUCKET") or "modelgate",
                secure=_bool(env, "MODELGATE_S3_SECURE", default=endpoint.startswith("https://")),
                region=env.get("MODELGATE_S3_REGION") or "us-east-1",
            )
        return cls(
            home=home,
            database_url=env.get("MODELGATE_DATABASE_URL") or None,
            db_conn_id=env.get("MODELGATE_DB_CONN_ID") or "modelgate_db",
            s3=s3,
            s3_conn_id=env.get("MODELGATE_S3_CONN_ID") or "modelgate_s3",
            presign_expiry_s=int_setting(env, "MODELGATE_PRESIGN_EXPIRY_S", 3600,
                                         high=PRESIGN_EXPIRY_MAX_S),
            min_group_size=int_setting(env, "MODELGATE_MIN_GROUP_SIZE", 30),
            stale_run_minutes=int_setting(env, "MODELGATE_STALE_RUN_MINUTES", 30),
            eval_memory_limit_mb=int_setting(env, "MODELGATE_EVAL_MEMORY_LIMIT_MB", 4096),
            migration_lock_timeout_s=_positive_seconds(env, "MODELGATE_MIGRATION_WAIT_S",
                                                       60.0),
        )


def strip_scheme(endpoint: str) -> str:
    """An object-store endpoint without its ``http(s)://`` scheme and trailing slashes."""
    for scheme in ("https://", "http://"):
        if endpoint.startswith(scheme):
            return endpoint[len(scheme) :].rstrip("/")
    return endpoint.rstrip("/")


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name)
    if not value:
        raise ConfigError(f"{name} must be set when MODELGATE_S3_ENDPOINT is set")
    return value


def _bool(env: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


_WHOLE = re.compile(r"[+-]?[0-9]{1,30}")


def int_setting(env: Mapping[str, str], name: str, default: int, *, low: int = 1,
                high: int = INTEGER_MAX) -> int:
    """The whole number in ``env[name]`` (``default`` when unset or empty), within ``[low, high]``.

    ``high`` defaults to the largest PostgreSQL ``integer``, the type counts and minutes are
    stored or used as.

    Raises
    ------
    ConfigError
        Naming the variable, the range and the value that came.

    Examples
    --------
    >>> try:
    ...     int_setting({"MG_EXPIRY_S": "700000"}, "MG_EXPIRY_S", 3600, high=604800)
    ... except ConfigError as exc:
    ...     print(exc)
    MG_EXPIRY_S must be a whole number from 1 to 604,800, got '700000'
    """
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    wanted = f"{name} must be a whole number from {low:,} to {high:,}, got {shown(raw)}"
    if not _WHOLE.fullmatch(raw.strip()):  # int() of 5,000 digits raises a ValueError of its own
        raise ConfigError(wanted)
    value = int(raw)
    if not low <= value <= high:
        raise ConfigError(wanted)
    return value


def _positive_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A finite number of seconds > 0 (``0.5``, ``60``)."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a positive number of seconds, got {raw!r}") from None
    if not 0 < value < float("inf"):
        raise ConfigError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


def _refuse_control_characters(env: Mapping[str, str]) -> None:
    for name in ENV_VARS:
        value = env.get(name)
        bad = None if value is None else control_character(value)
        if bad is not None:
            what = "(value not shown: it may hold a secret)" if name in _SECRET_VARS else (
                f"got {shown(value)}")
            raise ConfigError(f"{name} must not contain control characters such as {bad!r}; {what}")


def dag_retries(environ: Mapping[str, str] | None = None) -> int:
    """``MODELGATE_DAG_RETRIES``: task retries in both DAGs, 0 .. 100 (default 1).

    >>> dag_retries({}), dag_retries({"MODELGATE_DAG_RETRIES": "0"})
    (1, 0)
    """
    env = os.environ if environ is None else environ
    return int_setting(env, "MODELGATE_DAG_RETRIES", 1, low=0, high=100)
