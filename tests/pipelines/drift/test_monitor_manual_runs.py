"""Runs started by hand: which interval a manual DAG run reads, `monitor run` back-filling a
first interval, `monitor set` refusing locations that can never work, runs lost with their
Airflow DAG run, and reference datasets given as directories or prefixes (issue #21).

The scheduler side of the same (manual triggers, SIGTERM and SIGKILL) is in
``tests/e2e/test_e2e_manual_and_killed_runs.py``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from modelgate.cli import main
from modelgate.config import Settings
from modelgate.pipelines.context import Context, fetch_dataset, register_archive
from modelgate.pipelines.drift import runner as drift_runner
from modelgate.pipelines.drift.interval import run_interval
from modelgate.pipelines.evaluation import runner as evaluation_runner
from modelgate.store import drift_runs, models, monitors, runs
from modelgate.store.db import fetch_all

UTC = dt.UTC
NAME = "gss-high-income"


def _utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


# Expected intervals worked by hand from the cron expressions.
@pytest.mark.parametrize(("schedule", "interval_start", "data_interval", "run_after", "expected"), [
    ("@daily", "", None, _utc(2024, 3, 9, 5, 30), (_utc(2024, 3, 8), _utc(2024, 3, 9))),
    ("@daily", "", None, _utc(2024, 3, 9), (_utc(2024, 3, 8), _utc(2024, 3, 9))),
    ("0 * * * *", "", None, _utc(2024, 3, 9, 5, 30), (_utc(2024, 3, 9, 4), _utc(2024, 3, 9, 5))),
    ("@daily", "2024-03-01", None, _utc(2024, 3, 9, 5), (_utc(2024, 3, 1), _utc(2024, 3, 2))),
    ("@daily", "2024-03-01", (_utc(2024, 3, 5), _utc(2024, 3, 6)), _utc(2024, 3, 9),
     (_utc(2024, 3, 1), _utc(2024, 3, 2))),
    ("@daily", "", (_utc(2024, 3, 5), _utc(2024, 3, 6)), _utc(2024, 3, 9),
     (_utc(2024, 3, 5), _utc(2024, 3, 6))),
    ("0 6 * * 1", "2024-03-04T06:00:00+00:00", None, _utc(2024, 3, 20),  # Mondays 06:00
     (_utc(2024, 3, 4, 6), _utc(2024, 3, 11, 6))),
], ids=["no-logical-date", "at-midnight", "hourly", "param", "param-over-airflow",
        "airflow-interval", "weekly"])
def test_the_interval_a_run_reads(schedule: str, interval_start: str, data_interval: Any,
                                  run_after: dt.datetime, expected: tuple[dt.datetime, dt.datetime]) -> None:
    assert run_interval(schedule, interval_start=interval_start, data_interval=data_interval,
                        run_after=run_after) == expected


@pytest.mark.parametrize("bad", ["2024-03-01T06:00", "yesterday"])
def test_an_interval_start_that_is_no_start_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="interval_start"):
        run_interval("@daily", interval_start=bad, data_interval=None, run_after=_utc(2024, 3, 9))


@pytest.fixture()
def ctx(settings_env: Settings) -> Context:
    return Context.open(settings_env)


@pytest.fixture()
def production(ctx: Context, demo_builds: dict[str, Any]) -> models.ModelVersionRow:
    row, _ = register_archive(ctx, demo_builds["1"].archive_path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    return models.get_by_id(ctx.db_url, row.model_version_id)


def test_monitor_set_refuses_locations_that_can_never_work(
    ctx: Context, production: models.ModelVersionRow, demo_builds: dict[str, Any], tmp_path: Path,
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
) -> None:
    build = demo_builds["1"]
    live, labels, reference = str(build.live_dir), str(build.labels_dir), str(build.reference_path)
    day = sorted(p.name for p in build.live_dir.iterdir())[0]
    no_feature = tmp_path / "no-feature"
    frame = pd.read_parquet(build.live_dir / day / "part-0.parquet")
    (no_feature / day).mkdir(parents=True)
    frame.drop(columns=["age"]).to_parquet(no_feature / day / "part-0.parquet")
    no_label = tmp_path / "no-label"
    (no_label / day).mkdir(parents=True)
    pd.DataFrame({"row_id": [1]}).to_parquet(no_label / day / "part-0.parquet")
    other_bucket = "s3://not-" + ctx.settings.s3.bucket + "/live"  # type: ignore[union-attr]
    cases = {
        "ftp": (["--live", "ftp://x/y", "--labels", labels], "not ftp://"),
        "missing": (["--live", str(tmp_path / "nope"), "--labels", labels], "does not exist"),
        "bucket": (["--live", other_bucket, "--labels", labels], "is not readable here"),
        "flat": (["--live", str(build.reference_path.parent), "--labels", labels],
                 "holds no dt=YYYY-MM-DD/*.parquet partition"),
        "columns": (["--live", str(no_feature), "--labels", labels], "lacks the column(s) ['age']"),
        "labels": (["--live", live, "--labels", str(no_label)], "lacks the column(s) ['high_income']"),
        "reference": (["--live", live, "--labels", labels, "--reference", str(tmp_path / "gone")],
                      "--reference"),
    }
    for case, (args, message) in cases.items():
        extra = [] if "--reference" in args else ["--reference", reference]
        assert main(["monitor", "set", NAME, *args, *extra]) == 1, case
        assert message in capsys.readouterr().err, case
    assert monitors.list_all(ctx.db_url) == []
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM reference_sketch") == [(0,)]

    # an empty prefix is only a warning: the data may not have arrived yet
    empty = tmp_path / "empty"
    empty.mkdir()
    with caplog.at_level(logging.WARNING, logger="modelgate.monitor"):
        assert main(["monitor", "set", NAME, "--live", live, "--labels", str(empty),
                     "--reference", reference]) == 0
    assert "holds no dt=YYYY-MM-DD partition yet" in caplog.text
    # the version has its sketch now; a bad --reference is still refused, the config unchanged
    assert main(["monitor", "set", NAME, "--live", live, "--labels", labels,
                 "--reference", str(tmp_path / "gone")]) == 1
    assert monitors.get(ctx.db_url, NAME).labels_uri == str(empty)  # type: ignore[union-attr]


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_monitor_run_backfills_a_first_interval(
    ctx: Context, production: models.ModelVersionRow, demo_builds: dict[str, Any], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    build = demo_builds["1"]
    day = dt.date(2024, 3, 1)
    live, labels = tmp_path / "live", tmp_path / "labels"
    year = sorted(build.live_dates)[0]
    shutil.copytree(build.live_dir / f"dt={year}", live / f"dt={day}")
    shutil.copytree(build.labels_dir / f"dt={year}", labels / f"dt={day}")
    assert main(["monitor", "set", NAME, "--live", str(live), "--labels", str(labels),
                 "--reference", str(build.reference_path), "--sample-rows", "300",
                 "--thresholds", '{"relative": 1e9, "wasserstein_floor": 1e9, "js_floor": 1.0, '
                 '"multivariate": {"floor": 1e9}, "attribution": {"floor": 1e9}}']) == 0
    assert main(["monitor", "retry", NAME, "--interval", day.isoformat()]) == 1  # never ran
    assert "monitor run" in capsys.readouterr().err
    assert main(["monitor", "run", NAME, "--interval", "2024-03-01T06:00"]) == 1
    assert "is not the start of an interval" in capsys.readouterr().err
    assert main(["monitor", "run", NAME, "--interval", day.isoformat()]) == 0
    start = dt.datetime.combine(day, dt.time(), UTC)
    assert fetch_all(ctx.db_url, """SELECT interval_start, interval_end, status, rows_sampled,
                                           rows_labelled FROM drift_run""") == [
        (start, start + dt.timedelta(days=1), "ok", 300, 300)]
    # ... and `retry` now finds the interval
    assert main(["monitor", "retry", NAME, "--interval", day.isoformat()]) == 0


def test_drift_runs_lost_with_their_airflow_run_are_recorded_failed(
    ctx: Context, production: models.ModelVersionRow,
) -> None:
    day = _utc(2024, 3, 1)
    lost, other_day, done = (drift_runs.start_drift_run(
        ctx.db_url, model_version_id=production.model_version_id, interval_start=s,
        interval_end=s + dt.timedelta(days=1)) for s in (day, day + dt.timedelta(days=1),
                                                          day - dt.timedelta(days=1)))
    drift_runs.fail_drift_run(ctx.db_url, done, "ValueError: an earlier cause")
    assert drift_runner.fail_lost_runs(ctx, day, day + dt.timedelta(days=1),
                                       airflow_run_id="manual__x", since=None) == [lost]
    rows = dict((r[0], r[1:]) for r in fetch_all(
        ctx.db_url, "SELECT drift_run_id, status, failure_reason FROM drift_run"))
    assert rows[lost][0] == "failed" and rows[lost][1].startswith("lost: Airflow DAG run manual__x")
    assert rows[other_day] == ("running", None)
    assert rows[done] == ("failed", "ValueError: an earlier cause")
    # runs started before the DAG run are another process's
    assert drift_runner.fail_lost_runs(ctx, day + dt.timedelta(days=1), day + dt.timedelta(days=2),
                                       airflow_run_id="x", since=dt.datetime.now(UTC)
                                       + dt.timedelta(hours=1)) == []


def test_evaluation_run_lost_with_its_airflow_run_is_recorded_failed(
    ctx: Context, production: models.ModelVersionRow, demo_builds: dict[str, Any],
) -> None:
    """Only the run of that DAG run and that model version (its key is the DAG run's key,
    then the model's identity), and only while it is ``running``."""
    candidate, _ = register_archive(ctx, demo_builds["2"].archive_path)
    sha1, sha2 = production.archive_sha256[:12], candidate.archive_sha256[:12]

    def start(key: str, row: models.ModelVersionRow) -> int:
        return runs.start_evaluation_run(ctx.db_url, run_key=key, model_version_id=row.model_version_id,
                                         champion_version_id=None, dataset_uri="x.parquet",
                                         archive_sha256=row.archive_sha256)

    lost = start(f"model_evaluation__manual__y__gss-high-income__v2__{sha2}__vs-v1-abcd1234", candidate)
    other_run = start(f"model_evaluation__manual__y__z__gss-high-income__v2__{sha2}__vs-none", candidate)
    other_version = start(f"model_evaluation__manual__y__gss-high-income__v1__{sha1}__vs-self", production)
    assert evaluation_runner.fail_lost_run(ctx, "model_evaluation__manual__y", model_name=NAME,
                                           version="2", lost_task="task score[0], try 2") == [lost]
    assert evaluation_runner.fail_lost_run(ctx, "model_evaluation__manual__y", model_name=NAME,
                                           version="2", lost_task="task score[0], try 2") == []  # once
    rows = dict((r[0], r[1:]) for r in fetch_all(
        ctx.db_url, "SELECT evaluation_run_id, status, failure_reason FROM analytics.evaluation_runs"))
    assert rows[lost] == ("failed", "lost: the last try of task score[0], try 2 ended without "
                          "recording why (its process was killed, e.g. SIGKILL or out of memory, or "
                          "it failed outside a pipeline step) and Airflow DAG run "
                          "model_evaluation__manual__y failed; see that task's log")
    assert rows[other_run] == rows[other_version] == ("running", None)


def test_a_run_without_a_model_name_is_refused_naming_the_param(ctx: Context) -> None:
    for missing in (None, "", "  "):
        with pytest.raises(ValueError, match="param 'model_name' is missing"):
            evaluation_runner.require_model_name(ctx, missing, run_key="model_evaluation__m",
                                                 version="1", dataset_uri="s3://b/d/")
    assert evaluation_runner.require_model_name(ctx, NAME, run_key="model_evaluation__m",
                                                version="1", dataset_uri="s3://b/d/") == NAME
    refusals = fetch_all(ctx.db_url, "SELECT run_key, model_name, version, reason "
                                     "FROM analytics.evaluation_refusals")
    assert len(refusals) == 3 and {r[:3] for r in refusals} == {("model_evaluation__m", "", "1")}
    assert all(r[3].startswith("ValueError: param 'model_name' is missing: name the registered "
                               "model to evaluate") for r in refusals)


def test_fetch_dataset_takes_a_directory_and_a_prefix(ctx: Context, tmp_path: Path) -> None:
    parts = {"day=1/a.parquet": pd.DataFrame({"x": [1.0, 2.0], "c": ["a", "b"]}),
             "day=2/b.parquet": pd.DataFrame({"x": [3.0], "c": ["c"]})}
    root = tmp_path / "data"
    for name, frame in parts.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(root / name, index=False)
        ctx.store.put_file(f"sets/ref/{name}", root / name, content_type="application/octet-stream")
    expected = pd.concat(parts.values(), ignore_index=True)
    bucket = ctx.settings.s3.bucket  # type: ignore[union-attr]
    for i, uri in enumerate([str(root), f"file://{root}", f"s3://{bucket}/sets/ref"]):
        got = pq.read_table(fetch_dataset(ctx, uri, tmp_path / f"work{i}")).to_pandas()
        pd.testing.assert_frame_equal(got, expected)
    one = fetch_dataset(ctx, str(root / "day=1/a.parquet"), tmp_path / "one")
    assert one == root / "day=1/a.parquet"
    assert pq.read_table(one).equals(pa.Table.from_pandas(parts["day=1/a.parquet"],
                                                          preserve_index=False))


def test_readme_airflow_without_docker_names_what_the_scheduler_tests_set(tmp_path: Path) -> None:
    """The README's process list and settings are the ones the real-scheduler tests run with."""
    import re

    from support.airflow_deployment import deployment_env

    root = Path(__file__).resolve().parents[3]  # the README and every docs/ page
    readme = "\n".join(p.read_text() for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))])
    section = readme.split("### Airflow without Docker", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.S).group(1)  # type: ignore[union-attr]
    documented = set(re.findall(r"\b(AIRFLOW(?:__[A-Z_]+)+|AIRFLOW_HOME)=", block))
    env = deployment_env(tmp_path, "u@h/db", [], {})
    tested = {k for k in env if k.startswith("AIRFLOW") and env[k] != os.environ.get(k)}
    tuning = {"AIRFLOW__CORE__PARALLELISM", "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION",
              "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL", "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC"}
    assert tested - tuning <= documented <= set(env)  # all it sets, nothing it does not know
    for process in ("airflow db migrate", "airflow api-server", "airflow dag-processor",
                    "airflow scheduler"):
        assert process in block


