"""The drift pipeline for multiclass and regression models: score drift and ADWIN on their
error streams (misclassification; bounded absolute error), checked against river's ADWIN."""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from river.drift import ADWIN
from support.model_zoo import FEATURES, build

from modelgate.config import Settings
from modelgate.onnx.artifact import package, verify
from modelgate.onnx.scoring import open_session
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import feature_steps
from modelgate.pipelines.drift.runner import run_drift
from modelgate.store import models
from modelgate.store.db import transaction

UTC = dt.UTC
DAYS = [dt.date(2026, 3, 1), dt.date(2026, 3, 2)]
LABEL = {"lightgbm-3-class": "y_3", "xgboost-regression": "y_value"}


def _world(name: str, tmp_path: Path) -> tuple[Path, Path, Path, Path, dict[dt.date, pd.DataFrame]]:
    """Archive, reference, live and label partitions; day 2's labels come from a changed world."""
    zoo = build(name)
    frame = zoo.frame.assign(row_id=np.arange(len(zoo.frame), dtype=np.int64))
    archive = package(*zoo.write(tmp_path / "src", id_column="row_id"), tmp_path / "out")
    reference = tmp_path / "reference.parquet"
    frame.iloc[:200].to_parquet(reference)
    live, labels, served = tmp_path / "live", tmp_path / "labels", {}
    rng = np.random.default_rng(9)
    for i, day in enumerate(DAYS):
        part = frame.iloc[200 + 200 * i: 400 + 200 * i].copy()
        part["event_time"] = pd.Timestamp(day, tz="UTC") + pd.to_timedelta(np.arange(200), unit="min")
        (live / f"dt={day}").mkdir(parents=True)
        part[[*FEATURES, "row_id", "event_time"]].to_parquet(live / f"dt={day}" / "part-0.parquet")
        truth = part[["row_id", LABEL[name], "event_time"]].copy()
        if i == 1 and name == "xgboost-regression":
            truth[LABEL[name]] += 4.0  # the target moved: every error grows
        elif i == 1:
            truth[LABEL[name]] = rng.integers(0, 3, len(truth))  # labels no longer follow x
        served[day] = truth
        (labels / f"dt={day}").mkdir(parents=True)
        truth[["row_id", LABEL[name]]].to_parquet(labels / f"dt={day}" / "part-0.parquet")
    return archive, reference, live, labels, served


def _run(ctx: Context, name: str, reference: Path, live: Path, labels: Path, day: dt.date) -> None:
    start = dt.datetime.combine(day, dt.time(), UTC)
    spec = feature_steps.MonitorSpec(f"zoo-{_task(name)}", str(live), str(labels), str(reference), 100_000,
                             {}, feature_steps.DEFAULT_ADWIN_DELTA)
    with contextlib.suppress(feature_steps.DriftBreached):  # the verdict is stored either way
        run_drift(ctx, spec.as_dict(), start, start + dt.timedelta(days=1))


def _monitored_for_three_days(name: str, settings: Settings, tmp_path: Path
                              ) -> tuple[Context, Path, Path, Path, dict[dt.date, pd.DataFrame]]:
    """The model promoted and its drift run over every day of DAYS; what the tests compare with."""
    archive, reference, live, labels, served = _world(name, tmp_path)
    ctx = Context.open(settings)
    row, _ = register_archive(ctx, archive)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    for day in DAYS:
        _run(ctx, name, reference, live, labels, day)
    return ctx, archive, reference, live, served


def _task(name: str) -> str:
    return build(name).draft["task"]


def _expected_errors(name: str, archive: Path, reference: Path, served: dict[dt.date, pd.DataFrame],
                     live: Path) -> np.ndarray:
    scorer = open_session(verify(archive))
    errors = []
    if name == "xgboost-regression":
        scale = float(np.std(scorer.predict_value(pd.read_parquet(reference))))
    for day in DAYS:
        frame = pd.read_parquet(live / f"dt={day}" / "part-0.parquet").merge(
            served[day].drop(columns="event_time"), on="row_id")
        truth = frame[LABEL[name]].to_numpy()
        if name == "xgboost-regression":
            errors.append(np.minimum(np.abs(scorer.predict_value(frame) - truth) / scale, 1.0))
        else:
            errors.append((scorer.predict_class_proba(frame).argmax(axis=1) != truth).astype(float))
    return np.concatenate(errors)


