"""Manual triggers, SIGTERM and SIGKILL on a real Airflow 3.3 deployment with the DEFAULT
retries (``MODELGATE_DAG_RETRIES`` unset: one retry), issue #21 items 4, 5 and 6.

One deployment (``airflow_deployment``), runs one after the other (the drift DAG has
``max_active_runs=1``), each started with ``airflow dags trigger``; the drift schedule starts
in 2100, so the scheduler starts no run of its own:

1. a trigger without logical date or conf reads the last complete day before the run's
   ``run_after`` (no live data there: ``no_data``); one with ``{"interval_start": ...}`` reads
   that day; one with an interval_start that starts no interval fails at ``plan``, before
   any drift run row;
2. SIGTERM to ``sample_and_score``'s first try, then its retry succeeds: the run finishes ``ok``;
3. SIGKILL to both tries of ``sample_and_score``: the DAG run fails and its failure callback
   (run by the dag-processor) records the drift run ``failed`` at once.

The same for the ``model_evaluation`` DAG (a run without ``model_name``, and SIGKILL to both
tries of ``score``) is in ``test_e2e_evaluation_lost_runs.py``.

Faults are caused on events, never after a delay: the test holds a table lock that the
step's main thread waits on (the step is provably inside ``run_step``), finds the waiting
PostgreSQL session's client process by its TCP port, and signals that process.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import psycopg2
import pytest
from support.airflow_deployment import (
    deployment_env,
    finished_state,
    log_tails,
    meta_rows,
    metadata_database,
    running,
    trigger,
    wait_for,
)

from modelgate.cli import main
from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import fetch_all

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]

UTC = dt.UTC
NAME = "gss-high-income"
DAYS = (dt.date(2024, 3, 1), dt.date(2024, 3, 2), dt.date(2024, 3, 3))
LENIENT = {"relative": 1e9, "wasserstein_floor": 1e9, "js_floor": 1.0,
           "multivariate": {"relative": 1e9, "floor": 1e9}, "attribution": {"relative": 1e9, "floor": 1e9}}


def _start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), UTC)


class TableLock:
    """An ACCESS EXCLUSIVE lock on one results table, held by the test's own session."""

    def __init__(self, url: str, table: str) -> None:
        self.url, self.table = url, table
        self.conn: Any = None

    def __enter__(self) -> TableLock:
        self.conn = psycopg2.connect(self.url)
        with self.conn.cursor() as cur:
            cur.execute(f"LOCK TABLE {self.table} IN ACCESS EXCLUSIVE MODE")
        return self

    def release(self) -> None:
        if self.conn is not None:
            self.conn.rollback()
            self.conn.close()
            self.conn = None

    def __exit__(self, *exc: object) -> None:
        self.release()

    def waiting_processes(self) -> list[int]:
        """Live client processes whose sessions wait behind this lock (psutil maps their ports).

        Behind it, not only on it: a step killed while it waited left a session that still
        waits and holds the row locks its transaction took, and the retry waits on those. The
        steps are the only clients of the results database that wait on locks here.
        """
        with psycopg2.connect(self.url) as conn, conn.cursor() as cur:
            cur.execute("""SELECT client_port FROM pg_stat_activity
                           WHERE datname = current_database() AND wait_event_type = 'Lock'""")
            ports = {int(r[0]) for r in cur.fetchall() if r[0] and r[0] > 0}
        pg_port = urlsplit(self.url).port or 5432
        return sorted({c.pid for c in psutil.net_connections(kind="tcp")
                       if c.pid and c.laddr and c.laddr.port in ports
                       and c.raddr and c.raddr.port == pg_port})


@pytest.fixture()
def deployment(settings_env: Settings, demo_builds: dict[str, Any], tmp_path: Path
               ) -> Iterator[tuple[Context, dict[str, str], str, list[Any], Path]]:
    from conftest import pg_admin_url

    if urlsplit(pg_admin_url()).hostname is None:
        pytest.skip("needs PostgreSQL over TCP to find the client process of a waiting session")
    ctx = Context.open(settings_env)
    build = demo_builds["1"]
    for archive in (build.archive_path, demo_builds["2"].archive_path):
        register_archive(ctx, archive)
    v1 = models.get(ctx.db_url, NAME, "1")
    models.promote(ctx.db_url, v1.model_version_id, expected_champion_id=None)
    live, labels = tmp_path / "live", tmp_path / "labels"
    years = sorted(build.live_dates)
    for day, year in zip(DAYS, years, strict=False):
        shutil.copytree(build.live_dir / f"dt={year}", live / f"dt={day}")
        shutil.copytree(build.labels_dir / f"dt={year}", labels / f"dt={day}")
    assert main(["monitor", "set", NAME, "--live", str(live), "--labels", str(labels),
                 "--reference", str(build.reference_path), "--sample-rows", "500",
                 "--thresholds", json.dumps(LENIENT)]) == 0
    with metadata_database() as metadata:
        env = deployment_env(tmp_path / "deploy", metadata,
                             ["drift_monitoring.py", "model_evaluation.py"],
                             {"MODELGATE_DRIFT_SCHEDULE": "@daily", "MODELGATE_DRIFT_CATCHUP": "false",
                              "MODELGATE_DRIFT_START_DATE": "2100-01-01"})
        env.pop("MODELGATE_DAG_RETRIES", None)  # the default: one retry
        logs = tmp_path / "logs"
        with running(env, logs) as procs:
            yield ctx, env, f"postgresql://{metadata}", procs, logs





