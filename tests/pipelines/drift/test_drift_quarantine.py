"""Drift runs over partitions that cannot be used (issue #21): each is quarantined with a
reason naming it, the interval goes on with the rest, the run ends ``degraded`` whichever try
set the partition aside, and rows_labelled stays what ADWIN was fed across re-runs.

Through the in-process runner (``run_drift``), like ``modelgate monitor retry``; the same on
the real scheduler is in ``tests/e2e/test_e2e_scheduler_bad_data.py``."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from support.tiny_graphs import manifest_of

from modelgate.config import Settings
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import concept, feature_steps, runner
from modelgate.store import models, monitors
from modelgate.store.db import fetch_all

# Each test runs the monitoring pipeline over the demo model: seconds each.
pytestmark = pytest.mark.e2e

UTC = dt.UTC
NAME = "gss-high-income"
LENIENT = {"relative": 1e9, "wasserstein_floor": 1e9, "js_floor": 1.0,  # nothing can breach
           "multivariate": {"relative": 1e9, "floor": 1e9}, "attribution": {"relative": 1e9, "floor": 1e9}}
DAYS = [dt.date(2024, 3, 1), dt.date(2024, 3, 2), dt.date(2024, 3, 3)]
SAMPLE = 100_000  # more than a partition holds: every live row is scored


def _start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), UTC)


@pytest.fixture()
def ctx(settings_env: Settings, demo_builds: dict[str, Any]) -> Context:
    ctx = Context.open(settings_env)
    row, _ = register_archive(ctx, demo_builds["1"].archive_path)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    feature_steps.ensure_reference(ctx, models.get_by_id(ctx.db_url, row.model_version_id),
                           str(demo_builds["1"].reference_path))
    return ctx


def _data(build: Any, root: Path, labelled: list[dt.date]) -> tuple[Path, Path]:
    """Live partitions for DAYS and label partitions for ``labelled``, from the demo years."""
    live, labels = root / "live", root / "labels"
    for day, year in zip(DAYS, build.live_dates, strict=False):
        shutil.copytree(build.live_dir / f"dt={year}", live / f"dt={day}")
        if day in labelled:
            shutil.copytree(build.labels_dir / f"dt={year}", labels / f"dt={day}")
    return live, labels


def _run(ctx: Context, live: Path, labels: Path, day: dt.date) -> str:
    spec = feature_steps.MonitorSpec(NAME, str(live), str(labels), "", SAMPLE, LENIENT, 0.002).as_dict()
    return runner.run_drift(ctx, spec, _start(day), _start(day + dt.timedelta(days=1)))


def _runs(ctx: Context) -> dict[dt.date, tuple[Any, ...]]:
    rows = fetch_all(ctx.db_url, """SELECT interval_start, status, verdict, light, degraded_reason,
                                           failure_reason, rows_labelled, drift_run_id
                                    FROM analytics.drift_runs ORDER BY interval_start""")
    return {r[0].date(): r[1:] for r in rows}


def _joined(labels: Path, live: Path, day: dt.date) -> int:
    """Labelled live rows of a day, counted by pandas (all live rows are sampled)."""
    ids = pd.read_parquet(live / f"dt={day}", columns=["row_id"])
    return len(ids.merge(pd.read_parquet(labels / f"dt={day}", columns=["row_id"]), on="row_id"))


def _adwin_seen(ctx: Context) -> int:
    return int(fetch_all(ctx.db_url, "SELECT elements_seen FROM detector_state")[0][0])


def test_mistyped_ids_and_string_labels_are_quarantined_and_later_intervals_go_on(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    build = demo_builds["1"]
    live, labels = _data(build, tmp_path, DAYS)
    typed = labels / f"dt={DAYS[0]}" / "part-0.parquet"  # ids stored as strings
    frame = pd.read_parquet(typed)
    frame.assign(row_id=frame["row_id"].astype(str)).to_parquet(typed, index=False)
    strings = labels / f"dt={DAYS[1]}" / "part-0.parquet"  # labels "0"/"1" where 1 is positive
    frame = pd.read_parquet(strings)
    counts = frame["high_income"].astype(str).value_counts()
    frame.assign(high_income=frame["high_income"].astype(str)).to_parquet(strings, index=False)

    assert [_run(ctx, live, labels, d) for d in DAYS] == ["degraded", "degraded", "ok"]
    runs = _runs(ctx)
    for day in DAYS[:2]:
        status, verdict, light, reason, failure, labelled, _ = runs[day]
        assert (status, verdict, light, failure, labelled) == ("degraded", "ok", "amber", None, 0)
        assert f"labels partition dt={day} under {labels}" in reason and "\n" not in reason
        assert f"modelgate monitor retry {NAME} --interval {_start(day).isoformat()}" in reason
    assert "'row_id' holds string ids" in runs[DAYS[0]][3] and "int64" in runs[DAYS[0]][3]
    # the label check evaluate uses: both string values named with their counts
    assert (f"found 2 other values: '0' ({counts['0']} rows), '1' ({counts['1']} rows)"
            in runs[DAYS[1]][3]) or (f"'1' ({counts['1']} rows), '0' ({counts['0']} rows)"
                                     in runs[DAYS[1]][3])
    assert runs[DAYS[2]][:2] == ("ok", "ok") and runs[DAYS[2]][3] is None
    assert runs[DAYS[2]][5] == _joined(labels, live, DAYS[2]) > 0
    assert fetch_all(ctx.db_url, """SELECT interval_start, source, partition_name, drift_run_id
                                    FROM analytics.quarantined_partitions ORDER BY 1""") == [
        (_start(d), "labels", f"dt={d}", runs[d][6]) for d in DAYS[:2]]
    # ADWIN saw only the good interval's rows, and the view adds up to it
    assert _adwin_seen(ctx) == sum(r[5] for r in runs.values()) == runs[DAYS[2]][5]
    report = fetch_all(ctx.db_url, "SELECT report_key FROM drift_run WHERE drift_run_id = %s",
                       (runs[DAYS[0]][6],))[0][0]
    html = ctx.store.get_bytes(report).decode()
    assert "Data left out" in html and f"dt={DAYS[0]}" in html and "Degraded: 1 partition" in html

    # fixed, then released and reprocessed by `monitor retry`: its labels reach ADWIN
    frame.to_parquet(strings, index=False)
    monitors.put(ctx.db_url, monitors.MonitorConfig(NAME, str(live), str(labels),
                                                    str(build.reference_path), SAMPLE, LENIENT))
    assert runner.retry_interval(ctx, NAME, _start(DAYS[1])) == "ok"
    runs = _runs(ctx)
    assert runs[DAYS[1]][:2] == ("ok", "ok") and runs[DAYS[1]][5] == _joined(labels, live, DAYS[1])
    assert _adwin_seen(ctx) == sum(r[5] for r in runs.values())


def test_unusable_live_partitions_are_quarantined(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    build = demo_builds["1"]
    live, labels = _data(build, tmp_path, [])
    (live / f"dt={DAYS[0]}" / "part-0.parquet").write_bytes(b"not parquet at all")
    dropped = live / f"dt={DAYS[1]}" / "part-0.parquet"
    pd.read_parquet(dropped).drop(columns=["age"]).to_parquet(dropped, index=False)

    assert [_run(ctx, live, labels, d) for d in DAYS] == ["degraded", "degraded", "ok"]
    runs = _runs(ctx)
    assert [runs[d][:3] for d in DAYS] == [("degraded", "no_data", "amber"),
                                           ("degraded", "no_data", "amber"), ("ok", "ok", "green")]
    assert f"live partition dt={DAYS[0]} under {live}: cannot read part-0.parquet" in runs[DAYS[0]][3]
    assert f"live partition dt={DAYS[1]}" in runs[DAYS[1]][3] and "'age' is missing" in runs[DAYS[1]][3]
    # a re-run leaves the quarantined partition out (and says so) until it is released
    assert _run(ctx, live, labels, DAYS[1]) == "degraded"
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM analytics.quarantined_partitions "
                                 "WHERE source = 'live'") == [(2,)]


def test_a_quarantine_by_a_failed_try_still_degrades_the_run_that_succeeds_later(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    build = demo_builds["1"]
    live, labels = _data(build, tmp_path, [])
    assert _run(ctx, live, labels, DAYS[0]) == "ok"  # its labels are late
    # they arrive with repeated ids, with the next day's good labels
    for day, year in zip(DAYS[:2], build.live_dates, strict=False):
        shutil.copytree(build.labels_dir / f"dt={year}", labels / f"dt={day}")
    bad = labels / f"dt={DAYS[0]}" / "part-0.parquet"
    frame = pd.read_parquet(bad)
    pd.concat([frame, frame.head(4)], ignore_index=True).to_parquet(bad, index=False)

    real, calls = concept._error_stream, []

    def fails_once(*args: Any) -> Any:  # the first try dies after quarantining dt=DAYS[0]
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("results store went away")
        return real(*args)

    monkeypatch.setattr(concept, "_error_stream", fails_once)
    with pytest.raises(ConnectionError):
        _run(ctx, live, labels, DAYS[1])
    assert _runs(ctx)[DAYS[1]][0] == "failed"
    assert _run(ctx, live, labels, DAYS[1]) == "degraded"  # the retry
    status, verdict, _, reason, failure, labelled, run_id = _runs(ctx)[DAYS[1]]
    assert (status, verdict, failure) == ("degraded", "ok", None)
    assert f"labels partition dt={DAYS[0]}" in reason and "8 rows share their 'row_id' value" in reason
    assert labelled == _joined(labels, live, DAYS[1]) == _adwin_seen(ctx)
    assert fetch_all(ctx.db_url, "SELECT drift_run_id FROM analytics.quarantined_partitions") == [
        (run_id,)]


def test_a_rerun_keeps_rows_labelled_equal_to_what_adwin_was_fed(
    ctx: Context, demo_builds: dict[str, Any], tmp_path: Path,
) -> None:
    build = demo_builds["1"]
    live, labels = _data(build, tmp_path, DAYS[:1])
    assert _run(ctx, live, labels, DAYS[0]) == "ok"
    expected = _joined(labels, live, DAYS[0])
    assert _runs(ctx)[DAYS[0]][5] == expected == _adwin_seen(ctx)
    assert _run(ctx, live, labels, DAYS[0]) == "ok"  # a re-run: nothing new to feed
    assert _runs(ctx)[DAYS[0]][5] == expected == _adwin_seen(ctx)


def _multiclass_manifest() -> Any:
    return manifest_of(task="multiclass_classification", id_column="row_id", label={"column": "segment"},
                       output={"name": "probabilities", "classes": ["a", "b", "c"]}, threshold=None)


@pytest.mark.parametrize(("write", "problem"), [
    (lambda p: pd.DataFrame({"row_id": [1, 2, 3], "segment": ["a", "b", "z"]}).to_parquet(p),
     "label column 'segment'"),
    (lambda p: pd.DataFrame({"row_id": [1, 2], "segment": ["a", None]}).to_parquet(p),
     "label column 'segment' has 1 missing value(s)"),
    (lambda p: pd.DataFrame({"row_id": [1, 2]}).to_parquet(p), "column(s) ['segment'] missing from"),
    (lambda p: pd.DataFrame({"row_id": [1.0, 2.0], "segment": ["a", "b"]}).to_parquet(p),
     "'row_id' holds double ids (double) where the scored live rows' ids are integer"),
    (lambda p: p.write_bytes(b"PAR1 truncated"), "cannot read part-0.parquet"),
], ids=["class-outside", "missing-label", "missing-column", "float-ids", "unreadable"])
def test_a_labels_partition_of_a_multiclass_model_is_refused_naming_the_problem(
    tmp_path: Path, write: Any, problem: str,
) -> None:
    import pyarrow as pa

    from modelgate.pipelines.drift.partitions import BadPartition, labels_frame

    manifest = _multiclass_manifest()
    path = tmp_path / "part-0.parquet"
    write(path)
    with pytest.raises(BadPartition) as caught:
        labels_frame([path], "dt=2024-03-01", "s3://bucket/labels", manifest, pa.int64())
    assert str(caught.value).startswith("labels partition dt=2024-03-01 under s3://bucket/labels: ")
    assert problem in str(caught.value) and "\n" not in str(caught.value)
    if problem == "label column 'segment'":  # the classes it must hold are named
        assert "['a', 'b', 'c']" in str(caught.value)


def test_good_multiclass_labels_become_class_indices(tmp_path: Path) -> None:
    import pyarrow as pa

    from modelgate.pipelines.drift.partitions import LABEL, labels_frame

    manifest = _multiclass_manifest()
    pd.DataFrame({"row_id": [7, 8, 9], "segment": ["c", "a", "b"]}).to_parquet(tmp_path / "p.parquet")
    frame = labels_frame([tmp_path / "p.parquet"], "dt=2024-03-01", "x", manifest, pa.int32())
    assert frame["row_id"].tolist() == [7, 8, 9] and frame[LABEL].tolist() == [2, 0, 1]
