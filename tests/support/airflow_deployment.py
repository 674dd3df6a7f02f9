"""A real Airflow 3.3 deployment for end-to-end tests, not ``dag.test()``: the LocalExecutor
as docs/deploying.md sets it up (:class:`modelgate.local_executor.PreloadingLocalExecutor`) on a
PostgreSQL metadata database of its own, with ``api-server`` (the Execution API tasks report to),
``dag-processor`` (which also runs DAG failure callbacks) and ``scheduler`` on loopback.

Two entry points over the same processes: :func:`airflow_env` and :func:`run_scheduler` (the
drift DAG's catch-up tests: create the metadata database, migrate, run until a condition holds),
and :func:`metadata_database`, :func:`deployment_env` and :func:`running` (tests that trigger
runs and signal task processes themselves). Every process started is stopped, with its process
group, whatever happens.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg2
from conftest import REPO, _admin, _free_port, database_url, pg_admin_url

AIRFLOW = [sys.executable, "-m", "airflow"]


@contextmanager
def airflow_env(tmp_path: Path, first: dt.date, last: dt.date, *,
                retries: int | None) -> Iterator[dict[str, str]]:
    """Environment of the drift DAG's deployment, catching up over the daily intervals
    ``first..last``; ``retries`` None leaves ``MODELGATE_DAG_RETRIES`` unset (the DAG's default)."""
    with metadata_database() as metadata:
        env = deployment_env(tmp_path, metadata, ["drift_monitoring.py"],
                             {"MODELGATE_DRIFT_SCHEDULE": "@daily",
                              "MODELGATE_DRIFT_CATCHUP": "true",
                              "MODELGATE_DRIFT_START_DATE": first.isoformat(),
                              "MODELGATE_DRIFT_END_DATE": last.isoformat()})
        env.pop("MODELGATE_DAG_RETRIES", None)
        if retries is not None:
            env["MODELGATE_DAG_RETRIES"] = str(retries)
        yield env


def _wait_port(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"api-server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"api-server did not listen on {port}")


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:  # each was started in its own session: signal its whole group
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def run_scheduler(env: dict[str, str], logs: Path, done: Callable[[], bool],
                  wait_s: float) -> tuple[list[object], dict[str, str]]:
    """Run the deployment until ``done()`` (polled every 5 s; the condition is checked, never
    assumed from elapsed time) or ``wait_s`` passes or a process exits. Returns the commands
    of processes that exited early and the tail of each process's log."""
    with running(env, logs) as procs:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not done():
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(5)
        dead: list[object] = [p.args for p in procs if p.poll() is not None]
    tails = log_tails(logs)
    return dead, tails


@contextmanager
def metadata_database() -> Iterator[str]:
    """A fresh PostgreSQL database for Airflow's metadata; the ``user:pass@host/db`` part."""
    name = f"airflow_e2e_{uuid.uuid4().hex[:10]}"
    _admin(f"CREATE DATABASE {name}")
    try:
        yield database_url(pg_admin_url(), name).split("://", 1)[1]
    finally:
        _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def deployment_env(home: Path, metadata: str, dag_files: list[str],
                   extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of every process: a private AIRFLOW_HOME and DAG folder (links to the
    repository's DAG files), the Execution API on a free port, a shared JWT secret."""
    dags = home / "dags"
    dags.mkdir(parents=True)
    for name in dag_files:
        (dags / name).symlink_to(REPO / "dags" / name)
    port = _free_port()
    return {**os.environ,
            "AIRFLOW_HOME": str(home / "airflow"),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql+psycopg2://{metadata}",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": f"postgresql+asyncpg://{metadata}",
            "AIRFLOW__CORE__EXECUTOR": "modelgate.local_executor.PreloadingLocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "4",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API_AUTH__JWT_SECRET": uuid.uuid4().hex,
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
            **extra}


@contextmanager
def running(env: dict[str, str], logs: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``airflow db migrate``, then api-server, dag-processor and scheduler, until the block ends."""
    subprocess.run([*AIRFLOW, "db", "migrate"], env=env, check=True, capture_output=True, timeout=600)
    logs.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for command in (["api-server", "--host", "127.0.0.1", "--port", env["AIRFLOW__API__PORT"],
                         "--workers", "1"], ["dag-processor"], ["scheduler"]):
            with open(logs / f"{command[0]}.log", "wb") as sink:
                procs.append(subprocess.Popen([*AIRFLOW, *command], env=env, stdout=sink,
                                              stderr=subprocess.STDOUT, start_new_session=True))
            if command[0] == "api-server":
                _wait_port(int(env["AIRFLOW__API__PORT"]), procs[0], time.monotonic() + 180)
        yield procs
    finally:
        stop(procs)


def log_tails(logs: Path, chars: int = 3000) -> dict[str, str]:
    return {f.name: f.read_text(errors="replace")[-chars:] for f in logs.iterdir() if f.is_file()}


def wait_for(condition: Any, what: str, procs: list[subprocess.Popen[bytes]], logs: Path,
             timeout_s: float = 900) -> Any:
    """Poll ``condition()`` until it returns something truthy (an event, not a delay)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        dead = [p.args for p in procs if p.poll() is not None]
        if dead:
            raise AssertionError(f"Airflow processes exited early: {dead}\n{log_tails(logs)}")
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}\n{log_tails(logs)}")


def meta_rows(url: str, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of a query on Airflow's metadata database."""
    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def trigger(env: dict[str, str], dag_id: str, run_id: str, conf: dict[str, Any] | None = None) -> None:
    """``airflow dags trigger`` as an operator types it (a manual run, optional conf)."""
    command = [*AIRFLOW, "dags", "trigger", dag_id, "--run-id", run_id]
    if conf is not None:
        command += ["--conf", json.dumps(conf)]
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=300)


def finished_state(meta: str, run_id: str) -> str | None:
    """The DAG run's final state, or None while it is not finished."""
    rows = meta_rows(meta, "SELECT state FROM dag_run WHERE run_id = %s", (run_id,))
    return rows[0][0] if rows and rows[0][0] in ("success", "failed") else None
