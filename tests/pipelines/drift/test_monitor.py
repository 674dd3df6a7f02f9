"""Monitoring configs, quarantine and retry, no_data and the drift flag, prepare failures,
and the DAG over two monitored models (dag.test(); the real scheduler is in test_e2e_scheduler)."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from modelgate.cli import main
from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import feature_steps, runner
from modelgate.store import db, models, monitors
from modelgate.store.db import fetch_all

UTC = dt.UTC
NAME = "gss-high-income"
LENIENT = {"relative": 1e9, "wasserstein_floor": 1e9, "js_floor": 1.0,  # nothing can breach
           "multivariate": {"relative": 1e9, "floor": 1e9}, "attribution": {"relative": 1e9, "floor": 1e9}}


def renamed_archive(archive: Path, name: str, out: Path) -> Path:
    """The same model packaged under another model name (a second monitored model)."""
    from modelgate.onnx.artifact import package

    work = out / "unpacked"
    work.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    manifest = json.loads((work / "manifest.json").read_text())
    (work / "manifest.json").write_text(json.dumps({**manifest, "name": name}))
    return package(work / "model.onnx", work / "manifest.json", out / "model")


def _promote(ctx: Context, archive: Path) -> models.ModelVersionRow:
    row, _ = register_archive(ctx, archive)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    return models.get_by_id(ctx.db_url, row.model_version_id)


def _start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), UTC)


@pytest.fixture()
def ctx(settings_env: Settings) -> Context:
    return Context.open(settings_env)


def test_monitor_set_list_unset(ctx: Context, demo_builds: dict[str, Any],
                                capsys: pytest.CaptureFixture[str]) -> None:
    build = demo_builds["1"]
    row = _promote(ctx, build.archive_path)
    args = ["monitor", "set", NAME, "--live", str(build.live_dir), "--labels", str(build.labels_dir)]
    # bad input is refused with the parameter named (a usage error: exit 2), and nothing is stored
    assert main([*args, "--reference", str(build.reference_path), "--thresholds", "[1]"]) == 2
    assert main([*args, "--reference", str(build.reference_path), "--sample-rows", "0"]) == 2
    assert main([*args, "--reference", str(build.reference_path),
                 "--thresholds", '{"relativ": 2}']) == 2
    assert main(args) == 1  # no --reference and no evaluation to take it from
    err = capsys.readouterr().err
    assert "argument --thresholds: must be a JSON object" in err
    assert "argument --sample-rows: must be an integer >= 1" in err
    assert "unknown key(s) ['relativ']" in err and "pass --reference" in err
    assert monitors.list_all(ctx.db_url) == []
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM reference_sketch") == [(0,)]

    assert main([*args, "--reference", str(build.reference_path), "--sample-rows", "300",
                 "--thresholds", '{"relative": 2.5}']) == 0
    assert fetch_all(ctx.db_url, "SELECT model_version_id, n_features FROM reference_sketch") == [
        (row.model_version_id, 8)]  # built at `monitor set`: 7 inputs + the score
    assert main(["monitor", "list", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert listed == [{"model_name": NAME, "live_uri": str(build.live_dir),
                       "labels_uri": str(build.labels_dir),
                       "reference_uri": str(build.reference_path), "sample_rows": 300,
                       "thresholds": {"relative": 2.5}}]
    assert main(["monitor", "unset", NAME]) == 0
    assert main(["monitor", "unset", NAME]) == 1
    assert "is not monitored" in capsys.readouterr().err
    assert monitors.list_all(ctx.db_url) == []


def _copy_days(build: Any, root: Path, days: dict[dt.date, dt.date]) -> tuple[Path, Path]:
    live, labels = root / "live", root / "labels"
    for day, year in days.items():
        shutil.copytree(build.live_dir / f"dt={year}", live / f"dt={day}")
        shutil.copytree(build.labels_dir / f"dt={year}", labels / f"dt={day}")
    return live, labels


def _spec(live: Path, labels: Path, **extra: Any) -> dict[str, Any]:
    return feature_steps.MonitorSpec(NAME, str(live), str(labels), "", 400, dict(extra.get("thresholds", {})),
                             0.002).as_dict()


def test_no_data_keeps_the_drift_flag_and_a_clean_interval_clears_it(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    build = demo_builds["1"]
    row = _promote(ctx, build.archive_path)
    feature_steps.ensure_reference(ctx, row, str(build.reference_path))
    day1, day2 = dt.date(2024, 3, 1), dt.date(2024, 3, 2)
    live, labels = _copy_days(build, tmp_path, {day2: build.live_dates[0]})
    models.set_drifting(ctx.db_url, row.model_version_id, True)
    spec = _spec(live, labels, thresholds=LENIENT)
    assert runner.run_drift(ctx, spec, _start(day1), _start(day2)) == "no_data"
    assert models.get_by_id(ctx.db_url, row.model_version_id).is_drifting is True
    assert fetch_all(ctx.db_url, "SELECT status, light FROM analytics.drift_runs") == [("no_data", "amber")]
    report = fetch_all(ctx.db_url, "SELECT report_key FROM drift_run")[0][0]
    assert '<span class="verdict">WARN</span>' in ctx.store.get_bytes(report).decode()
    assert runner.run_drift(ctx, spec, _start(day2), _start(day2 + dt.timedelta(days=1))) == "ok"
    assert models.get_by_id(ctx.db_url, row.model_version_id).is_drifting is False
    _assert_score_shown_as_model_output(ctx, _start(day2))


def _assert_score_shown_as_model_output(ctx: Context, start: dt.datetime) -> None:
    """The model's output score drifted in a real run is "model score", of kind "model output",
    in the report, the analyst view and ``model show``; the internal name shows nowhere (#23)."""
    (run_id, report), = fetch_all(ctx.db_url, "SELECT drift_run_id, report_key FROM drift_run "
                                              "WHERE interval_start = %s", (start,))
    html = ctx.store.get_bytes(report).decode()
    assert "__score__" not in html
    assert "<td>model score</td><td>model output</td>" in html  # the features table's row
    assert "; model output (model score): ok, W norm" in html  # the first line
    views = fetch_all(ctx.db_url, "SELECT * FROM analytics.feature_drift_by_interval")
    assert views and "__score__" not in repr(views)
    assert fetch_all(ctx.db_url, """SELECT feature, kind FROM analytics.feature_drift_by_interval
                                    WHERE drift_run_id = %s AND drift_of = 'model_output'""",
                     (run_id,)) == [("model score", "prediction")]
    for fmt in ("text", "json"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["model", "show", NAME, "--format", fmt]) == 0
        assert "__score__" not in out.getvalue() and str(run_id) in out.getvalue()


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_bad_labels_partition_is_quarantined_later_intervals_go_on_and_retry_reprocesses(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    build = demo_builds["1"]
    _promote(ctx, build.archive_path)
    days = [dt.date(2024, 3, 1), dt.date(2024, 3, 2)]
    live, labels = _copy_days(build, tmp_path, dict(zip(days, build.live_dates[:2], strict=True)))
    bad = labels / f"dt={days[0]}" / "part-0.parquet"
    good = pd.read_parquet(bad)
    pd.concat([good, good.iloc[10:13]], ignore_index=True).to_parquet(bad, index=False)
    assert main(["monitor", "set", NAME, "--live", str(live), "--labels", str(labels),
                 "--reference", str(build.reference_path), "--sample-rows", "100000",
                 "--thresholds", json.dumps(LENIENT)]) == 0
    (spec,) = feature_steps.monitor_specs(ctx, {})

    assert runner.run_drift(ctx, spec, _start(days[0]), _start(days[1])) == "degraded"
    (run_id, status, reason, degraded_report), = fetch_all(
        ctx.db_url, "SELECT drift_run_id, status, degraded_reason, report_key FROM drift_run")
    assert status == "degraded" and "\n" not in reason
    assert degraded_report == f"reports/{NAME}/1/drift-2024-03-01-run{run_id}.html"  # midnight: no time
    assert f"labels partition dt={days[0]}" in reason and "6 rows share their 'row_id' value" in reason
    assert not any(re.search(rf"\b{i}\b", reason) for i in good["row_id"].iloc[10:13])  # no raw ids
    # the next interval is processed; the quarantined labels are not fed (nor retried) by it
    assert runner.run_drift(ctx, spec, _start(days[1]), _start(days[1] + dt.timedelta(days=1))) == "ok"
    assert fetch_all(ctx.db_url, """SELECT interval_start, labels_consumed_at IS NOT NULL,
                                           quarantined_at IS NOT NULL FROM scored_interval
                                    ORDER BY interval_start""") == [
        (_start(days[0]), False, True), (_start(days[1]), True, False)]
    assert fetch_all(ctx.db_url, "SELECT model_name, interval_start FROM "
                                 "analytics.quarantined_partitions") == [(NAME, _start(days[0]))]

    good.to_parquet(bad, index=False)  # the delivery is fixed
    assert main(["monitor", "retry", NAME, "--interval", days[0].isoformat()]) == 0
    assert fetch_all(ctx.db_url, """SELECT drift_run_id, status, failure_reason, rows_labelled
                                    FROM drift_run WHERE interval_start = %s""",
                     (_start(days[0]),)) == [(run_id, "ok", None, len(good))]
    # the retry is the run's second attempt: its report has a key of its own, and the degraded
    # attempt's report is kept as it was (evidence is never overwritten, #23)
    (retried_report,), = fetch_all(ctx.db_url, "SELECT report_key FROM drift_run WHERE drift_run_id = %s",
                                   (run_id,))
    assert retried_report == f"reports/{NAME}/1/drift-2024-03-01-run{run_id}-attempt2.html"
    assert "Degraded: 1 partition(s) quarantined" in ctx.store.get_bytes(degraded_report).decode()
    assert "Degraded" not in ctx.store.get_bytes(retried_report).decode()
    assert fetch_all(ctx.db_url, """SELECT labels_consumed_at IS NOT NULL, quarantined_at
                                    FROM scored_interval WHERE interval_start = %s""",
                     (_start(days[0]),)) == [(True, None)]
    assert main(["monitor", "retry", NAME, "--interval", "2024-02-01"]) == 1


def test_prepare_failure_leaves_a_failed_run_with_its_reason(
    ctx: Context, demo_builds: dict[str, Any],
) -> None:
    _promote(ctx, demo_builds["1"].archive_path)  # no `monitor set`: no reference sketch
    with pytest.raises(LookupError, match="no reference sketch"):
        feature_steps.prepare(ctx, model_name=NAME, interval_start=_start(dt.date(2024, 3, 1)),
                      interval_end=_start(dt.date(2024, 3, 2)))
    (status, reason, finished), = fetch_all(
        ctx.db_url, "SELECT status, failure_reason, finished_at IS NOT NULL FROM drift_run")
    assert (status, finished) == ("failed", True)
    assert reason.startswith("LookupError: no reference sketch stored for gss-high-income v1")



def test_a_drift_run_left_running_by_a_dead_process_is_marked_abandoned(
    ctx: Context, demo_builds: dict[str, Any],
) -> None:
    from modelgate.store import drift_runs

    row = _promote(ctx, demo_builds["1"].archive_path)
    day1, day2, day3 = (_start(dt.date(2024, 3, d)) for d in (1, 2, 3))
    dead = drift_runs.start_drift_run(ctx.db_url, model_version_id=row.model_version_id,
                                      interval_start=day1, interval_end=day2)
    alive = drift_runs.start_drift_run(ctx.db_url, model_version_id=row.model_version_id,
                                       interval_start=day2, interval_end=day3)
    with db.transaction(ctx.db_url) as cur:  # the dead worker's last sign of life: 2 hours ago
        cur.execute("UPDATE drift_run SET started_at = now() - interval '3 hours', "
                    "heartbeat_at = now() - interval '2 hours' WHERE drift_run_id = %s", (dead,))
    drift_runs.beat(ctx.db_url, alive)  # a run that is still working is left alone
    with pytest.raises(LookupError, match="no reference sketch"):  # the next run of the model
        feature_steps.prepare(ctx, model_name=NAME, interval_start=_start(dt.date(2024, 3, 4)),
                      interval_end=_start(dt.date(2024, 3, 5)))
    rows = dict((r[0], r[1:]) for r in fetch_all(
        ctx.db_url, "SELECT drift_run_id, status, failure_reason FROM drift_run"))
    status, reason = rows[dead]
    assert status == "abandoned"
    assert re.fullmatch(r"abandoned: no heartbeat since \S+Z \(more than 30 min\); noticed by the "
                        r"run of interval 2024-03-04T00:00:00Z", reason), reason
    assert rows[alive] == ("running", None)
    (light,), = fetch_all(ctx.db_url, "SELECT light FROM analytics.drift_runs "
                                      "WHERE drift_run_id = %s", (dead,))
    assert light == "red"

@pytest.mark.e2e  # a DAG run
def test_dag_fans_out_over_monitored_models_and_one_failure_does_not_stop_the_other(
    ctx: Context, airflow_db: Path, demo_builds: dict[str, Any], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from modelgate.airflow_runner import run_dag

    monkeypatch.setenv("MODELGATE_DAG_RETRIES", "0")
    build = demo_builds["1"]
    day = dt.date(2024, 3, 1)
    # 1993: clear drift from the 1974-1990 reference even in a 500-row sample (whole
    # partition, scipy: age W1/std 0.128 over the 0.1 floor, occupation and education JS
    # 0.017 and 0.018 over 0.01)
    live, labels = _copy_days(build, tmp_path, {day: build.live_dates[1]})
    other = "gss-income-b"
    _promote(ctx, build.archive_path)
    row_b = _promote(ctx, renamed_archive(build.archive_path, other, tmp_path / "b"))
    for name in (NAME, other):
        assert main(["monitor", "set", name, "--live", str(live), "--labels", str(labels),
                     "--reference", str(build.reference_path), "--sample-rows", "500"]) == 0
    fetch_all(ctx.db_url, "DELETE FROM reference_sketch WHERE model_version_id = %s RETURNING 1",
              (row_b.model_version_id,))  # model B's prepare will fail

    # a manual run reads the last whole interval before its logical date
    dagrun = run_dag("drift_monitoring", logical_date=_start(day + dt.timedelta(days=1)))
    assert str(dagrun.state) == "failed"  # red: one model failed
    rows = fetch_all(ctx.db_url, """SELECT model_name, interval_start, interval_end, status,
                                           failure_reason, drift_run_id FROM analytics.drift_runs
                                    ORDER BY model_name""")
    assert [r[:3] for r in rows] == [(NAME, _start(day), _start(day) + dt.timedelta(days=1)),
                                     (other, _start(day), _start(day) + dt.timedelta(days=1))]
    assert rows[0][3] == "drift" and rows[0][4] is None
    assert rows[1][3] == "failed" and "no reference sketch stored for gss-income-b" in rows[1][4]
    features = fetch_all(ctx.db_url, "SELECT count(*) FROM feature_drift WHERE drift_run_id = %s",
                         (rows[0][5],))
    assert features == [(8,)]
    # the same interval again (as a manual run on a date the schedule used): replaced, not duplicated
    run_dag("drift_monitoring", conf={"model_name": NAME},
            logical_date=_start(day + dt.timedelta(days=1)) + dt.timedelta(hours=5))
    again = fetch_all(ctx.db_url, "SELECT drift_run_id, status FROM drift_run "
                                  "WHERE drift_run_id = %s", (rows[0][5],))
    assert again == [(rows[0][5], rows[0][3])]
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM drift_run") == [(2,)]


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_monitor_set_before_production_builds_the_sketch_at_promotion(
    ctx: Context, demo_builds: dict[str, Any], capsys: pytest.CaptureFixture[str],
) -> None:
    build = demo_builds["1"]
    assert main(["monitor", "set", NAME, "--live", str(build.live_dir), "--labels",
                 str(build.labels_dir), "--reference", str(build.reference_path)]) == 0
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM reference_sketch") == [(0,)]
    assert main(["monitor", "list"]) == 0
    assert re.search(rf"^{NAME} +- +5000 ", capsys.readouterr().out, flags=re.M)  # not in production
    assert main(["evaluate", "--model", str(build.archive_path), "--data", str(build.heldout_path),
                 "--promote", "--format", "json"]) == 0
    assert "built its drift reference sketch" in json.loads(capsys.readouterr().out)["promoted"]
    production = models.get_production(ctx.db_url, NAME)
    assert production is not None
    assert fetch_all(ctx.db_url, "SELECT model_version_id, n_rows FROM reference_sketch") == [
        (production.model_version_id, len(pd.read_parquet(build.reference_path)))]
    # the quality schema and the calibrator too (the reference holds the labels)
    assert fetch_all(ctx.db_url, """SELECT model_version_id, method, n_rows, n_features
                                    FROM estimation_reference""") == [
        (production.model_version_id, "cbpe_isotonic", len(pd.read_parquet(build.reference_path)),
         len(production.manifest.features))]


@pytest.mark.e2e  # a DAG run
def test_dag_with_no_monitored_model_records_nothing(ctx: Context, airflow_db: Path) -> None:
    from modelgate.airflow_runner import run_dag

    dagrun = run_dag("drift_monitoring", logical_date=_start(dt.date(2024, 3, 2)))
    assert str(dagrun.state) == "success"
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM drift_run") == [(0,)]


def test_a_run_s_thresholds_naming_a_feature_the_model_lacks_are_refused(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    """The DAG's run-time ``thresholds`` param is checked as ``monitor set`` checks its own: a
    misspelt feature would otherwise leave the real one on the default thresholds silently."""
    build = demo_builds["1"]
    _promote(ctx, build.archive_path)
    days = [dt.date(2024, 3, 1)]
    live, labels = _copy_days(build, tmp_path, dict(zip(days, build.live_dates[:1], strict=True)))
    assert main(["monitor", "set", NAME, "--live", str(live), "--labels", str(labels),
                 "--reference", str(build.reference_path)]) == 0
    with pytest.raises(ValueError, match=r"param 'thresholds' for 'gss-high-income': name "
                                         r"feature\(s\) \['agee'\] that v1 does not have"):
        feature_steps.monitor_specs(ctx, {"thresholds": {"features": {"agee": {"relative": 2.0}}}})
    (spec,) = feature_steps.monitor_specs(ctx, {"thresholds": {"features": {"age": {"relative": 2.0}}}})
    assert spec["thresholds"] == {"features": {"age": {"relative": 2.0}}}
