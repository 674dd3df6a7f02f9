"""Drift per segment through the in-process drift runner (issue #43 item 4), against the real
PostgreSQL and S3 servers and a real ONNX model (scikit-learn's logistic regression on x1..x3):
with ``thresholds.segments = ["x3"]`` (x3 takes the values 0, 1, 2) every feature is tested within
every segment, a shift planted in one segment is flagged and named, and the rows are on record.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.model_zoo import FEATURES, build
from support.model_zoo import frame as zoo_frame

from modelgate.config import Settings
from modelgate.onnx.artifact import package
from modelgate.pipelines.context import Context, register_archive
from modelgate.pipelines.drift import feature_steps
from modelgate.pipelines.drift.runner import run_drift
from modelgate.store import models
from modelgate.store.db import fetch_all

# A whole drift run in process: seconds, kept out of the fast tier (the core's cases are in
# tests/drift/test_by_segment.py, the rows' in tests/store/test_segment_drift_rows.py).
pytestmark = pytest.mark.e2e

NAME = "zoo-binary_classification"
DAY = dt.date(2026, 3, 1)
START, END = dt.datetime(2026, 3, 1, tzinfo=dt.UTC), dt.datetime(2026, 3, 2, tzinfo=dt.UTC)


def test_a_shift_in_one_segment_is_flagged_named_and_stored(settings: Settings, tmp_path: Path) -> None:
    zoo = build("sklearn-no-zipmap")
    rng = np.random.default_rng(4)
    data = zoo_frame(n=2200, seed=11).assign(row_id=np.arange(2200, dtype=np.int64),
                                             x3=rng.integers(0, 3, 2200).astype(float))
    archive = package(*zoo.write(tmp_path / "src", id_column="row_id"), tmp_path / "out")
    reference, live, labels = tmp_path / "reference.parquet", tmp_path / "live", tmp_path / "labels"
    data.iloc[:1200].to_parquet(reference)
    ctx = Context.open(settings)
    row, _ = register_archive(ctx, archive)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    part = data.iloc[1200:].copy()
    part.loc[part["x3"] == 2.0, "x1"] += 1.5  # segment x3 = 2 only
    for root in (live, labels):
        (root / f"dt={DAY}").mkdir(parents=True)
    part = part.assign(event_time=pd.Timestamp(DAY, tz="UTC") + pd.to_timedelta(np.arange(len(part)), "s"))
    part[[*FEATURES, "row_id", "event_time"]].to_parquet(live / f"dt={DAY}" / "part-0.parquet")
    part[["row_id", "y_binary"]].to_parquet(labels / f"dt={DAY}" / "part-0.parquet")

    spec = feature_steps.MonitorSpec(NAME, str(live), str(labels), str(reference), 100_000,
                                     {"segments": {"columns": ["x3"], "min_rows": 30}},
                                     feature_steps.DEFAULT_ADWIN_DELTA)
    with pytest.raises(feature_steps.DriftBreached, match=r"x1 in segment x3=2\.0: ks"):
        run_drift(ctx, spec.as_dict(), START, END)
    rows = fetch_all(ctx.db_url, """SELECT segment_column, segment_value, feature, test, n_current,
                                           status, family_size, is_current_attempt
                                    FROM analytics.segment_drift ORDER BY segment_value, feature""")
    counts = part["x3"].value_counts()
    assert [r[:4] for r in rows] == [("x3", v, f, "ks") for v in ("0.0", "1.0", "2.0") for f in ("x1", "x2")]
    assert [r[4] for r in rows] == [int(counts[float(v)]) for v in (0, 0, 1, 1, 2, 2)]
    assert [r[1:3] for r in rows if r[5] == "drift"] == [("2.0", "x1")]
    assert {(r[6], r[7]) for r in rows} == {(6, True)}


def test_a_segment_column_the_model_lacks_is_refused_naming_it() -> None:
    from modelgate.onnx.manifest import Feature, LabelSpec, Manifest, OutputSpec

    manifest = Manifest(name="m", version="1", sha256="0" * 64, opset=None,
                        features=(Feature("age", "numeric"),), label=LabelSpec("y"),
                        output=OutputSpec("variable"), threshold=None, sensitive_features=(),
                        task="regression")
    with pytest.raises(ValueError, match=r"segment column\(s\) \['region'\] are not features of v1"):
        feature_steps.check_threshold_features({"segments": ["region"]}, manifest, "1", where="x:")


def test_a_degraded_segment_is_estimated_on_its_own_rows_and_breaches(settings: Settings,
                                                                      tmp_path: Path) -> None:
    from sklearn.isotonic import IsotonicRegression

    from modelgate.onnx.artifact import verify
    from modelgate.onnx.scoring import open_session
    from modelgate.pipelines.drift.monitor import set_monitor

    zoo = build("sklearn-no-zipmap")
    rng = np.random.default_rng(8)
    data = zoo_frame(n=2400, seed=12).assign(row_id=np.arange(2400, dtype=np.int64),
                                             x3=rng.integers(0, 3, 2400).astype(float))
    archive = package(*zoo.write(tmp_path / "src", id_column="row_id"), tmp_path / "out")
    reference, live, labels = tmp_path / "reference.parquet", tmp_path / "live", tmp_path / "labels"
    data.iloc[:1400].to_parquet(reference)
    ctx = Context.open(settings)
    row, _ = register_archive(ctx, archive)
    models.promote(ctx.db_url, row.model_version_id, expected_champion_id=None)
    part = data.iloc[1400:].copy()
    weak = part["x3"] == 2.0  # the model's inputs put near its boundary: unsure, less accurate
    part.loc[weak, "x1"] = 0.5 * part.loc[weak, "x2"] + rng.normal(scale=0.1, size=int(weak.sum()))
    for root in (live, labels):
        (root / f"dt={DAY}").mkdir(parents=True)
    part = part.assign(event_time=pd.Timestamp(DAY, tz="UTC") + pd.to_timedelta(np.arange(len(part)), "s"))
    part[[*FEATURES, "row_id", "event_time"]].to_parquet(live / f"dt={DAY}" / "part-0.parquet")
    set_monitor(ctx, NAME, live=str(live), labels=str(labels), reference=str(reference), sample_rows=100_000,
                thresholds={"performance": {"accuracy": 0.05}, "segments": {"columns": ["x3"]}})
    with pytest.raises(feature_steps.DriftBreached, match=r"estimated accuracy in segment x3=2\.0 = "):
        run_drift(ctx, feature_steps.monitor_specs(ctx, {"model_name": NAME})[0], START, END)

    # oracle: scikit-learn's isotonic calibrator on the reference's scores, applied to each slice alone
    session = open_session(verify(archive))
    ref_frame = data.iloc[:1400]
    ref_scores = np.asarray(session.predict_proba(ref_frame[list(FEATURES)]), dtype=np.float64)
    calibrator = IsotonicRegression(out_of_bounds="clip").fit(ref_scores, ref_frame["y_binary"] == "good")
    threshold = float(row.manifest.threshold)
    rows = fetch_all(ctx.db_url, """SELECT segment_value, n_rows, estimate, lower_bound, upper_bound, status,
                                           family_size
                                    FROM analytics.segment_estimates WHERE metric = 'accuracy'
                                    ORDER BY segment_value""")
    assert [r[0] for r in rows] == ["0.0", "1.0", "2.0"]
    for value, n, estimate, lower, upper, status, family_size in rows:
        s = np.asarray(session.predict_proba(part.loc[part["x3"] == float(value), list(FEATURES)]),
                       dtype=np.float64)
        p = calibrator.predict(s)
        assert n == s.size
        assert estimate == pytest.approx(float(np.mean(np.where(s >= threshold, p, 1.0 - p))), abs=1e-9)
        assert lower < estimate < upper
        assert status == ("breach" if value == "2.0" else "ok")
        # 6 drift tests (x1, x2 in 3 segments) + 3 accuracy checks (the one metric with a limit)
        assert family_size == 9
    assert fetch_all(ctx.db_url, "SELECT DISTINCT family_size FROM segment_drift") == [(9,)]
