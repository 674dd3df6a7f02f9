"""The migration lock: one session migrates a database at a time, and nobody can stall the rest.

``db.upgrade`` first reads ``schema_migration`` without any lock; only a session that has
migrations to apply takes this PostgreSQL session-level advisory lock. Any role that may
connect can take an advisory lock (no privilege guards ``pg_advisory_lock``, and only a
superuser could revoke it), so a read-only analyst with ``SELECT pg_advisory_lock(...)`` in an
open session holds it as long as they like. Waiting for it is therefore bounded and
interruptible:

* ``pg_try_advisory_lock`` is polled every :data:`POLL_S` seconds instead of blocking in
  ``pg_advisory_lock``. Each poll returns at once, so Python's signal handlers (SIGTERM raising
  ``Terminated`` in the CLI, Ctrl-C raising ``KeyboardInterrupt``) run between polls. A
  blocking ``pg_advisory_lock`` sits inside libpq, where those handlers only run once the lock
  comes. ``SET lock_timeout`` does bound ``pg_advisory_lock``, but the wait stays deaf to
  signals unless psycopg2's wait callback is replaced, and that callback is process-wide:
  it would change every other connection of the process, Airflow's own included.
* After ``timeout_s`` the wait ends with :class:`MigrationLockTimeout` naming the holder (pid,
  user, application, backend start and state, from ``pg_locks`` joined with
  ``pg_stat_activity``). PostgreSQL hides some of those fields of other roles' sessions from a
  role that is neither a superuser nor a member of ``pg_read_all_stats``; they read ``hidden``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from psycopg2.extensions import connection as Connection

log = logging.getLogger("modelgate.store")

# Arbitrary constant: serialises concurrent migrations of one database.
MIGRATION_LOCK_ID = 7_302_114_001
# How often a waiting session asks again; each ask is one short statement.
POLL_S = 0.2
# A bigint advisory key shows in pg_locks as classid (high 32 bits), objid (low), objsubid 1.
_CLASSID, _OBJID = MIGRATION_LOCK_ID >> 32, MIGRATION_LOCK_ID & 0xFFFF_FFFF

_HOLDERS_SQL = """
SELECT l.pid, a.usename, a.application_name, a.backend_start, a.state
FROM pg_locks l
LEFT JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = %s::oid AND l.objid = %s::oid AND l.objsubid = 1
  AND l.pid <> pg_backend_pid()
ORDER BY l.pid"""


class MigrationLockTimeout(RuntimeError):
    """Another session held the migration lock for longer than the configured timeout."""


@dataclass(frozen=True, slots=True)
class LockHolder:
    """A session holding the migration lock, as ``pg_stat_activity`` shows it to us."""

    pid: int
    user: str | None
    application: str | None
    backend_start: datetime | None
    state: str | None

    def describe(self) -> str:
        """One phrase naming the session, e.g. ``pid 42 (user 'jane', application 'psql', ...)``."""
        since = self.backend_start.isoformat(timespec="seconds") if self.backend_start else "hidden"
        return (f"pid {self.pid} (user {_shown(self.user)}, application "
                f"{_shown(self.application)}, connected since {since}, state {_shown(self.state)})")


def _shown(value: str | None) -> str:
    return repr(value) if value is not None else "hidden"


def holders(conn: Connection) -> list[LockHolder]:
    """The other sessions holding the migration lock on this database (usually one)."""
    with conn.cursor() as cur:
        cur.execute(_HOLDERS_SQL, (_CLASSID, _OBJID))
        rows = cur.fetchall()
    conn.commit()
    return [LockHolder(*row) for row in rows]


def describe_holders(found: Sequence[LockHolder]) -> str:
    """``found`` as one phrase; empty means the holder let go while we looked."""
    if not found:
        return "a session that let go of it while we looked"
    return "; ".join(h.describe() for h in found)


def acquire(conn: Connection, *, timeout_s: float, why: str, poll_s: float = POLL_S,
            clock: Callable[[], float] = time.monotonic,
            sleep: Callable[[float], None] = time.sleep) -> None:
    """Take the migration lock for ``conn``'s session, waiting at most ``timeout_s`` seconds.

    Parameters
    ----------
    conn
        The connection that will run the migrations; the lock is its session's until
        :func:`release` or until it closes.
    timeout_s
        How long to wait for another session to let go (> 0).
    why
        What the lock is for, quoted in the log line and the error (the pending migrations).
    poll_s, clock, sleep
        Poll interval and the time functions (replaceable in tests).

    Raises
    ------
    MigrationLockTimeout
        The lock was still held after ``timeout_s``; the message names the holder.
    ValueError
        ``timeout_s`` or ``poll_s`` is not positive.
    """
    if not timeout_s > 0 or not poll_s > 0:
        raise ValueError(f"timeout_s and poll_s must be > 0, got {timeout_s!r} and {poll_s!r}")
    deadline = clock() + timeout_s
    waiting = False
    while True:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK_ID,))
            got = bool(cur.fetchone()[0])
        conn.commit()  # never sit "idle in transaction" while waiting
        if got:
            return
        if clock() >= deadline:
            raise MigrationLockTimeout(
                f"the migration lock (advisory lock {MIGRATION_LOCK_ID}) is still held after "
                f"{timeout_s:g} s by {describe_holders(holders(conn))}; it is needed to apply "
                f"{why}. End that session (SELECT pg_terminate_backend(<pid>)) or wait longer "
                "(MODELGATE_MIGRATION_WAIT_S)")
        if not waiting:
            waiting = True
            log.warning("waiting up to %g s for the migration lock, held by %s, to apply %s",
                        timeout_s, describe_holders(holders(conn)), why)
        sleep(min(poll_s, max(deadline - clock(), 0.0)))


def release(conn: Connection) -> None:
    """Let go of the migration lock taken by :func:`acquire` on ``conn``."""
    conn.rollback()
    with conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_ID,))
    conn.commit()
