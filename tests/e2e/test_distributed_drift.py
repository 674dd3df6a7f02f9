"""drift_monitoring on a real CeleryExecutor deployment with two workers.

Two production models (the demo's v1, and v2 packaged as a second model) are monitored on
live and label partitions under ``s3://`` prefixes; the scheduler catches up over two
daily intervals. Every per-feature task downloads the interval's scored sample from the
object store; both workers' gates hold those downloads until each worker has one, so the
feature fan-out provably ran on both. The stored drift rows must equal those of the
one-process runner (``run_drift``, what ``modelgate monitor retry`` runs) over the same
intervals in a results database and bucket of its own, computed before Airflow starts.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import _admin, database_url, pg_admin_url
from support.celery_deployment import Deployment, wait_for
from test_e2e_scheduler import _renamed_archive

from modelgate.config import S3Settings, Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import db, models
from modelgate.store.db import fetch_all

pytestmark = [pytest.mark.e2e, pytest.mark.distributed, pytest.mark.timeout(1800)]

UTC = dt.UTC
DAYS = (dt.date(2024, 3, 1), dt.date(2024, 3, 2))
MODEL_A, MODEL_B = "gss-high-income", "gss-income-b"
A, B = "worker-a", "worker-b"
RUNS = ("SELECT mv.model_name, r.interval_start, r.interval_end, r.status, r.verdict, r.rows_available, "
        "r.rows_sampled, r.rows_labelled, r.n_features_breached FROM drift_run r JOIN model_version mv "
        "USING (model_version_id) ORDER BY 1, 2")
FEATURES = ("SELECT mv.model_name, r.interval_start, f.feature, f.kind, f.drift_rank, f.wasserstein, "
            "f.wasserstein_normalised, f.js_divergence_base2, f.statistic_name, f.statistic_value, "
            "f.baseline, f.threshold, f.verdict, f.n_reference, f.n_current, f.n_missing_current "
            "FROM feature_drift f JOIN drift_run r USING (drift_run_id) JOIN model_version mv "
            "USING (model_version_id) ORDER BY 1, 2, 3")


def _stores(url: str, s3: S3Settings, home: Path) -> dict[str, str]:
    return {"MODELGATE_HOME": str(home), "MODELGATE_DATABASE_URL": url,
            "MODELGATE_S3_ENDPOINT": s3.endpoint, "MODELGATE_S3_ACCESS_KEY": s3.access_key,
            "MODELGATE_S3_SECRET_KEY": s3.secret_key, "MODELGATE_S3_BUCKET": s3.bucket}


def _configure(env: dict[str, str], demo_builds: dict[str, Any], data: Path, archive_b: Path) -> Context:
    """Both models registered, in production and monitored on the s3:// copies of ``data``."""
    from modelgate.cli import main

    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        ctx = Context.open(Settings.from_env())
        for path in sorted(p for p in data.rglob("*.parquet")):
            ctx.store.put_file(f"feeds/{path.relative_to(data).as_posix()}", path,
                               content_type="application/vnd.apache.parquet")
        for archive in (demo_builds["1"].archive_path, archive_b):
            row, _ = register_archive(ctx, archive)
            models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
        bucket = env["MODELGATE_S3_BUCKET"]
        for model, build in ((MODEL_A, demo_builds["1"]), (MODEL_B, demo_builds["2"])):
            assert main(["monitor", "set", model, "--live", f"s3://{bucket}/feeds/live/",
                         "--labels", f"s3://{bucket}/feeds/labels/", "--reference",
                         str(build.reference_path), "--sample-rows", "800"]) == 0
    return ctx


def _one_process(env: dict[str, str]) -> None:
    """Each interval, each model, in this process: the runner ``monitor retry`` calls."""
    from modelgate.pipelines.drift import feature_steps
    from modelgate.pipelines.drift.runner import run_drift

    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        ctx = Context.open(Settings.from_env())
        for day in DAYS:
            start = dt.datetime.combine(day, dt.time(), UTC)
            for spec in feature_steps.monitor_specs(ctx, {}):
                # a breach is stored as `drift`, as the DAG's red decide task leaves it
                with contextlib.suppress(feature_steps.DriftBreached):
                    run_drift(ctx, spec, start, start + dt.timedelta(days=1))


