"""Pieces of the drift pipeline's estimation step that need no server: realised metrics against
scikit-learn, and which thresholds flag and which block."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from modelgate.drift.quality import FeatureQuality, QualityPolicy, decide_quality
from sklearn.metrics import (
    accuracy_score,
    f1_score,
    mean_absolute_error,
    precision_score,
    recall_score,
    roc_auc_score,
)

from modelgate.pipelines.drift.estimation import EstimationResult, realised_metrics, split_thresholds


def test_multiclass_realised_metrics_match_sklearn_macro_averages() -> None:
    rng = np.random.default_rng(7)
    proba = rng.dirichlet([1.0, 1.0, 1.0], size=400)
    y = rng.integers(0, 3, size=400)
    predicted = proba.argmax(axis=1)
    frame = pd.DataFrame({"__score__": proba.max(axis=1), "__prediction__": predicted,
                          **{f"__proba_{k}__": proba[:, k] for k in range(3)}})
    got = realised_metrics("multiclass_classification", y, frame)
    assert got["accuracy"] == pytest.approx(accuracy_score(y, predicted), abs=1e-12)
    assert got["precision"] == pytest.approx(precision_score(y, predicted, average="macro"), abs=1e-12)
    assert got["recall"] == pytest.approx(recall_score(y, predicted, average="macro"), abs=1e-12)
    assert got["f1"] == pytest.approx(f1_score(y, predicted, average="macro"), abs=1e-12)
    assert got["roc_auc"] == pytest.approx(roc_auc_score(y, proba, multi_class="ovr", average="macro"),
                                           abs=1e-12)


def test_regression_realised_metrics_match_sklearn() -> None:
    rng = np.random.default_rng(3)
    y, pred = rng.normal(size=300), rng.normal(size=300)
    got = realised_metrics("regression", y, pd.DataFrame({"__prediction__": pred}))
    assert got["mae"] == pytest.approx(mean_absolute_error(y, pred), abs=1e-12)
    assert got["rmse"] == pytest.approx(float(np.sqrt(np.mean((y - pred) ** 2))), abs=1e-12)


def test_binary_realised_precision_is_none_without_predicted_positives() -> None:
    frame = pd.DataFrame({"__score__": [0.1, 0.2, 0.3], "__prediction__": [0, 0, 0]})
    got = realised_metrics("binary_classification", np.array([1, 0, 1]), frame)
    assert got["precision"] is None and got["f1"] == 0.0 and got["recall"] == 0.0


def _bad_quality() -> tuple[FeatureQuality, ...]:
    return (FeatureQuality("age", "numeric", 100, 0, 0.0, 0.0, n_out_of_range=5),)


def test_quality_without_a_section_flags_but_does_not_breach() -> None:
    quality = _bad_quality()
    flagged = EstimationResult(quality, decide_quality(quality, QualityPolicy()), None)
    assert flagged.quality_rows()[0]["verdict"] == "breach" and flagged.breaches() == []
    blocking = EstimationResult(quality, decide_quality(quality, QualityPolicy()), 0.0)
    assert blocking.breaches() == ["data quality: 1 feature(s) breached the quality limits (at most 0 "
                                   "allowed): age: out_of_range 0.0500 > 0.0100"]
    allowed = EstimationResult(quality, decide_quality(quality, QualityPolicy()), 1.0)
    assert allowed.breaches() == []


@pytest.mark.parametrize("spec, match", [
    ({"performance": {"accuracy": -0.1}}, "must be a number >= 0"),
    ({"performance": {"accuracy": True}}, "must be a number >= 0"),
    ({"quality": {"max_out_of_range_rate": 2.0}}, r"max_out_of_range_rate must be in \[0, 1\]"),
    ({"quality": {"max_rows": 1}}, r"unknown key\(s\) \['max_rows'\]"),
    ({"performance": [0.1]}, "must be a mapping"),
], ids=["negative", "bool", "rate_above_1", "unknown_quality_key", "not_a_mapping"])
def test_bad_thresholds_are_refused_naming_the_key(spec: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        split_thresholds(spec)


def test_a_performance_breach_is_one_line_and_undefined_bounds_do_not_break_it() -> None:
    row = {"metric": "accuracy", "estimate": 0.7, "lower": None, "upper": 0.75, "reference_value": 0.8,
           "max_worsening": 0.05, "verdict": "breach"}
    ok = {**row, "metric": "f1", "verdict": "ok"}
    result = EstimationResult(estimates=(row, ok))
    assert result.breaches() == ["estimated accuracy = 0.7000 vs reference 0.8000: worse by more than "
                                 "0.0500 (interval [-, 0.7500])"]


def test_regression_estimate_rows_from_pickled_nanny_and_older_binned_references() -> None:
    # Every reference error is 1.5 (closed form: MAE = RMSE = 1.5). A new version pickles the
    # nanny model (it reads the sample's feature columns); one fitted before it keeps its binned
    # model, which must still load and estimate from the scores alone.
    import pickle

    from modelgate.drift.regression_estimation import fit_error_model, fit_nanny_model

    from modelgate.pipelines.drift.estimation import METHODS, EstimationReference, estimate_rows

    rng = np.random.default_rng(5)
    feats = pd.DataFrame({"x": rng.normal(size=300), "c": rng.choice(["a", "b"], 300)})
    pred = feats["x"].to_numpy() * 2
    sample = feats.assign(__score__=pred, __prediction__=pred).head(60)  # >= 50 rows: estimated
    for method, estimator in ((METHODS["regression"], fit_nanny_model(
            feats, pred, pred - 1.5, categorical=["c"])), ("binned_error_model",
                                                          fit_error_model(pred, pred - 1.5))):
        ref = pickle.loads(pickle.dumps(EstimationReference(  # noqa: S301 - our own bytes
            "regression", method, None, (), estimator, (), {"mae": 1.5, "rmse": 1.5}), protocol=5))
        rows = {r["metric"]: r for r in estimate_rows(ref, sample, {"mae": 0.1}, ref.reference_metrics)}
        assert rows["mae"]["estimate"] == pytest.approx(1.5) and rows["mae"]["verdict"] == "ok"
        assert rows["rmse"]["estimate"] == pytest.approx(1.5) and rows["mae"]["method"] == method
    assert METHODS["regression"] == "nanny_error_model"


class _Identity:
    """A calibrator that trusts the scores (calibrated probability = score)."""

    def apply(self, scores: np.ndarray) -> np.ndarray:
        return np.asarray(scores, dtype=np.float64)


def test_the_evidence_of_each_estimate_is_counted_on_the_interval() -> None:
    from modelgate.pipelines.drift.estimation import EstimationReference, _undefined

    # binary, threshold 0.5: 3 rows at 0.9, 57 at 0.1 -> 3 predicted positives (precision short),
    # 3 * 0.9 + 57 * 0.1 = 8.4 expected positives and 51.6 negatives (recall and AUC have them)
    binary = EstimationReference("binary_classification", "cbpe", 0.5, (), _Identity(), (), {})
    reasons = _undefined(binary, pd.DataFrame({"__score__": [0.9] * 3 + [0.1] * 57}), {})
    assert reasons == {"roc_auc": None, "accuracy": None, "recall": None,
                       "precision": "undefined: 3 predicted positive(s); precision needs at least 5 "
                                    "(its denominator)",
                       "f1": "undefined: 3 predicted positive(s); F1 needs at least 5 of each (the "
                             "denominators of recall and precision)"}
    # multiclass: 55 rows (0.85, 0.05, 0.1), 5 rows (0.1, 0.1, 0.8): class b expects
    # 55 * 0.05 + 5 * 0.1 = 3.25 rows and is predicted for none
    probabilities = np.array([[0.85, 0.05, 0.1]] * 55 + [[0.1, 0.1, 0.8]] * 5)
    frame = pd.DataFrame({f"__proba_{k}__": probabilities[:, k] for k in range(3)})
    multi = EstimationReference("multiclass_classification", "cbpe", None, ("a", "b", "c"),
                                _Identity(), (), {})
    reasons = _undefined(multi, frame, {})
    assert reasons["accuracy"] is None
    assert reasons["f1"] == ("undefined: class 'b' has 3.2 expected and 0 predicted row(s); its F1 needs "
                             "at least 5 of each (the denominators of its recall and precision, for "
                             "every class)")
    assert reasons["recall"] == ("undefined: class 'b' has 3.2 expected row(s); its recall needs at least "
                                 "5 (its denominator, for every class)")
    assert reasons["precision"] == ("undefined: class 'b' has 0 predicted row(s); its precision needs at "
                                    "least 5 (its denominator, for every class)")
    assert reasons["roc_auc"].startswith("undefined: class 'b' has 3.2 expected row(s) and the others 56.8")
