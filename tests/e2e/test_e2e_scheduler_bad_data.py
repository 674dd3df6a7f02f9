"""A mistyped labels partition on a real Airflow scheduler with the DAG's default retries
(issue #21): the scheduler catches up over three daily intervals of one model, and the
labels of the middle one store ``row_id`` as strings (the live ids are integers).

That partition is quarantined with its name and problem, its run ends ``degraded`` (verdict
``ok``, amber), the decide task's log lists it, and the intervals before and after it finish
``ok`` with their labels fed to ADWIN; the counts in ``analytics.drift_runs`` add up to what
the detector saw. The deployment is :mod:`airflow_deployment`'s."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from support.airflow_deployment import airflow_env, run_scheduler

from modelgate.cli import main
from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import fetch_all

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

UTC = dt.UTC
NAME = "gss-high-income"
DAYS = (dt.date(2024, 3, 1), dt.date(2024, 3, 2), dt.date(2024, 3, 3))
MISTYPED = DAYS[1]
LENIENT = {"relative": 1e9, "wasserstein_floor": 1e9, "js_floor": 1.0,  # nothing can breach
           "multivariate": {"relative": 1e9, "floor": 1e9}, "attribution": {"relative": 1e9, "floor": 1e9}}
WAIT_S = 1200


def _partitions(build: Any, root: Path) -> tuple[Path, Path]:
    live, labels = root / "live", root / "labels"
    for day, year in zip(DAYS, build.live_dates, strict=False):
        shutil.copytree(build.live_dir / f"dt={year}", live / f"dt={day}")
        shutil.copytree(build.labels_dir / f"dt={year}", labels / f"dt={day}")
    bad = labels / f"dt={MISTYPED}" / "part-0.parquet"
    frame = pd.read_parquet(bad)
    frame.assign(row_id=frame["row_id"].astype(str)).to_parquet(bad, index=False)
    return live, labels


def _joined(live: Path, labels: Path, day: dt.date) -> int:
    """Labelled live rows of a day, by pandas (every live row is sampled)."""
    ids = pd.read_parquet(live / f"dt={day}", columns=["row_id"])
    return len(ids.merge(pd.read_parquet(labels / f"dt={day}", columns=["row_id"]), on="row_id"))


def _task_logs(airflow_home: Path, text: str) -> list[str]:
    return sorted(str(p.relative_to(airflow_home)) for p in (airflow_home / "logs").rglob("*.log")
                  if text in p.read_text(errors="replace"))


def test_a_mistyped_labels_partition_is_quarantined_and_every_other_interval_finishes(
    settings_env: Settings, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    build = demo_builds["1"]
    ctx = Context.open(settings_env)
    row, _ = register_archive(ctx, build.archive_path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    live, labels = _partitions(build, tmp_path / "data")
    assert main(["monitor", "set", NAME, "--live", str(live), "--labels", str(labels),
                 "--reference", str(build.reference_path), "--sample-rows", "100000",
                 "--thresholds", json.dumps(LENIENT)]) == 0
    rows: list[tuple[Any, ...]] = []
    dag_runs: list[tuple[Any, ...]] = []

    def finished(airflow_db: str) -> bool:
        rows[:] = fetch_all(ctx.db_url, """SELECT interval_start, status, verdict, light,
                                                  degraded_reason, failure_reason, rows_labelled
                                           FROM analytics.drift_runs ORDER BY interval_start""")
        dag_runs[:] = fetch_all(airflow_db, "SELECT state FROM dag_run ORDER BY logical_date")
        return (len(rows) == len(DAYS) and all(r[1] != "running" for r in rows)
                and len(dag_runs) == len(DAYS) and all(r[0] in ("success", "failed") for r in dag_runs))

    with airflow_env(tmp_path, DAYS[0], DAYS[-1], retries=None) as env:
        assert "MODELGATE_DAG_RETRIES" not in env  # the DAG's default: one retry
        airflow_db = env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].replace("+psycopg2", "")
        dead, tails = run_scheduler(env, tmp_path / "logs", lambda: finished(airflow_db), WAIT_S)
        done = finished(airflow_db)
    assert not dead, f"Airflow processes exited early: {dead}\n{tails}"
    assert done, (rows, dag_runs, tails)
    runs = {r[0].date(): r[1:] for r in rows}
    assert [r[0] for r in rows] == [dt.datetime.combine(d, dt.time(), UTC) for d in DAYS]

    # the bad partition: quarantined, named with its problem, its run degraded (not failed)
    status, verdict, light, reason, failure, labelled = runs[MISTYPED]
    assert (status, verdict, light, failure, labelled) == ("degraded", "ok", "amber", None, 0)
    assert f"labels partition dt={MISTYPED} under {labels}" in reason and "\n" not in reason
    assert "'row_id' holds string ids" in reason
    assert fetch_all(ctx.db_url, """SELECT interval_start, source, partition_name
                                    FROM analytics.quarantined_partitions""") == [
        (dt.datetime.combine(MISTYPED, dt.time(), UTC), "labels", f"dt={MISTYPED}")]
    assert _task_logs(Path(env["AIRFLOW_HOME"]), f"left out labels partition dt={MISTYPED}"), tails
    # every other interval finished ok with its labels fed; the counts add up to ADWIN's
    for day in (DAYS[0], DAYS[2]):
        assert runs[day][:5] == ("ok", "ok", "green", None, None), runs[day]
        assert runs[day][5] == _joined(live, labels, day) > 0
    (seen,), = fetch_all(ctx.db_url, "SELECT elements_seen FROM detector_state")
    assert seen == sum(r[5] for r in runs.values())
    assert dag_runs == [("success",)] * len(DAYS), dag_runs