def _try(meta: str, run_id: str, task_id: str) -> tuple[Any, ...]:
    rows = meta_rows(meta, """SELECT try_number, state FROM task_instance
                          WHERE run_id = %s AND task_id = %s ORDER BY map_index""", (run_id, task_id))
    assert len(rows) <= 1, rows
    return rows[0] if rows else (None, None)


def _drift_run(ctx: Context, day: dt.date) -> tuple[Any, ...] | None:
    rows = fetch_all(ctx.db_url, """SELECT interval_end, status, failure_reason, rows_sampled
                                    FROM drift_run WHERE interval_start = %s""", (_start(day),))
    return rows[0] if rows else None


def _kill_waiting(lock: TableLock, sig: int, killed: list[int], wait: Any) -> int:
    """Signal the next process (not one signalled before) whose step waits on ``lock``."""
    pid = wait(lambda: next((p for p in lock.waiting_processes() if p not in killed), None),
               f"a step waiting on {lock.table}")
    os.kill(pid, sig)
    killed.append(pid)
    return int(pid)


def test_manual_runs_signals_and_kills_with_default_retries(
    deployment: tuple[Context, dict[str, str], str, list[Any], Path],
) -> None:
    ctx, env, meta, procs, logs = deployment

    def wait(condition: Any, what: str) -> Any:
        return wait_for(condition, what, procs, logs)

    wait(lambda: meta_rows(meta, "SELECT count(*) FROM dag WHERE dag_id IN "
                             "('drift_monitoring', 'model_evaluation')")[0][0] == 2, "both DAGs parsed")

    # 1. manual triggers: no logical date, an interval_start, a bad interval_start
    trigger(env, "drift_monitoring", "manual-plain")
    assert wait(lambda: finished_state(meta, "manual-plain"), "manual-plain") == "success", log_tails(logs)
    ((run_after,),) = meta_rows(meta, "SELECT run_after FROM dag_run WHERE run_id = 'manual-plain'")
    yesterday = run_after.astimezone(UTC).date() - dt.timedelta(days=1)  # @daily, by hand
    assert _drift_run(ctx, yesterday) == (_start(yesterday) + dt.timedelta(days=1), "no_data", None, 0)

    trigger(env, "drift_monitoring", "manual-day", {"interval_start": DAYS[0].isoformat()})
    assert wait(lambda: finished_state(meta, "manual-day"), "manual-day") == "success", log_tails(logs)
    assert _drift_run(ctx, DAYS[0]) == (_start(DAYS[1]), "ok", None, 500)

    trigger(env, "drift_monitoring", "manual-bad", {"interval_start": "2024-03-01T06:00:00"})
    assert wait(lambda: finished_state(meta, "manual-bad"), "manual-bad") == "failed"
    assert _try(meta, "manual-bad", "plan")[1] == "failed"
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM drift_run") == [(2,)]

    # 2. SIGTERM to the first try; the retry succeeds and so does the run
    killed: list[int] = []
    with TableLock(ctx.db_url, "scored_interval") as lock:
        trigger(env, "drift_monitoring", "sigterm", {"interval_start": DAYS[1].isoformat()})
        _kill_waiting(lock, signal.SIGTERM, killed, wait)
        assert _try(meta, "sigterm", "sample_and_score") == (1, "running")
    assert wait(lambda: finished_state(meta, "sigterm"), "sigterm") == "success", log_tails(logs)
    assert _try(meta, "sigterm", "sample_and_score") == (2, "success")
    assert _drift_run(ctx, DAYS[1]) == (_start(DAYS[2]), "ok", None, 500)

    # 3. SIGKILL to both tries: the failure callback records the run failed
    with TableLock(ctx.db_url, "scored_interval") as lock:
        trigger(env, "drift_monitoring", "sigkill", {"interval_start": DAYS[2].isoformat()})
        _kill_waiting(lock, signal.SIGKILL, killed, wait)
        wait(lambda: _try(meta, "sigkill", "sample_and_score")[0] == 2, "the retry")
        _kill_waiting(lock, signal.SIGKILL, killed, wait)
    assert wait(lambda: finished_state(meta, "sigkill"), "sigkill") == "failed"
    assert _try(meta, "sigkill", "sample_and_score") == (2, "failed")
    end, status, reason, _ = wait(lambda: (r := _drift_run(ctx, DAYS[2])) and r[1] != "running" and r,
                                  "the failure callback")
    assert (status, reason.split(" (")[0]) == ("failed", "lost: Airflow DAG run sigkill failed while "
                                                         "this run was in progress"), log_tails(logs)
