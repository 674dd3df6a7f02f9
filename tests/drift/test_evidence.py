"""The evidence an estimate needs and the references an estimator refuses (issue #39 points 2
and 4); counts worked by hand or by numpy, not by the code under test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from modelgate.drift.evidence import estimate_evidence, estimator_refusal

from modelgate.onnx.manifest import Feature
from modelgate.pipelines.drift.usable import unusable_rows
from modelgate.pipelines.drift.verdict import interval_verdict


@pytest.mark.parametrize(("n", "positives", "reason"), [
    (49, 20.0, "insufficient data: 49 scored row(s), fewer than the 50 an estimate needs"),
    (500, 4.99, "undefined: 5.0 expected positive(s) and 495.0 negative(s); an AUC needs pairs "
                "(at least 5 of each)"),
    (500, 5.0, None),
    (500, 495.5, "undefined: 495.5 expected positive(s) and 4.5 negative(s); an AUC needs pairs "
                 "(at least 5 of each)"),
], ids=["few-rows", "few-positives", "enough", "few-negatives"])
def test_an_auc_needs_rows_and_expected_pairs(n: int, positives: float, reason: str | None) -> None:
    assert estimate_evidence("roc_auc", n, expected_positives=positives,
                             expected_negatives=n - positives) == reason


def test_other_metrics_need_rows_only() -> None:
    assert estimate_evidence("accuracy", 500, expected_positives=0.0, expected_negatives=500.0) is None
    assert estimate_evidence("mae", 10, min_rows=10) is None
    with pytest.raises(ValueError, match="min_rows must be a number >= 0, got -1"):
        estimate_evidence("mae", 10, min_rows=-1)


@pytest.mark.parametrize(("task", "labels", "outputs", "reason"), [
    ("binary_classification", [0] * 60, np.linspace(0, 1, 60),
     "the reference labels hold one class only (0: 60, 1: 0); a calibrator needs both"),
    ("binary_classification", [1] * 41 + [0] * 19, np.linspace(0, 1, 60),
     "the reference labels hold too few of a class for a calibrator (0: 19, 1: 41; at least 20 each)"),
    ("binary_classification", [1] * 40 + [0] * 20, np.linspace(0, 1, 60), None),
    ("binary_classification", [0, 1] * 30, np.full(60, 0.7),
     "the model gives every reference row the same output (0.7); there is no ranking to calibrate"),
    ("multiclass_classification", [0] * 30 + [1] * 30, np.tile([0.2, 0.5, 0.3], (60, 1)),
     "the model gives every reference row the same output (one probability vector); there is no "
     "ranking to calibrate"),
    ("multiclass_classification", [0] * 30 + [1] * 30, np.random.default_rng(1).dirichlet([1, 1, 1], 60),
     "the reference labels hold too few of a class for a calibrator (0: 30, 1: 30, 2: 0; at least 20 each)"),
    ("multiclass_classification", [0, 1, 2] * 20, np.random.default_rng(1).dirichlet([1, 1, 1], 60), None),
    ("regression", np.arange(60.0), np.full(60, 3.0),
     "the model gives every reference row the same output (3); there is no ranking to calibrate"),
    ("regression", np.arange(60.0), np.arange(60.0), None),
], ids=["one-class", "too-few-of-a-class", "enough", "constant-scores", "constant-probabilities",
        "multiclass-missing-class", "multiclass-ok", "constant-predictions", "regression-ok"])
def test_estimator_refusals(task: str, labels: object, outputs: object, reason: str | None) -> None:
    classes = (0, 1, 2) if task == "multiclass_classification" else (0, 1)
    assert estimator_refusal(task, labels, outputs, classes=classes) == reason


def test_unusable_rows_are_those_pandas_sees_missing_or_infinite() -> None:
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"x": rng.normal(size=200), "y": rng.normal(size=200),
                          "c": rng.choice(["a", "b"], 200).astype(object)})
    frame.loc[rng.choice(200, 20, replace=False), "x"] = np.nan
    frame.loc[rng.choice(200, 5, replace=False), "y"] = np.inf
    frame.loc[rng.choice(200, 7, replace=False), "c"] = None
    features = [Feature("x", "numeric"), Feature("y", "numeric", allow_missing=True),
                Feature("c", "categorical")]
    bad, why = unusable_rows(pa.Table.from_pandas(frame), features)
    expected = frame["x"].isna() | np.isinf(frame["y"]) | frame["c"].isna()
    assert bad.tolist() == expected.tolist()
    assert why == {"x": "20 missing", "y": "5 infinite", "c": "7 missing"}


def test_an_interval_is_judged_only_when_a_feature_has_the_evidence() -> None:
    from modelgate.drift.data_drift import numeric_drift
    from modelgate.drift.reference import build_numeric_reference

    ref = build_numeric_reference(np.arange(1000.0), name="x")
    thin = numeric_drift(ref, np.full(10, 1e9))
    assert interval_verdict(10, [thin], drifting=True)[0] == "insufficient_data"
    enough = numeric_drift(ref, np.arange(0.0, 1000.0, 10.0))
    assert interval_verdict(100, [thin, enough], drifting=False) == ("ok", None)


@pytest.mark.parametrize(("metric", "kwargs", "reason"), [
    ("recall", {"expected_positives": 4.9, "expected_negatives": 495.1},
     "undefined: 4.9 expected positive(s); recall needs at least 5 (its denominator)"),
    ("recall", {"expected_positives": 5.0, "expected_negatives": 495.0}, None),
    ("precision", {"predicted_positives": 4}, "undefined: 4 predicted positive(s); precision needs at "
                                              "least 5 (its denominator)"),
    ("precision", {"predicted_positives": 5}, None),
    # F1 = 2 TP / (expected positives + predicted positives): it stands on both of its parts
    ("f1", {"expected_positives": 4.9, "predicted_positives": 40},
     "undefined: 4.9 expected positive(s); F1 needs at least 5 of each (the denominators of recall "
     "and precision)"),
    ("f1", {"expected_positives": 60.0, "predicted_positives": 0},
     "undefined: 0 predicted positive(s); F1 needs at least 5 of each (the denominators of recall "
     "and precision)"),
    ("f1", {"expected_positives": 0.0, "predicted_positives": 0},
     "undefined: 0.0 expected positive(s) and 0 predicted positive(s); F1 needs at least 5 of each "
     "(the denominators of recall and precision)"),
    ("f1", {"expected_positives": 5.0, "predicted_positives": 5}, None),
    # accuracy's denominator is every row, of either class: an interval with no positive has one
    ("accuracy", {"expected_positives": 0.0, "expected_negatives": 500.0, "predicted_positives": 0},
     None),
], ids=["recall-few-expected-positives", "recall-enough", "precision-few-predicted-positives",
        "precision-enough", "f1-few-expected-positives", "f1-no-predicted-positive", "f1-neither",
        "f1-enough", "accuracy-rows-only"])
def test_recall_precision_and_f1_need_their_denominators(metric: str, kwargs: dict[str, float],
                                                      reason: str | None) -> None:
    assert estimate_evidence(metric, 500, **kwargs) == reason


# 500 rows of three classes: a has 490.5 expected rows and 494 predicted, b 6.0 and 3, c 3.5 and 3.
CLASSES = {"a": (490.5, 494), "b": (6.0, 3), "c": (3.5, 3)}


@pytest.mark.parametrize(("metric", "reason"), [
    ("roc_auc", "undefined: class 'c' has 3.5 expected row(s) and the others 496.5; a one-vs-rest AUC "
                "needs pairs (at least 5 of each, for every class)"),
    ("recall", "undefined: class 'c' has 3.5 expected row(s); its recall needs at least 5 (its "
               "denominator, for every class)"),
    ("precision", "undefined: class 'b' has 3 predicted row(s); its precision needs at least 5 (its "
                  "denominator, for every class)"),
    ("f1", "undefined: class 'b' has 6.0 expected and 3 predicted row(s); its F1 needs at least 5 "
           "of each (the denominators of its recall and precision, for every class)"),
    ("accuracy", None),
], ids=["auc", "recall", "precision", "f1", "accuracy"])
def test_multiclass_estimates_need_their_minimum_in_every_class(metric: str, reason: str | None) -> None:
    assert estimate_evidence(metric, 500, classes=CLASSES) == reason
    assert estimate_evidence(metric, 500, classes=CLASSES, min_expected_per_class=3) is None
    assert estimate_evidence(metric, 40, classes=CLASSES) == (
        "insufficient data: 40 scored row(s), fewer than the 50 an estimate needs")