@pytest.mark.e2e  # a whole pipeline run: seconds, kept out of the fast tier
def test_a_promotion_whose_sketch_cannot_be_built_promotes_nothing(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """The sketch is built before the promotion commits: a reference that went away fails
    the promotion and leaves no version in production (not a production version without
    sketch); the gate's stored decision stands, the failure recorded beside it."""
    build = demo_builds["1"]
    reference = tmp_path / "reference" / "part-0.parquet"  # a directory, as evaluation takes
    reference.parent.mkdir()
    shutil.copy(build.reference_path, reference)
    assert main(["monitor", "set", NAME, "--live", str(build.live_dir), "--labels",
                 str(build.labels_dir), "--reference", str(reference.parent)]) == 0
    reference.unlink()
    assert main(["evaluate", "--model", str(build.archive_path), "--data", str(build.heldout_path),
                 "--promote"]) == 1
    assert "holds no .parquet file" in capsys.readouterr().err
    assert models.get_production(ctx.db_url, NAME) is None
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM reference_sketch") == [(0,)]
    ((status,),) = fetch_all(ctx.db_url, "SELECT status FROM evaluation_run")
    assert status == "passed"
    ((step, reason),) = fetch_all(ctx.db_url, "SELECT step, reason FROM evaluation_step_failure")
    assert step == "after_decision" and "holds no .parquet file" in reason
