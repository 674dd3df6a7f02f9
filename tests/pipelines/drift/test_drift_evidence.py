"""Drift monitoring on thin, broken and one-class data (issue #39 points 2-4), against the real
PostgreSQL and S3 servers and a real ONNX model (scikit-learn's logistic regression on x1..x3,
whose manifest allows no missing value), the drift runner in-process.

- A NaN surge in x1 (60 of 600 rows): the run completes ``degraded``; the 60 rows are set aside
  unscored and counted, x1's missing rate breaches the quality limit, every feature's drift and
  the estimates are stored from the rest, and ADWIN is fed only the scored rows.
- A 1-row and a 10-row interval, however far they moved: ``insufficient_data``, no alarm,
  ``is_drifting`` left as the drifted interval before them set it, the AUC null with its reason.
- A reference whose labels are all one class: no calibrator, the reason stored and shown; no
  estimate is produced.

Expected values come from scipy, scikit-learn and pandas, not from the code under test.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wasserstein_distance
from sklearn.isotonic import IsotonicRegression
from support.model_zoo import FEATURES, build
from support.model_zoo import frame as zoo_frame

from modelgate.config import Settings
from modelgate.onnx.artifact import package, verify
from modelgate.onnx.scoring import open_session
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import feature_steps
from modelgate.pipelines.drift.runner import run_drift
from modelgate.store import models
from modelgate.store.db import fetch_all

UTC = dt.UTC
NAME = "zoo-binary_classification"
SURGE, TINY, TEN, SHIFTED = (dt.date(2026, 3, d) for d in (2, 3, 4, 1))
MISSING_ROWS = 60


def _start(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), UTC)


def _world(tmp_path: Path, *, one_class: bool = False) -> tuple[Path, Path, Path, Path, pd.DataFrame]:
    """Archive, reference (1,000 labelled rows), live and label partitions, and the live rows."""
    zoo = build("sklearn-no-zipmap")
    data = zoo_frame(n=3000, seed=11).assign(row_id=np.arange(3000, dtype=np.int64))
    archive = package(*zoo.write(tmp_path / "src", id_column="row_id"), tmp_path / "out")
    reference = tmp_path / "reference.parquet"
    ref = data.iloc[:1000].copy()
    if one_class:
        ref["y_binary"] = "bad"
    ref.to_parquet(reference)
    pool = data.iloc[1000:].reset_index(drop=True)
    rng = np.random.default_rng(5)
    days = {SHIFTED: pool.iloc[:600].assign(x2=lambda f: f["x2"] + 3.0),
            SURGE: pool.iloc[600:1200].copy(), TINY: pool.iloc[1200:1201].copy(),
            TEN: pool.iloc[1201:1211].assign(x1=lambda f: f["x1"] + 50.0)}
    days[SURGE].loc[days[SURGE].index[rng.choice(600, MISSING_ROWS, replace=False)], "x1"] = np.nan
    live, labels = tmp_path / "live", tmp_path / "labels"
    for day, part in days.items():
        stamps = pd.Timestamp(day, tz="UTC") + pd.to_timedelta(np.arange(len(part)), "s")
        part = part.assign(event_time=stamps)
        days[day] = part
        (live / f"dt={day}").mkdir(parents=True)
        part[[*FEATURES, "row_id", "event_time"]].to_parquet(live / f"dt={day}" / "part-0.parquet")
        (labels / f"dt={day}").mkdir(parents=True)
        part[["row_id", "y_binary"]].to_parquet(labels / f"dt={day}" / "part-0.parquet")
    return archive, reference, live, labels, pd.concat(days, names=["day", None])


def _monitored(settings: Settings, archive: Path) -> Context:
    ctx = Context.open(settings)
    row, _ = register_archive(ctx, archive)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    return ctx


def _run(ctx: Context, reference: Path, live: Path, labels: Path, day: dt.date,
         thresholds: dict[str, Any] | None = None) -> str:
    spec = feature_steps.MonitorSpec(NAME, str(live), str(labels), str(reference), 100_000, thresholds or {},
                             feature_steps.DEFAULT_ADWIN_DELTA)
    try:
        return run_drift(ctx, spec.as_dict(), _start(day), _start(day + dt.timedelta(days=1)))
    except feature_steps.DriftBreached:
        return "drift (raised)"


def _run_row(ctx: Context, day: dt.date) -> tuple[Any, ...]:
    (row,) = fetch_all(ctx.db_url, """SELECT status, verdict, light, rows_sampled, rows_set_aside,
                                             degraded_reason, evidence_reason, failure_reason, rows_labelled,
                                             drift_run_id
                                      FROM analytics.drift_runs WHERE interval_start = %s""", (_start(day),))
    return row


def _is_drifting(ctx: Context) -> bool:
    return bool(fetch_all(ctx.db_url, "SELECT is_drifting FROM model_version")[0][0])


def test_a_nan_surge_is_a_finding_and_thin_intervals_decide_nothing(
        settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive, reference, live, labels, served = _world(tmp_path)
    ctx = _monitored(settings, archive)
    ref = pd.read_parquet(reference)
    sent: list[dict[str, float]] = []  # the StatsD gauges of each run, as emitted
    monkeypatch.setattr(feature_steps, "emit_metrics", lambda ms: sent.append({m.name: m.value for m in ms}))

    # 1. the NaN surge: completed, degraded, the unscorable rows set aside and counted
    assert _run(ctx, reference, live, labels, SURGE) == "degraded"
    status, verdict, light, sampled, aside, degraded, evidence, failure, labelled, run_id = \
        _run_row(ctx, SURGE)
    assert (status, verdict, light, sampled, aside, failure) == ("degraded", "ok", "amber", 600,
                                                                 MISSING_ROWS, None)
    assert f"{MISSING_ROWS} of 600 sampled rows set aside unscored: x1: {MISSING_ROWS} missing" in degraded
    assert evidence is None
    surge = served.loc[SURGE]
    scored = surge[surge["x1"].notna()]
    # ADWIN was fed the labelled rows that were scored, no more
    assert labelled == len(scored) == 600 - MISSING_ROWS
    # the quality core found the surge: x1's missing rate breaches the default 0.05 increase
    (quality,) = fetch_all(ctx.db_url, """SELECT n_missing, missing_rate, verdict, reasons FROM quality_check
                                          WHERE drift_run_id = %s AND feature = 'x1'""", (run_id,))
    assert quality[:3] == (MISSING_ROWS, pytest.approx(MISSING_ROWS / 600), "breach")
    assert any("missing" in r for r in quality[3])
    # every feature's drift is stored, from the rows that have the value (scipy's W1)
    stored = {f: (w, n, missing, v) for f, w, n, missing, v in fetch_all(
        ctx.db_url, """SELECT feature, wasserstein, n_current, n_missing_current, verdict FROM feature_drift
                       WHERE drift_run_id = %s""", (run_id,))}
    for feature in FEATURES:
        values = surge[feature].dropna().to_numpy()
        w, n, missing, v = stored[feature]
        assert w == pytest.approx(wasserstein_distance(ref[feature].to_numpy(), values), rel=1e-9)
        assert (n, missing, v) == (len(values), 600 - len(values), "ok")
    # the model's score: scored rows only, the set-aside ones counted as missing
    scorer = open_session(verify(archive))
    ref_scores = np.asarray(scorer.predict_proba(ref), dtype=np.float64)
    cur_scores = np.asarray(scorer.predict_proba(scored), dtype=np.float64)
    w, n, missing, _ = stored["__score__"]
    assert (n, missing) == (600 - MISSING_ROWS, MISSING_ROWS)
    assert w == pytest.approx(wasserstein_distance(ref_scores, cur_scores), rel=1e-6)
    # the estimates, from the scored rows: CBPE accuracy by scikit-learn's isotonic regression
    iso = IsotonicRegression(out_of_bounds="clip").fit(ref_scores, ref["y_binary"] == "good")
    p = iso.predict(cur_scores)
    accuracy = float(np.mean(np.where(cur_scores >= 0.5, p, 1.0 - p)))
    (estimate,) = fetch_all(ctx.db_url, """SELECT estimate, n_rows, verdict, undefined_reason
                                           FROM performance_estimate
                                           WHERE drift_run_id = %s AND metric = 'accuracy'""", (run_id,))
    assert estimate == (pytest.approx(accuracy, abs=1e-9), 600 - MISSING_ROWS, "ok", None)
    key = fetch_all(ctx.db_url, "SELECT report_key FROM drift_run WHERE drift_run_id = %s", (run_id,))[0][0]
    html = ctx.store.get_bytes(key).decode()
    assert "60 of 600 sampled rows set aside unscored" in html
    assert _is_drifting(ctx) is False
    assert (sent[-1]["modelgate.drift.rows_set_aside"], sent[-1]["modelgate.drift.insufficient_data"]) == (
        MISSING_ROWS, 0.0)

    # 2. a drifted interval sets is_drifting; then a 1-row and a 10-row interval (the 10 rows
    # moved 50 std): no alarm, nothing judged, the flag left as it was
    assert _run(ctx, reference, live, labels, SHIFTED) == "drift (raised)"
    assert _is_drifting(ctx)
    for day, rows in ((TINY, 1), (TEN, 10)):
        assert _run(ctx, reference, live, labels, day) == "insufficient_data"
        status, verdict, light, sampled, aside, _, evidence, failure, _, run_id = _run_row(ctx, day)
        assert (status, verdict, light, sampled, aside, failure) == (
            "insufficient_data", "insufficient_data", "amber", rows, 0, None)
        assert f"{rows} sampled row(s): no feature has the non-missing values a verdict needs" in evidence
        verdicts = fetch_all(ctx.db_url, "SELECT verdict FROM feature_drift WHERE drift_run_id = %s",
                             (run_id,))
        assert {v for (v,) in verdicts} == {"insufficient_data"}
        (auc,) = fetch_all(ctx.db_url, """SELECT estimate, lower_bound, upper_bound, verdict, undefined_reason
                                          FROM analytics.performance_estimates
                                          WHERE drift_run_id = %s AND metric = 'roc_auc'""", (run_id,))
        assert auc[:4] == (None, None, None, "insufficient_data")
        assert f"insufficient data: {rows} scored row(s), fewer than the 50 an estimate needs" == auc[4]
        assert _is_drifting(ctx)  # left as the drifted interval set it
        assert {k: sent[-1][k] for k in ("modelgate.drift.drifting", "modelgate.drift.insufficient_data",
                                         "modelgate.drift.features_insufficient")} == {
            "modelgate.drift.drifting": 0.0, "modelgate.drift.insufficient_data": 1.0,
            "modelgate.drift.features_insufficient": len(FEATURES) + 1}  # and the score
    index = ctx.store.get_bytes(f"reports/{NAME}/index.html").decode()
    assert "no feature has the non-missing values a verdict needs" in index
    w10 = fetch_all(ctx.db_url, """SELECT wasserstein FROM feature_drift JOIN drift_run USING (drift_run_id)
                                   WHERE interval_start = %s AND feature = 'x1'""", (_start(TEN),))[0][0]
    assert w10 == pytest.approx(wasserstein_distance(ref["x1"], served.loc[TEN]["x1"]), rel=1e-9)  # kept


def test_a_sample_with_no_usable_row_fails_the_run(settings: Settings, tmp_path: Path) -> None:
    archive, reference, live, labels, _ = _world(tmp_path)
    path = live / f"dt={TINY}" / "part-0.parquet"
    pd.read_parquet(path).assign(x1=np.nan).to_parquet(path)
    ctx = _monitored(settings, archive)
    with pytest.raises(ValueError, match=r"none of the 1 sampled rows can be scored \(x1: 1 missing\)"):
        _run(ctx, reference, live, labels, TINY)
    status, *_, failure, _, _ = _run_row(ctx, TINY)
    assert status == "failed" and "nothing usable in this interval" in failure


def test_a_one_class_reference_gets_no_estimator(settings_env: Settings, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from modelgate.cli import main
    from modelgate.pipelines.drift.monitor import set_monitor

    archive, reference, live, labels, _ = _world(tmp_path, one_class=True)
    ctx = _monitored(settings_env, archive)
    set_monitor(ctx, NAME, live=str(live), labels=str(labels), reference=str(reference), sample_rows=100_000)
    reason = "the reference labels hold one class only (0: 1000, 1: 0); a calibrator needs both"
    assert fetch_all(ctx.db_url, """SELECT method, skipped_reason, n_rows
                                    FROM analytics.estimation_references""") == [(None, reason, 1000)]
    with contextlib.suppress(feature_steps.DriftBreached):
        (spec,) = feature_steps.monitor_specs(ctx, {"model_name": NAME})
        run_drift(ctx, spec, _start(SURGE), _start(SURGE + dt.timedelta(days=1)))
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM performance_estimate") == [(0,)]
    assert fetch_all(ctx.db_url, "SELECT count(*) FROM quality_check") == [(len(FEATURES),)]  # still checked
    html = ctx.store.get_bytes(fetch_all(ctx.db_url, "SELECT report_key FROM drift_run")[0][0]).decode()
    assert f"No performance estimate: {reason}" in html
    assert main(["monitor", "list"]) == 0
    assert f"no performance estimate: {reason}" in capsys.readouterr().out
