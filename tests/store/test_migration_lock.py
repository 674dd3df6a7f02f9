"""The migration lock cannot stall modelgate (issue #37 point 6), against the real PostgreSQL.

A second connection opened by the test holds the advisory lock, as an analyst would with
``SELECT pg_advisory_lock(...)`` in psql: an up-to-date database is used without waiting, a
pending migration fails after the configured wait naming the holder, and SIGTERM or Ctrl-C end
a waiting ``modelgate db upgrade`` at once. Nothing is timed to cause a fault: the signal is
sent once the subprocess has said on stderr that it waits.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg2
import pytest
from conftest import _admin, database_url, pg_admin_url
from psycopg2.extensions import connection as Connection
from support.terminal_signals import TERMINAL_CTRL_C

from modelgate.cli import main
from modelgate.config import ConfigError, Settings
from modelgate.store import db

# The id is restated, not imported: a holder in psql types the number, not our constant.
LOCK_ID = 7_302_114_001
HOLDER_APP = "analyst_notebook"
HoldLock = Callable[[str], int]


def _as_user(url: str, user: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = f"{user}@{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


@pytest.fixture(scope="module")
def analyst_role(pg_url: str) -> Iterator[str]:
    """A LOGIN member of modelgate_analyst (the group exists once pg_url is migrated)."""
    role = f"mg_lock_analyst_{uuid.uuid4().hex[:10]}"
    _admin(f"CREATE ROLE {role} LOGIN IN ROLE modelgate_analyst")
    yield role
    _admin(f"DROP ROLE {role}")


@pytest.fixture()
def fresh_url(pg_url: str) -> Iterator[str]:
    """An empty database of its own: every migration is pending there."""
    name = f"modelgate_lock_{uuid.uuid4().hex[:10]}"
    _admin(f"CREATE DATABASE {name}")
    yield database_url(pg_admin_url(), name)
    _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture()
def hold_lock(analyst_role: str) -> Iterator[HoldLock]:
    """``hold_lock(url)`` takes the migration lock on ``url``'s database as the analyst, in a
    session of its own that stays open (and holds it) until the test ends."""
    held: list[Connection] = []

    def hold(url: str) -> int:
        conn = psycopg2.connect(_as_user(url, analyst_role), application_name=HOLDER_APP)
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(%s), pg_backend_pid()", (LOCK_ID,))
            pid = int(cur.fetchone()[1])
        held.append(conn)
        return pid

    yield hold
    for conn in held:
        conn.close()


def _one_migration(directory: Path, version: int, sql: str) -> Path:
    (directory / f"{version:04d}_step_{version}.sql").write_text(sql)
    return directory


def test_up_to_date_database_takes_no_lock(pg_url: str, hold_lock: HoldLock, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """With the analyst holding the lock, the start-up check and a command go on at once: a
    wait of 1 ms would fail if they asked for the lock at all."""
    hold_lock(pg_url)
    assert db.upgrade(pg_url, lock_timeout_s=0.001) == []
    monkeypatch.setenv("MODELGATE_DATABASE_URL", pg_url)
    monkeypatch.setenv("MODELGATE_HOME", str(tmp_path))
    monkeypatch.setenv("MODELGATE_MIGRATION_WAIT_S", "0.001")
    assert main(["db", "upgrade"]) == 0
    assert main(["model", "list"]) == 0


def test_pending_migration_fails_after_the_wait_naming_the_holder(
        fresh_url: str, hold_lock: HoldLock, analyst_role: str, tmp_path: Path) -> None:
    pid = hold_lock(fresh_url)
    migrations = _one_migration(tmp_path, 1, "CREATE TABLE t (x int);")
    with pytest.raises(db.MigrationLockTimeout) as caught:
        db.upgrade(fresh_url, migrations, lock_timeout_s=0.3)
    message = str(caught.value)
    assert f"pid {pid} (user '{analyst_role}', application '{HOLDER_APP}'" in message
    assert "state 'idle'" in message and "after 0.3 s" in message
    assert "0001_step_1" in message and "MODELGATE_MIGRATION_WAIT_S" in message
    with psycopg2.connect(fresh_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT to_regclass('t')")
        assert cur.fetchone() == (None,)  # nothing was applied


def test_migration_applies_once_the_holder_lets_go(fresh_url: str, hold_lock: HoldLock,
                                                   tmp_path: Path) -> None:
    hold_lock(fresh_url)
    migrations = _one_migration(tmp_path, 1, "CREATE TABLE t (x int);")
    with pytest.raises(db.MigrationLockTimeout):
        db.upgrade(fresh_url, migrations, lock_timeout_s=0.05)
    _admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
           f"WHERE application_name = '{HOLDER_APP}' AND datname = '{fresh_url.rsplit('/', 1)[1]}'")
    applied = db.upgrade(fresh_url, migrations, lock_timeout_s=30)
    assert [(m.version, m.name) for m in applied] == [(1, "step_1")]


def test_migration_waiting_for_a_table_fails_after_the_wait(fresh_url: str,
                                                            tmp_path: Path) -> None:
    """An open transaction that read a table (an analyst on a view does that) must not hold
    a migration's ALTER TABLE, and every query queued behind it, for ever."""
    migrations = _one_migration(tmp_path, 1, "CREATE TABLE t (x int);")
    db.upgrade(fresh_url, migrations)
    reader = psycopg2.connect(fresh_url)
    try:
        with reader.cursor() as cur:
            cur.execute("SELECT count(*) FROM t")  # transaction left open: ACCESS SHARE on t
        _one_migration(migrations, 2, "ALTER TABLE t ADD COLUMN y int;")
        with pytest.raises(db.MigrationError, match="0002_step_2.sql waited more than 0.2 s"):
            db.upgrade(fresh_url, migrations, lock_timeout_s=0.2)
    finally:
        reader.close()
    assert [m.version for m in db.upgrade(fresh_url, migrations, lock_timeout_s=30)] == [2]


