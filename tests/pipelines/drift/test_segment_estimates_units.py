"""Estimated performance per segment without servers: each segment's estimate is the estimator
run on that slice alone, small slices are reported and not judged, the report rows are ordered
weakest first and the drift report renders the segment section with no script but the table sorter."""

from __future__ import annotations

from html import escape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from modelgate.drift import estimate_binary, fit_isotonic, segment_family, segment_labels
from modelgate.reports import DriftReportView, render_drift_report

from modelgate import reports
from modelgate.pipelines.drift.estimation import ERROR_METRICS, EstimationReference
from modelgate.pipelines.drift.segment_estimates import estimate_by_segment
from modelgate.pipelines.drift.segments import report_rows


def _binary_reference(rng: np.random.Generator) -> EstimationReference:
    scores = rng.uniform(size=3000)
    labels = (rng.uniform(size=3000) < scores).astype(int)
    return EstimationReference("binary_classification", "cbpe_isotonic", 0.5, (),
                               fit_isotonic(scores, labels), (), {"accuracy": 0.75, "roc_auc": 0.83})


def _interval(rng: np.random.Generator) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    region = rng.choice(["n", "s", "tiny"], size=900, p=[0.6, 0.36, 0.04])
    score = rng.uniform(size=900)
    score[region == "s"] = rng.beta(1, 1.2, size=int((region == "s").sum()))  # a different mix
    frame = pd.DataFrame({"region": region, "__score__": score, "__prediction__": (score >= 0.5) * 1.0})
    return frame, {"region": segment_labels(frame["region"].tolist(), "region")}


def test_each_segment_is_the_estimator_on_its_slice_alone() -> None:
    rng = np.random.default_rng(3)
    reference = _binary_reference(rng)
    frame, labels = _interval(rng)
    records = estimate_by_segment(reference, frame, labels, limits={"accuracy": 0.05},
                                  baseline=reference.reference_metrics)
    assert [r["segment_value"] for r in records] == ["n"] * 5 + ["s"] * 5 + ["tiny"] * 5
    for value in ("n", "s"):
        sliced = frame.loc[frame["region"] == value, "__score__"].to_numpy()
        oracle = estimate_binary(reference.estimator, sliced, threshold=0.5, confidence=0.95)  # type: ignore[arg-type]
        got = {r["metric"]: r for r in records if r["segment_value"] == value}
        for m in oracle.metrics:
            assert (got[m.metric]["estimate"], got[m.metric]["standard_error"], got[m.metric]["lower"],
                    got[m.metric]["upper"]) == pytest.approx((m.estimate, m.standard_error, m.lower, m.upper))
            assert got[m.metric]["n_rows"] == sliced.size and got[m.metric]["reason"] is None
    tiny = [r for r in records if r["segment_value"] == "tiny"]
    assert len(frame[frame["region"] == "tiny"]) < 50  # below the evidence minimum: not estimated
    assert all(r["estimate"] is None and "fewer than the 50 an estimate needs" in r["reason"]
               for r in tiny)
    judged = segment_family(records, lower_is_better=ERROR_METRICS)
    # only accuracy has a limit, and only n and s are estimated: a family of 2
    assert judged.family_size == 2
    assert {e.status for e in judged.estimates if e.segment_value == "tiny"} == {"insufficient_data"}


def test_a_regression_segment_is_the_nanny_model_on_its_slice_and_breaches_upwards() -> None:
    from modelgate.drift import estimate_regression, fit_nanny_model

    rng = np.random.default_rng(6)
    feats = pd.DataFrame({"x": rng.normal(size=600), "c": rng.choice(["a", "b"], 600)})
    pred = 2.0 * feats["x"].to_numpy()
    labels = pred + rng.normal(scale=np.where(feats["c"] == "b", 2.0, 0.5))  # errors larger where c = b
    reference = EstimationReference("regression", "nanny_error_model", None, (),
                                    fit_nanny_model(feats, pred, labels, categorical=["c"]), (),
                                    {"mae": 0.8, "rmse": 1.0})
    current = feats.assign(__score__=pred, __prediction__=pred)
    records = estimate_by_segment(reference, current, {"c": segment_labels(current["c"].tolist(), "c")},
                                  limits={"mae": 0.1}, baseline=reference.reference_metrics)
    for value in ("a", "b"):
        rows = current[current["c"] == value]
        oracle = estimate_regression(reference.estimator, rows["__score__"],  # type: ignore[arg-type]
                                     features=rows[["x", "c"]], confidence=0.95)
        got = {r["metric"]: r for r in records if r["segment_value"] == value}
        assert (got["mae"]["estimate"], got["mae"]["standard_error"]) == pytest.approx(
            (oracle.mae, oracle.mae_standard_error))
        assert got["rmse"]["estimate"] == pytest.approx(oracle.rmse)
    judged = segment_family(records, lower_is_better=ERROR_METRICS)
    status = {e.segment_value: e.status for e in judged.estimates if e.metric == "mae"}
    assert status == {"a": "ok", "b": "breach"}  # mae about 0.4 and 1.6 against at most 0.8 + 0.1


