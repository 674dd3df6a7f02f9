"""Result records (``to_record()``): plain JSON values, the CLI's JSON built from them, and the
store inserting them by column name.

Expected values are worked by hand on tiny cases; the store is the real PostgreSQL server.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from modelgate.drift.adwin import ChangePoint
from modelgate.drift.data_drift import FeatureDrift
from modelgate.drift.performance_estimation import EstimatedMetric
from modelgate.drift.quality import FeatureQuality, FeatureSchema
from modelgate.drift.regression_estimation import RegressionEstimate
from modelgate.evaluation.gate import GateCheck, GateDecision
from modelgate.evaluation.metrics import CalibrationBin, MetricDelta, MetricEstimate
from modelgate.fairness.disaggregate import GroupStats
from modelgate.fairness.metrics import FairnessEstimate, fairness_report
from modelgate.fairness.regression import RegressionGroup
from scipy.stats import norm
from support.gap_oracles import modified_wilson
from support.tiny_graphs import manifest_of

from modelgate.cli.json_records import fairness_json
from modelgate.pipelines.evaluation.fairness_records import fairness_records
from modelgate.store import models, runs
from modelgate.store.db import transaction

NAN, INF = math.nan, math.inf

# Every result type with a record, each with undefined (NaN) or infinite numbers where it can
# have them: its record must still be strict JSON, those numbers None.
UNDEFINED = {
    "metric": (MetricEstimate("precision", NAN, NAN, NAN, 5, "no predicted positives"),
               ("value", "ci_lower", "ci_upper")),
    "delta": (MetricDelta("precision", NAN, 0.5, NAN, NAN, NAN, 5, "candidate undefined"),
              ("value", "candidate", "ci_lower", "ci_upper")),
    "calibration_bin": (CalibrationBin(0.1, 0.2, 0, NAN, NAN), ("mean_predicted", "observed_rate")),
    "group_rates": (GroupStats("b", 4, 0, 1, 3, 0, 0.0, 0.25, NAN, 0.25, 0.0, NAN, False),
                    ("tpr", "fnr")),
    "group_errors": (RegressionGroup("b", 4, INF, INF, 1.0, -INF, False), ("mae", "rmse", "mean_error")),
    "gap": (FairnessEstimate("tpr_gap", NAN, NAN, NAN, 8, None, None, (("b", "no positives"),),
                             "fewer than two groups"), ("value", "ci_lower", "ci_upper")),
    "gate_check": (GateCheck("value:precision", "value", "precision", None, 0.7, None, NAN, NAN, NAN,
                             5, "point_estimate", "fail", "block", "precision is undefined"),
                   ("observed", "ci_lower", "ci_upper")),
    "feature_drift": (FeatureDrift("x", "numeric", 10, 10, 0, INF, INF, 0.5, 0.01, 0.1, INF,
                                   "wasserstein_normalised", "drift"),
                      ("wasserstein", "wasserstein_normalised", "statistic_value")),
    "change_point": (ChangePoint(7, NAN, 0.5, 4, 3), ("error_rate_before",)),
    "estimated_metric": (EstimatedMetric("precision", NAN, NAN, NAN, NAN),
                         ("estimate", "standard_error", "lower", "upper")),
    "regression_estimate": (RegressionEstimate(0, 0.95, 0, *[NAN] * 8),
                            ("mae", "mae_standard_error", "mae_lower", "mae_upper", "rmse",
                             "rmse_standard_error", "rmse_lower", "rmse_upper")),
    "feature_quality": (FeatureQuality("x", "numeric", 0, 0, NAN, NAN),
                        ("missing_rate", "reference_missing_rate")),
    "feature_schema": (FeatureSchema("x", "numeric", 0, NAN),
                       ("missing_rate", "minimum", "maximum", "low", "high")),
}


@pytest.mark.parametrize("name", sorted(UNDEFINED), ids=str)
def test_a_record_is_strict_json_with_none_for_undefined_numbers(name: str) -> None:
    result, undefined = UNDEFINED[name]
    record = result.to_record()
    assert json.loads(json.dumps(record, allow_nan=False)) == record  # plain values only
    assert {key: record[key] for key in undefined} == dict.fromkeys(undefined)
    assert all(value is not None for key, value in record.items()
               if isinstance(value, float) and key not in undefined)


def test_gate_decision_record() -> None:
    assert GateDecision(False, (), (), (), "blocked by 1 check").to_record() == {
        "passed": False, "summary": "blocked by 1 check"}


def _binary_report() -> Any:
    """Worked by hand: group a (rows 0-3) has every rate 0.5; group b (rows 4-7) has no
    positive label, so no TPR or FNR, and one false positive; group c (row 8) is small."""
    y_true = [1, 1, 0, 0, 0, 0, 0, 0, 1]
    y_pred = [1, 0, 1, 0, 1, 0, 0, 0, 1]
    groups = ["a"] * 4 + ["b"] * 4 + ["c"]
    return fairness_report(y_true, y_pred, groups, sensitive_feature="g", min_group_size=2,
                           include_small_groups=False, n_bootstrap=0)


def _wilson_ends(**counts: tuple[int, int]) -> dict[str, Any]:
    """``<rate>_ci_lower`` and ``_upper`` of each rate from (successes, trials), the modified
    Wilson interval at 95 % (tests/support/gap_oracles.py); None without trials."""
    z = float(norm.ppf(0.975))
    out: dict[str, Any] = {}
    for rate, (x, n) in counts.items():
        lo, hi = modified_wilson(x, n, z) if n else (None, None)
        out[f"{rate}_ci_lower"], out[f"{rate}_ci_upper"] = lo, hi
    return out


def test_fairness_json_of_a_binary_report_worked_by_hand() -> None:
    out = fairness_json({"g": _binary_report()})["g"]
    no_scores = {"roc_auc": None, "roc_auc_error_bound": None}
    expected = [
        {"group": "a", "n": 4, "base_rate": 0.5, "selection_rate": 0.5, "tpr": 0.5, "fpr": 0.5,
         "ppv": 0.5, "fnr": 0.5, "small_group": False, "positives": 2, "negatives": 2,
         "predicted_positives": 2, "accuracy": 0.5, **no_scores,
         **_wilson_ends(tpr=(1, 2), fpr=(1, 2), selection_rate=(2, 4), ppv=(1, 2))},
        {"group": "b", "n": 4, "base_rate": 0.0, "selection_rate": 0.25, "tpr": None, "fpr": 0.25,
         "ppv": 0.0, "fnr": None, "small_group": False, "positives": 0, "negatives": 4,
         "predicted_positives": 1, "accuracy": 0.75, **no_scores,
         **_wilson_ends(tpr=(0, 0), fpr=(1, 4), selection_rate=(1, 4), ppv=(0, 1))},
        {"group": "c", "n": 1, "base_rate": 1.0, "selection_rate": 1.0, "tpr": 1.0, "fpr": None,
         "ppv": 1.0, "fnr": 0.0, "small_group": True, "positives": 1, "negatives": 0,
         "predicted_positives": 1, "accuracy": 1.0, **no_scores,
         **_wilson_ends(tpr=(1, 1), fpr=(0, 0), selection_rate=(1, 1), ppv=(1, 1))},
    ]
    assert len(out["groups"]) == len(expected)
    for got, want in zip(out["groups"], expected, strict=True):
        assert got == pytest.approx(want, abs=1e-12)
    dpd = out["gaps"]["demographic_parity_difference"]
    assert set(dpd) == {"value", "ci_lower", "ci_upper", "n", "highest_group", "lowest_group",
                        "excluded_groups", "driving_rate"}  # a defined gap gives no undefined_reason
    assert (dpd["value"], dpd["highest_group"], dpd["lowest_group"], dpd["n"]) == (0.25, "a", "b", 9)
    assert dpd["driving_rate"] == "selection_rate"
    assert [group for group, _ in dpd["excluded_groups"]] == ["c"]
    tpr = out["gaps"]["tpr_gap"]  # only group a has a TPR once c is left out
    assert tpr["value"] is None and tpr["undefined_reason"]
    assert sorted(group for group, _ in tpr["excluded_groups"]) == ["b", "c"]


def test_fairness_json_of_a_multiclass_and_a_regression_report() -> None:
    from modelgate.fairness.multiclass import multiclass_fairness_report
    from modelgate.fairness.regression import regression_fairness_report

    multi = multiclass_fairness_report([0, 1, 0, 1], [0, 1, 1, 1], ["a", "a", "b", "b"],
                                       classes=["x", "y"], sensitive_feature="g", min_group_size=1,
                                       n_bootstrap=0)
    out = fairness_json({"g": multi})["g"]
    assert set(out) == {"classes", "gaps"} and list(out["classes"]) == ["x", "y"]
    # class x, one-vs-rest: group a predicts its one x right, group b misses its one x
    assert [(g["group"], g["tpr"]) for g in out["classes"]["x"]["groups"]] == [("a", 1.0), ("b", 0.0)]
    assert out["gaps"]["tpr_gap[x]"]["value"] == 1.0 and "tpr_gap[y]" in out["gaps"]

    reg = regression_fairness_report([1.0, 2.0, 3.0, 5.0], [1.0, 3.0, 3.0, 3.0], ["a", "a", "b", "b"],
                                     sensitive_feature="g", min_group_size=1, n_bootstrap=0)
    out = fairness_json({"g": reg})["g"]
    # a: errors 0 and +1; b: errors 0 and -2
    assert out["groups"] == [
        {"group": "a", "n": 2, "mae": 0.5, "rmse": math.sqrt(0.5), "mean_prediction": 2.0,
         "mean_error": 0.5, "small_group": False},
        {"group": "b", "n": 2, "mae": 1.0, "rmse": math.sqrt(2.0), "mean_prediction": 3.0,
         "mean_error": -1.0, "small_group": False},
    ]
    assert out["gaps"]["mae_gap"]["value"] == 0.5


def _run(url: str) -> int:
    row, _ = models.register(url, model_name="records", version="1", sha256="1" * 64,
                             archive_sha256="2" * 64, archive_key="k", archive_uri="s3://b/k",
                             manifest=manifest_of())
    return runs.start_evaluation_run(url, run_key="records", model_version_id=row.model_version_id,
                                     champion_version_id=None, dataset_uri="d",
                                     archive_sha256="2" * 64)


def test_the_store_inserts_records_by_column_name(clean_db: str) -> None:
    """A classifier's group record stores NULL errors, a regression group's NULL rates; keys
    that are not columns (a gap's groups, a check's limits) are left out."""
    from modelgate.fairness.regression import regression_fairness_report

    run_id = _run(clean_db)
    binary = fairness_records({"g": _binary_report()})
    reg = fairness_records({"h": regression_fairness_report(
        [1.0, 2.0, 3.0, 5.0], [1.0, 3.0, 3.0, 3.0], ["a", "a", "b", "b"], sensitive_feature="h",
        min_group_size=1, n_bootstrap=0)})
    check = GateCheck("fairness:g:tpr_gap", "fairness", "tpr_gap", "g", None, 0.1, NAN, NAN, NAN, 9,
                      "point_estimate", "fail", "warn", "tpr_gap is undefined")
    rows = runs.EvaluationRows(
        metrics=[{"model_role": "candidate", **MetricEstimate("recall", 0.5, 0.25, 0.75, 9).to_record()}],
        fairness_groups=[g for s in (*binary, *reg) for g in s.group_rows()],
        fairness_metrics=[g for s in (*binary, *reg) for g in s.gap_rows()],
        gate_checks=[check.to_record()],
        gate={**GateDecision(True, (check,), (), (check,), "passed").to_record(),
              "policy_sha256": "p", "had_champion": False})
    runs.write_evaluation_results(clean_db, run_id, rows, status="passed", report_key=None,
                                  report_uri=None)
    with transaction(clean_db) as cur:
        cur.execute("""SELECT sensitive_feature, group_label, class_label, tpr, fnr, mae, mean_error,
                              is_small_group
                       FROM fairness_group WHERE evaluation_run_id = %s
                       ORDER BY sensitive_feature, group_label""", (run_id,))
        groups = cur.fetchall()
        cur.execute("""SELECT sensitive_feature, metric_name, value FROM fairness_metric
                       WHERE evaluation_run_id = %s AND metric_name IN ('tpr_gap', 'mae_gap')
                       ORDER BY 1""", (run_id,))
        gaps = cur.fetchall()
        cur.execute("""SELECT metric_name, threshold_text, observed, verdict, severity FROM gate_check
                       WHERE evaluation_run_id = %s""", (run_id,))
        checks = cur.fetchall()
        cur.execute("SELECT metric_name, value, ci_lower, ci_upper, n FROM evaluation_metric "
                    "WHERE evaluation_run_id = %s", (run_id,))
        metrics = cur.fetchall()
    assert groups == [("g", "a", "", 0.5, 0.5, None, None, False),
                      ("g", "b", "", None, None, None, None, False),
                      ("g", "c", "", 1.0, 0.0, None, None, True),
                      ("h", "a", "", None, None, 0.5, 0.5, False),
                      ("h", "b", "", None, None, 1.0, -1.0, False)]
    assert gaps == [("g", "tpr_gap", None), ("h", "mae_gap", 0.5)]
    assert checks == [("tpr_gap", "<= 0.1", None, "fail", "warn")]
    assert metrics == [("recall", 0.5, 0.25, 0.75, 9)]