def _read_until(stream: object, needle: str, *, limit_s: float = 120.0) -> str:
    """Lines of ``stream`` up to the first holding ``needle``. ``limit_s`` only turns a
    subprocess that never gets there into a failure instead of a hung test."""
    seen = ""
    deadline = time.monotonic() + limit_s
    fd = stream.fileno()  # type: ignore[attr-defined]
    while needle not in seen:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(left, 0))
        if not ready:
            raise AssertionError(f"no {needle!r} on stderr within {limit_s} s; got {seen!r}")
        chunk = os.read(fd, 65536).decode()
        if not chunk:
            raise AssertionError(f"stderr ended before {needle!r}; got {seen!r}")
        seen += chunk
    return seen


@pytest.mark.parametrize(("signum", "exit_code", "said"), [
    (signal.SIGTERM, 143, "terminated (SIGTERM)"),
    (signal.SIGINT, 130, "interrupted"),
], ids=["sigterm", "ctrl-c"])
def test_signal_ends_a_command_waiting_for_the_lock(
        fresh_url: str, hold_lock: HoldLock, tmp_path: Path, signum: int, exit_code: int,
        said: str) -> None:
    pid = hold_lock(fresh_url)
    env = {**os.environ, "MODELGATE_DATABASE_URL": fresh_url, "MODELGATE_HOME": str(tmp_path),
           "MODELGATE_MIGRATION_WAIT_S": "600"}
    cli = TERMINAL_CTRL_C + "import sys\nfrom modelgate import cli\nsys.exit(cli.main(sys.argv[1:]))\n"
    proc = subprocess.Popen([sys.executable, "-c", cli, "db", "upgrade"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        waiting = _read_until(proc.stderr, "waiting up to 600 s for the migration lock")
        assert f"held by pid {pid} (user " in waiting
        proc.send_signal(signum)
        _, rest = proc.communicate(timeout=30)  # prompt: the wait is 600 s
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == exit_code, rest
    assert said in rest.decode()


def test_wait_setting_defaults_to_60_s_and_takes_fractions() -> None:
    assert Settings.from_env({}).migration_lock_timeout_s == 60.0
    assert Settings.from_env({"MODELGATE_MIGRATION_WAIT_S": "0.5"}).migration_lock_timeout_s == 0.5


@pytest.mark.parametrize("bad", ["0", "-1", "soon", "inf", "nan"])
def test_wait_setting_must_be_positive_seconds(bad: str) -> None:
    with pytest.raises(ConfigError, match=rf"MODELGATE_MIGRATION_WAIT_S must be a positive number "
                                          rf"of seconds, got '{bad}'"):
        Settings.from_env({"MODELGATE_MIGRATION_WAIT_S": bad})