def test_labels_must_align_with_the_rows() -> None:
    rng = np.random.default_rng(3)
    frame, _ = _interval(rng)
    with pytest.raises(ValueError, match="segment column 'region' has 2 labels for 900 rows"):
        estimate_by_segment(_binary_reference(rng), frame, {"region": np.array(["a", "b"], dtype=object)},
                            limits={}, baseline={})


def _stored_estimate(value: str, estimate: float, status: str, q: float | None) -> dict[str, object]:
    return {"segment_column": "region", "segment_value": value, "metric": "accuracy", "n_rows": 300,
            "estimate": estimate, "lower_bound": estimate - 0.05, "upper_bound": estimate + 0.05,
            "reference_value": 0.9, "max_worsening": 0.05, "q_value": q, "status": status,
            "reason": None, "family_size": 4, "correction": "bh", "level": 0.05}


def _stored_drift(value: str, p: float | None, q: float | None, status: str) -> dict[str, object]:
    return {"segment_column": "region", "segment_value": value, "feature": "age", "kind": "numeric",
            "test": "ks", "n_reference": 200, "n_current": 100, "statistic": None if p is None else 0.2,
            "p_value": p, "q_value": q, "status": status, "family_size": 4, "correction": "bh",
            "level": 0.05}


def test_report_rows_are_weakest_first_and_the_family_is_stated() -> None:
    drift = [_stored_drift("a", 0.5, 0.6, "no_drift"), _stored_drift("b", None, None, "insufficient_data"),
             _stored_drift("c", 1e-6, 4e-6, "drift")]
    estimates = [_stored_estimate("a", 0.88, "ok", 0.9), _stored_estimate("b", 0.80, "ok", 0.07),
                 _stored_estimate("c", 0.78, "breach", 0.001)]
    drift_rows, estimate_rows, text = report_rows(drift, estimates)
    assert [(r.segment, r.verdict) for r in drift_rows] == [("region=c", "drift"), ("region=a", "ok"),
                                                            ("region=b", "warn")]
    assert [(r.segment, r.verdict) for r in estimate_rows] == [("region=c", "breach"), ("region=b", "ok"),
                                                               ("region=a", "ok")]
    assert text.startswith("One family of 4 tests (1 drift test(s) of a feature within a segment, 3 check(s)")
    assert "Benjamini-Hochberg" in text


def test_the_drift_report_renders_the_segment_section_with_no_script_but_its_sorter() -> None:
    drift_rows, estimate_rows, text = report_rows(
        [_stored_drift("c", 1e-6, 4e-6, "drift")], [_stored_estimate("c<script>", 0.78, "breach", 0.001)])
    view = DriftReportView(
        model_name="churn", model_version="7", interval_start="2026-11-28T00:00:00Z",
        interval_end="2026-11-29T00:00:00Z", run_id="drift-1", rows_sampled=5000, features=(),
        histograms=(), error_rate=(), change_points=(), summary="drift", verdict="drift",
        segment_drift=drift_rows, segment_estimates=estimate_rows, segment_family=text)
    html = render_drift_report(view)
    assert '<table id="segment-estimates" data-sortable>' in html
    assert '<table id="segment-drift" data-sortable>' in html
    assert "region=c&lt;script&gt;" in html
    sorter = (Path(reports.__file__).parent / "templates" / "sortable.js").read_text()
    assert html.count("<script") == 1 and f"<script>{sorter}</script>" in html  # the table sorter
    assert '<td class="num">[0.73, 0.83]</td>' in html  # the interval
    assert escape(text) in html
    empty = render_drift_report(DriftReportView(
        model_name="churn", model_version="7", interval_start="a", interval_end="b", run_id="1",
        rows_sampled=0, features=(), histograms=(), error_rate=(), change_points=(), summary="",
        verdict="ok"))
    assert "segment-drift" not in empty