@pytest.fixture(scope="module")
def drift_stack(pg_url: str, s3_server: Any, demo_builds: dict[str, Any],
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Deployment, str, str]]:
    root = tmp_path_factory.mktemp("celery-drift")
    build = demo_builds["1"]
    data = root / "data"
    for day, year in zip(DAYS, (build.live_dates[-1], build.live_dates[-2]), strict=True):
        shutil.copytree(build.live_dir / f"dt={year}", data / "live" / f"dt={day}")
        shutil.copytree(build.labels_dir / f"dt={year}", data / "labels" / f"dt={day}")
    archive_b = _renamed_archive(demo_builds["2"].archive_path, MODEL_B, root / "b")
    name = f"modelgate_one_{uuid.uuid4().hex[:10]}"
    _admin(f"CREATE DATABASE {name}")
    one_url = database_url(pg_admin_url(), name)
    db.upgrade(one_url)
    buckets = [S3Settings(endpoint=s3_server.endpoint, access_key="modelgate-test",
                          secret_key="modelgate-test-secret", bucket=f"mg-{uuid.uuid4().hex[:12]}")
               for _ in range(2)]
    dag_env = _stores(pg_url, buckets[0], root / "cli-home")
    one_env = _stores(one_url, buckets[1], root / "one-home")
    deployment = None
    try:
        _configure(dag_env, demo_builds, data, archive_b)
        _configure(one_env, demo_builds, data, archive_b)
        _one_process(one_env)
        env = {**os.environ, **dag_env, "MODELGATE_DAG_RETRIES": "1",
               "MODELGATE_DRIFT_SCHEDULE": "@daily", "MODELGATE_DRIFT_CATCHUP": "true",
               "MODELGATE_DRIFT_START_DATE": DAYS[0].isoformat(),
               "MODELGATE_DRIFT_END_DATE": DAYS[-1].isoformat()}
        deployment = Deployment(root / "deployment", ("drift_monitoring.py",), env, s3_server.endpoint)
        # Set before the DAG is parsed: the first interval's feature tasks wait on both workers.
        for gate in deployment.gates.values():
            gate.hold("scored-sample.parquet")
        deployment.start()
        yield deployment, pg_url, one_url
    finally:
        if deployment is not None:
            deployment.stop()
        _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        from conftest import _truncate_all

        _truncate_all(pg_url)


def test_feature_tasks_spread_over_both_workers_and_equal_one_process(
        drift_stack: tuple[Deployment, str, str]) -> None:
    deployment, dag_url, one_url = drift_stack
    for worker, gate in deployment.gates.items():
        wait_for(f"a feature task's sample download on {worker}", gate.seen.is_set, 900,
                 deployment.check_alive)
    running = {w: deployment.query("SELECT map_index FROM task_instance WHERE task_id = "
                                   "'feature_drift' AND state = 'running' AND hostname = %s", (w,))
               for w in (A, B)}
    for gate in deployment.gates.values():
        gate.release()
    assert all(running.values()), running  # both workers ran feature tasks at the same moment

    def finished() -> list[tuple[Any, ...]]:
        rows = deployment.query("SELECT run_id, state FROM dag_run WHERE dag_id = 'drift_monitoring'")
        return rows if len(rows) == len(DAYS) and all(r[1] in ("success", "failed") for r in rows) else []

    runs = wait_for("both intervals' DAG runs", finished, 1200, deployment.check_alive)
    hosts = deployment.query("SELECT DISTINCT hostname FROM task_instance WHERE task_id = 'feature_drift'")
    assert {h[0] for h in hosts} == {A, B}
    stored, expected = fetch_all(dag_url, RUNS), fetch_all(one_url, RUNS)
    # status ok or drift: every run finished (none failed, abandoned or degraded). Which of the
    # two each is, is what the equality below pins: the same rows, verdicts included, as the
    # one-process runner's on the same data (whose verdicts its own tests pin); this test is
    # about spreading the work over workers, not about the verdict rule.
    assert len(stored) == len(DAYS) * 2 and all(r[3] in ("ok", "drift") for r in stored), (
        stored, runs, deployment.log_tails())
    assert stored == expected
    assert fetch_all(dag_url, FEATURES) == fetch_all(one_url, FEATURES)  # exactly