@pytest.mark.parametrize("name", ["lightgbm-3-class", "xgboost-regression"])
def test_adwin_watches_each_tasks_error_stream(name: str, settings: Settings, tmp_path: Path) -> None:
    ctx, archive, reference, live, served = _monitored_for_three_days(name, settings, tmp_path)
    with transaction(ctx.db_url) as cur:
        cur.execute("SELECT status FROM drift_run ORDER BY interval_start")
        statuses = [r[0] for r in cur.fetchall()]
        cur.execute("SELECT stream_position FROM concept_drift_change ORDER BY stream_position")
        changes = [r[0] for r in cur.fetchall()]
        cur.execute("SELECT elements_seen FROM detector_state")
        seen = cur.fetchone()[0]
    assert "running" not in statuses and len(statuses) == 2
    assert seen == 400
    detector, expected = ADWIN(delta=0.002), []
    for position, error in enumerate(_expected_errors(name, archive, reference, served, live)):
        detector.update(error)
        if detector.drift_detected:
            expected.append(position)
    assert changes == expected and expected and expected[0] >= 200


def _expected_accuracy_estimate(archive: Path, reference: Path, frame: pd.DataFrame) -> float:
    """One-vs-rest isotonic calibration (scikit-learn) fitted on the reference, rows renormalised;
    the expected share of rows whose predicted class is right."""
    from sklearn.isotonic import IsotonicRegression

    scorer = open_session(verify(archive))
    ref = pd.read_parquet(reference)
    ref_proba, cur = scorer.predict_class_proba(ref), scorer.predict_class_proba(frame)
    y = ref[LABEL["lightgbm-3-class"]].to_numpy()
    cal = np.column_stack([IsotonicRegression(out_of_bounds="clip").fit(ref_proba[:, k], y == k)
                           .predict(cur[:, k]) for k in range(cur.shape[1])])
    total = cal.sum(axis=1, keepdims=True)
    cal = np.where(total > 0, cal / np.where(total > 0, total, 1.0), cur)
    return float(np.mean(cal[np.arange(len(cur)), cur.argmax(axis=1)]))


@pytest.mark.parametrize("name", ["lightgbm-3-class", "xgboost-regression"])
def test_estimates_and_realised_of_each_task(name: str, settings: Settings, tmp_path: Path) -> None:
    ctx, archive, reference, live, served = _monitored_for_three_days(name, settings, tmp_path)
    regression = name == "xgboost-regression"
    metric = "mae" if regression else "accuracy"
    with transaction(ctx.db_url) as cur:
        cur.execute("""SELECT interval_start::date, method, estimate, lower_bound, upper_bound, realised
                       FROM analytics.performance_estimates WHERE metric = %s ORDER BY 1""", (metric,))
        rows = cur.fetchall()
        cur.execute("SELECT DISTINCT metric FROM performance_estimate ORDER BY 1")
        metrics = [r[0] for r in cur.fetchall()]
    assert metrics == (["mae", "rmse"] if regression
                       else ["accuracy", "f1", "precision", "recall", "roc_auc"])
    scorer = open_session(verify(archive))
    assert [r[0] for r in rows] == DAYS
    for (day, method, estimate, lower, upper, realised) in rows:
        frame = pd.read_parquet(live / f"dt={day}" / "part-0.parquet").merge(
            served[day].drop(columns="event_time"), on="row_id")
        truth = frame[LABEL[name]].to_numpy()
        assert lower <= estimate <= upper
        if regression:
            assert method == "nanny_error_model"
            assert realised == pytest.approx(float(np.mean(np.abs(scorer.predict_value(frame) - truth))))
        else:
            assert method == "cbpe_isotonic_one_vs_rest"
            assert estimate == pytest.approx(_expected_accuracy_estimate(archive, reference, frame),
                                             abs=1e-9)
            assert realised == pytest.approx(float(np.mean(
                scorer.predict_class_proba(frame).argmax(axis=1) == truth)), abs=1e-12)
