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
``MODELGATE_PRESIGN_EXPIRY_S``     lifetime of presigned report links, seconds (``3600``)
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
``MODELGATE_DAG_RETRIES``          task retries in both DAGs (``1``)
``MODELGATE_DRIFT_SCHEDULE``       schedule of the drift DAG (``@daily``)
``MODELGATE_DRIFT_CATCHUP``        ``true`` to back-fill past intervals (``false``)
``MODELGATE_DRIFT_START_DATE``     first interval of the drift DAG (``1970-01-01``)
``MODELGATE_DEMO_SKIP_DRIFT``      set to skip the drift part of ``modelgate demo``
=================================  ==========================================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

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
        home = Path(env.get("MODELGATE_HOME") or ".modelgate").expanduser()
        endpoint = env.get("MODELGATE_S3_ENDPOINT") or None
        s3 = None
        if endpoint:
            s3 = S3Settings(
                endpoint=_strip_scheme(endpoint),
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
            presign_expiry_s=_positive_int(env, "MODELGATE_PRESIGN_EXPIRY_S", 3600),
            min_group_size=_positive_int(env, "MODELGATE_MIN_GROUP_SIZE", 30),
            stale_run_minutes=_positive_int(env, "MODELGATE_STALE_RUN_MINUTES", 30),
            eval_memory_limit_mb=_positive_int(env, "MODELGATE_EVAL_MEMORY_LIMIT_MB", 4096),
            migration_lock_timeout_s=_positive_seconds(env, "MODELGATE_MIGRATION_WAIT_S",
                                                       60.0),
        )


def _strip_scheme(endpoint: str) -> str:
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


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {raw!r}")
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
