"""PostgreSQL connection and numbered migrations for the results store.

The URL comes from ``MODELGATE_DATABASE_URL``; inside an Airflow task, from the Airflow
connection ``MODELGATE_DB_CONN_ID``; otherwise an embedded PostgreSQL (``pgserver``) is
started under ``MODELGATE_HOME`` so the demo needs no database server.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import psycopg2.errors
import psycopg2.extras
from psycopg2.extensions import connection as Connection

from modelgate.config import Settings
from modelgate.resources import shipped_dir
from modelgate.store import migration_lock
from modelgate.store.migration_lock import MigrationLockTimeout as MigrationLockTimeout  # re-export

log = logging.getLogger("modelgate.store")

MIGRATIONS_DIR = shipped_dir("sql/migrations")
_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# How long a migration waits for the migration lock or a table (MODELGATE_MIGRATION_WAIT_S).
DEFAULT_MIGRATION_LOCK_TIMEOUT_S = 60.0

# What a lost or refused database connection raises (re-exported so callers need no psycopg2).
DatabaseError = psycopg2.Error


class MigrationError(RuntimeError):
    """The migrations on disk and the ones recorded in the database disagree."""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def resolve_database_url(settings: Settings) -> str:
    """Return the results-store URL: explicit URL, Airflow connection, or embedded server."""
    if settings.database_url:
        return settings.database_url
    url = _airflow_connection_url(settings.db_conn_id)
    if url:
        _announce(f"results database: Airflow connection {settings.db_conn_id!r} "
                  "(MODELGATE_DATABASE_URL is not set)")
        return url
    _announce(f"results database: embedded PostgreSQL in {(settings.home / 'pgdata').resolve()} "
              "(MODELGATE_DATABASE_URL is not set; MODELGATE_HOME decides where)")
    return embedded_database_url(settings.home)


_announced: set[str] = set()


def _announce(line: str) -> None:
    """Say once per process which database a command uses when it is not the configured URL:
    run from another folder, the embedded default is another database."""
    if line not in _announced:
        _announced.add(line)
        log.info("%s", line)


def _airflow_connection_url(conn_id: str) -> str | None:
    # Only consult Airflow when running inside a task (or when the connection is given
    # as an environment variable): outside Airflow a lookup would fail or hang.
    in_task = bool(os.environ.get("AIRFLOW_CTX_DAG_ID"))
    env_conn = f"AIRFLOW_CONN_{conn_id.upper()}"
    if not in_task and env_conn not in os.environ:
        return None
    try:
        from airflow.sdk import BaseHook

        conn = BaseHook.get_connection(conn_id)
    except Exception as exc:  # noqa: BLE001 - any lookup failure means "not configured"
        log.warning("no Airflow connection %r (%s); using the embedded PostgreSQL", conn_id,
                 type(exc).__name__)
        return None
    return str(conn.get_uri()).replace("postgres://", "postgresql://", 1)


def embedded_database_url(home: Path) -> str:
    """Start (or reuse) the private PostgreSQL under ``home`` and return its URL.

    The server keeps running after this process exits so later commands reuse it;
    ``modelgate db stop`` stops it.
    """
    import pgserver  # heavy and only needed for the embedded default

    data_dir = (home / "pgdata").resolve()
    if not (data_dir / "PG_VERSION").exists():
        log.warning("creating a NEW, empty embedded results database in %s (none there yet; "
                    "set MODELGATE_DATABASE_URL, or MODELGATE_HOME to the folder of an existing "
                    "one, to use that instead)", data_dir)
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(str(data_dir), cleanup_mode=None)
    exists = server.psql("SELECT 1 FROM pg_database WHERE datname = 'modelgate';")
    if "(0 rows)" in exists:
        server.psql("CREATE DATABASE modelgate;")
        log.info("created database 'modelgate' in the embedded PostgreSQL at %s", data_dir)
    return str(server.get_uri("modelgate"))


def stop_embedded(home: Path, timeout_s: float = 30.0) -> bool:
    """Stop the embedded PostgreSQL under ``home`` if it runs; True if one was stopped."""
    import signal
    import time

    pid_file = (home / "pgdata" / "postmaster.pid").resolve()
    if not pid_file.exists():
        return False
    try:
        os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)  # "smart" shutdown
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout_s
    while pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    return not pid_file.exists()


def connect(url: str) -> Connection:
    """Open a connection; ``autocommit`` is off so every unit of work is one transaction."""
    conn = psycopg2.connect(url, connect_timeout=10, application_name="modelgate")
    psycopg2.extras.register_default_jsonb(conn)
    return conn


@contextlib.contextmanager
def transaction(url: str) -> Iterator[Any]:
    """Yield a cursor inside one transaction: committed on success, rolled back on error."""
    conn = connect(url)
    try:
        cur = conn.cursor()
        yield cur
        cur.close()
        conn.commit()
    except BaseException:
        # A lost connection cannot roll back; that second error must not hide the first.
        with contextlib.suppress(psycopg2.Error):
            conn.rollback()
        raise
    finally:
        with contextlib.suppress(psycopg2.Error):
            conn.close()


def fetch_all(url: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one parameterised read query in its own transaction and return every row."""
    with transaction(url) as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def load_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Read ``NNNN_name.sql`` files in version order; a duplicate version is an error.

    Gaps are allowed: numbers are handed out to changes developed in parallel, so one may
    land before a lower-numbered one (each is written not to depend on the others).
    """
    migrations = []
    for path in sorted(directory.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if not match:
            raise MigrationError(f"migration file {path.name!r} is not named NNNN_name.sql")
        migrations.append(Migration(int(match[1]), match[2], path.read_text()))
    for before, migration in zip(migrations, migrations[1:], strict=False):
        if migration.version == before.version:
            raise MigrationError(
                f"migration version {migration.version:04d} is used twice: "
                f"{before.version:04d}_{before.name}.sql and {migration.version:04d}_{migration.name}.sql"
            )
    return migrations


def upgrade(url: str, directory: Path = MIGRATIONS_DIR, *,
            lock_timeout_s: float = DEFAULT_MIGRATION_LOCK_TIMEOUT_S) -> list[Migration]:
    """Apply pending migrations in order, each in its own transaction; idempotent.

    Every command calls this on start, so the common case takes no lock: the recorded
    migrations are read, and when every shipped one is applied (with its checksum) nothing
    else happens. Only pending migrations take the migration lock
    (:mod:`modelgate.store.migration_lock`), waiting at most ``lock_timeout_s`` for another
    session to let go; each migration also waits at most that long for a table lock
    (``lock_timeout``), e.g. one held by an analyst's open transaction on a view.

    Returns the migrations applied by this call (empty when already up to date).

    Raises
    ------
    MigrationError
        A recorded migration was changed on disk, or a migration waited too long for a table.
    MigrationLockTimeout
        Another session held the migration lock longer than ``lock_timeout_s``; names it.
    """
    migrations = load_migrations(directory)
    conn = connect(url)
    try:
        pending = _pending(migrations, _recorded(conn))
        if not pending:
            return []
        pending_names = ", ".join(f"{m.version:04d}_{m.name}" for m in pending)
        migration_lock.acquire(conn, timeout_s=lock_timeout_s,
                               why=f"pending migration(s) {pending_names}")
        try:
            return _apply_pending(conn, migrations, lock_timeout_s)
        finally:
            with contextlib.suppress(psycopg2.Error):
                migration_lock.release(conn)
    finally:
        with contextlib.suppress(psycopg2.Error):
            conn.close()


def _recorded(conn: Connection) -> dict[int, str]:
    """Version -> checksum of the applied migrations; empty before the first migration."""
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass('schema_migration') IS NOT NULL")
        if not cur.fetchone()[0]:
            conn.commit()
            return {}
        cur.execute("SELECT version, checksum FROM schema_migration")
        recorded = dict(cur.fetchall())
    conn.commit()
    return recorded


def _pending(migrations: list[Migration], recorded: dict[int, str]) -> list[Migration]:
    """The migrations not yet applied; a recorded one changed on disk is an error."""
    for migration in migrations:
        if migration.version in recorded and recorded[migration.version] != migration.checksum:
            raise MigrationError(
                f"migration {migration.version:04d}_{migration.name}.sql was changed "
                "after it was applied; add a new migration instead"
            )
    return [m for m in migrations if m.version not in recorded]


def _apply_pending(conn: Connection, migrations: list[Migration],
                   lock_timeout_s: float) -> list[Migration]:
    """Apply what is still pending once the migration lock is held (another session may have
    applied some meanwhile)."""
    with conn, conn.cursor() as cur:
        cur.execute(
            """CREATE TABLE IF NOT EXISTS schema_migration (
                   version integer NOT NULL,
                   name text NOT NULL,
                   checksum text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now(),
                   CONSTRAINT schema_migration_pkey PRIMARY KEY (version))"""
        )
    applied: list[Migration] = []
    for migration in _pending(migrations, _recorded(conn)):
        try:
            with conn, conn.cursor() as cur:
                cur.execute(f"SET LOCAL lock_timeout = '{round(lock_timeout_s * 1000)}ms'")
                cur.execute(migration.sql)
                cur.execute(
                    "INSERT INTO schema_migration (version, name, checksum) VALUES (%s, %s, %s)",
                    (migration.version, migration.name, migration.checksum),
                )
        except psycopg2.errors.LockNotAvailable as exc:
            raise MigrationError(
                f"migration {migration.version:04d}_{migration.name}.sql waited more than "
                f"{lock_timeout_s:g} s for a table another session holds (an open transaction; "
                "see pg_stat_activity) and was not applied; retry when it ends "
                f"(MODELGATE_MIGRATION_WAIT_S): {str(exc).strip()}") from exc
        log.info("applied migration %04d_%s", migration.version, migration.name)
        applied.append(migration)
    return applied


def redact_url(url: str) -> str:
    """Hide the password of a database URL or key=value DSN so it can be logged.

    >>> redact_url("postgresql://writer:s3cret@db:5432/modelgate")
    'postgresql://writer:***@db:5432/modelgate'
    >>> redact_url("postgresql:///modelgate?host=db&password=s3cret")
    'postgresql:///modelgate?host=db&password=***'
    >>> redact_url("dbname=modelgate password=s3cret host=db")
    'dbname=modelgate password=*** host=db'
    """
    from modelgate.logsafe import redact_secrets

    return redact_secrets(url)
