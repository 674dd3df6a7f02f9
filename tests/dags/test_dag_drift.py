"""The drift_monitoring DAG end to end: dag.test() over demo live intervals, real PG and S3."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.store import models
from modelgate.store.db import transaction

UTC = dt.UTC


def _run_interval(build: Any, day: dt.date, **extra: Any) -> Any:
    from modelgate.airflow_runner import run_dag

    conf = {"model_name": "gss-high-income", "live": str(build.live_dir),
            "labels": str(build.labels_dir), "reference": str(build.reference_path),
            "sample_size": 2000, **extra}
    # a manual run reads the last whole interval before its logical date: the day before
    return run_dag("drift_monitoring", conf=conf,
                   logical_date=dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), UTC))


@pytest.fixture()
def production(settings_env: Settings, airflow_db: Path, demo_builds: dict[str, Any],
               monkeypatch: pytest.MonkeyPatch) -> Context:
    monkeypatch.setenv("MODELGATE_DAG_RETRIES", "0")
    ctx = Context.open(settings_env)
    row, _ = register_archive(ctx, demo_builds["1"].archive_path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    return ctx


def _features(url: str, day: dt.date) -> dict[str, tuple[Any, ...]]:
    with transaction(url) as cur:
        cur.execute(
            """SELECT f.feature, f.wasserstein, f.js_divergence_base2, f.verdict, f.n_current
               FROM feature_drift f JOIN drift_run r USING (drift_run_id)
               WHERE r.interval_start = %s ORDER BY f.feature""",
            (dt.datetime.combine(day, dt.time(), UTC),))
        return {r[0]: r[1:] for r in cur.fetchall()}


@pytest.mark.e2e
def test_drift_dag_runs_intervals_and_fanout_matches_single_task(
    production: Context, demo_builds: dict[str, Any],
) -> None:
    from modelgate.pipelines.drift import feature_steps

    build = demo_builds["1"]
    days = list(build.live_dates)[:2]
    for day in days:
        dagrun = _run_interval(build, day)
        assert str(dagrun.state) in ("success", "failed")
    with transaction(production.db_url) as cur:
        cur.execute("SELECT status, rows_sampled, report_key, drift_run_id FROM drift_run "
                    "ORDER BY interval_start")
        runs = cur.fetchall()
    # 1991 and 1993 drift from the 1974-1990 reference (scipy, whole partitions): occupation
    # JS 0.0135 and 0.017 over the 0.01 floor, age W1/std 0.105 and 0.128 over 0.1
    assert [r[0] for r in runs] == ["drift", "drift"]
    with transaction(production.db_url) as cur:  # migration 0010
        cur.execute("SELECT DISTINCT provider_reason, tf32_allowed FROM drift_run")
        assert cur.fetchall() == [("auto: CPU, ONNX Runtime offers no CUDA provider", False)]
    assert all(r[1] > 0 and r[2] for r in runs)
    # the mapped per-feature tasks give exactly the numbers of one call over all features
    stored = _features(production.db_url, days[0])
    row = drift_runs_ref(production, runs[0][3])
    single = {f.feature: f for f in feature_steps.all_feature_drift(
        production, row, {"key": f"{row.prefix()}/scored-sample.parquet"})}
    assert set(stored) == set(single) and len(stored) == 8  # 7 inputs + the score
    for name, (w, js, verdict, n) in stored.items():
        assert (w, js, verdict, n) == (single[name].wasserstein, single[name].js_divergence,
                                       single[name].verdict, single[name].n_current)
    # a per-feature threshold override changes that feature's verdict only
    breached = next(name for name, f in single.items() if f.verdict == "drift")
    lenient = {"features": {breached: {"relative": 1e9, "wasserstein_floor": 1e9, "js_floor": 1.0}}}
    relaxed = {f.feature: f.verdict for f in feature_steps.all_feature_drift(
        production, row, {"key": f"{row.prefix()}/scored-sample.parquet"}, lenient)}
    assert relaxed[breached] == "ok"
    assert {k: v for k, v in relaxed.items() if k != breached} == {
        k: f.verdict for k, f in single.items() if k != breached}
    # re-running an interval gives the same rows
    _run_interval(build, days[0])
    assert _features(production.db_url, days[0]) == stored
    html = production.store.get_bytes(runs[0][2]).decode()
    assert "<svg" in html and "gss-high-income" in html


@pytest.mark.parametrize("spec", [{"relativ": 2}, {"features": {"age": {"floor": 1}}}],
                         ids=["unknown-key", "unknown-feature-key"])
def test_bad_drift_thresholds_are_named(spec: dict[str, Any]) -> None:
    from modelgate.pipelines.drift import feature_steps

    with pytest.raises(ValueError, match="unknown key"):
        feature_steps.parse_thresholds(spec)


def drift_runs_ref(ctx: Context, run_id: int) -> Any:
    from modelgate.pipelines.drift import feature_steps
    from modelgate.store import drift_runs

    run = drift_runs.get_drift_run(ctx.db_url, run_id)
    mv = models.get_by_id(ctx.db_url, run.model_version_id)
    return feature_steps.DriftRef(run_id, mv.model_version_id, mv.model_name, mv.version,
                          run.interval_start.isoformat(), run.interval_end.isoformat())


@pytest.mark.e2e
def test_interval_without_live_rows_is_recorded_as_no_data(
    production: Context, demo_builds: dict[str, Any],
) -> None:
    dagrun = _run_interval(demo_builds["1"], dt.date(1980, 6, 1))
    assert str(dagrun.state) == "success"
    with transaction(production.db_url) as cur:
        cur.execute("SELECT status, rows_sampled FROM drift_run")
        assert cur.fetchall() == [("no_data", 0)]


@pytest.mark.e2e
def test_a_drift_task_that_fails_once_and_succeeds_on_retry_leaves_a_finished_run(
    production: Context, airflow_db: Path, demo_builds: dict[str, Any], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The live file of the interval is half-written when the first try reads it: the
    `sample_and_score` try fails, the file is completed before Airflow retries, and the run
    ends as if nothing had happened, not `failed` with the first try's reason.

    The file is completed as the first try's failure is raised (dag.test() runs tasks in this
    process), so the retry reads the whole file whatever the machine's speed."""
    import shutil

    from modelgate.pipelines.drift import feature_steps

    monkeypatch.setenv("MODELGATE_DAG_RETRIES", "1")
    build = demo_builds["1"]
    day = list(build.live_dates)[0]
    live = tmp_path / "live"
    shutil.copytree(build.live_dir, live)
    (part,) = (live / f"dt={day.isoformat()}").glob("*.parquet")
    whole = part.read_bytes()
    part.write_bytes(whole[: len(whole) // 2])  # a writer is still at it
    original, failures = feature_steps.sample_and_score, []

    def writer_finishes_once_a_try_failed(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except Exception as exc:
            failures.append(type(exc).__name__)
            part.write_bytes(whole)
            raise

    monkeypatch.setattr(feature_steps, "sample_and_score", writer_finishes_once_a_try_failed)
    dagrun = _run_interval(build, day, live=str(live))
    assert len(failures) == 1, failures
    tries = {ti.task_id: (ti.try_number, str(ti.state)) for ti in dagrun.get_task_instances()}
    assert tries["sample_and_score"] == (2, "success"), tries
    with transaction(production.db_url) as cur:
        cur.execute("SELECT status, failure_reason FROM drift_run")
        ((status, reason),) = cur.fetchall()
    # 1991 drifts (occupation JS 0.0135 over the 0.01 floor), so decide fails the DAG run
    assert status == "drift" and reason is None
    assert str(dagrun.state) == "failed"


def test_the_js_null_level_is_a_threshold_key() -> None:
    from modelgate.pipelines.drift import feature_steps

    t = feature_steps.parse_thresholds({"null_level": None, "features": {"age": {"null_level": 0.999}}})
    levels = (t.null_level, t.for_feature("age").null_level, t.for_feature("x").null_level)
    assert levels == (None, 0.999, None)
    assert feature_steps.parse_thresholds({}).null_level == 0.99
