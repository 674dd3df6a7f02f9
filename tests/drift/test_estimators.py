"""The task's estimator, chosen in one place (``drift/estimators.py``): each task gets the
estimator its own module fits, and the same estimate as that module's call made by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from modelgate.drift.estimators import ModelOutputs, estimate, fit_estimator
from modelgate.drift.performance_estimation import (
    IsotonicCalibrator,
    MulticlassReference,
    estimate_binary,
    estimate_multiclass,
    fit_isotonic,
    fit_multiclass,
)
from modelgate.drift.regression_estimation import NannyErrorModel, estimate_regression, fit_nanny_model

RNG = np.random.default_rng(7)


def test_binary_is_an_isotonic_calibrator_and_its_estimate() -> None:
    scores = RNG.uniform(size=300)
    labels = (RNG.uniform(size=300) < scores).astype(np.int8)
    current = RNG.uniform(size=120)
    est = fit_estimator("binary_classification", labels, ModelOutputs(scores=scores))
    assert isinstance(est, IsotonicCalibrator)
    got = estimate("binary_classification", est, ModelOutputs(scores=current), threshold=0.4, confidence=0.9)
    by_hand = estimate_binary(fit_isotonic(scores, labels), current, threshold=0.4, confidence=0.9)
    assert got.to_record() == by_hand.to_record()


def test_multiclass_is_one_calibrator_a_class() -> None:
    probs = RNG.dirichlet([1.0, 1.0, 1.0], size=300)
    labels = np.array([RNG.choice(3, p=p) for p in probs])
    current = RNG.dirichlet([2.0, 1.0, 1.0], size=80)
    est = fit_estimator("multiclass_classification", labels, ModelOutputs(probabilities=probs),
                        classes=("a", "b", "c"))
    assert isinstance(est, MulticlassReference) and est.classes == ("a", "b", "c")
    got = estimate("multiclass_classification", est, ModelOutputs(probabilities=current))
    by_hand = estimate_multiclass(fit_multiclass(probs, labels, ("a", "b", "c")), current)
    assert got.to_record() == by_hand.to_record()


def test_regression_is_a_nanny_error_model_on_the_features() -> None:
    features = pd.DataFrame({"x": RNG.normal(size=240), "c": RNG.choice(["u", "v"], size=240)})
    predictions = features["x"].to_numpy() * 2.0
    targets = predictions + RNG.normal(scale=np.where(features["c"] == "u", 0.5, 2.0))
    current = features.iloc[:60]
    est = fit_estimator("regression", targets, ModelOutputs(predictions=predictions, features=features),
                        categorical=["c"])
    assert isinstance(est, NannyErrorModel)
    # the current rows' columns in another order: the model reads its own features by name
    reordered = ModelOutputs(predictions=predictions[:60], features=current[["c", "x"]])
    got = estimate("regression", est, reordered)
    by_hand = estimate_regression(fit_nanny_model(features, predictions, targets, categorical=["c"]),
                                  predictions[:60], features=current)
    assert got.to_record() == by_hand.to_record()


def test_what_a_task_needs_is_named() -> None:
    with pytest.raises(ValueError, match="no performance estimator for task 'ranking'"):
        fit_estimator("ranking", [0, 1], ModelOutputs(scores=[0.1, 0.9]))
    with pytest.raises(ValueError, match="regression estimator needs the model's features"):
        fit_estimator("regression", [1.0, 2.0], ModelOutputs(predictions=[1.0, 2.0]))
    est = fit_estimator("binary_classification", [0, 1, 1], ModelOutputs(scores=[0.1, 0.8, 0.9]))
    with pytest.raises(TypeError, match="decision threshold"):
        estimate("binary_classification", est, ModelOutputs(scores=[0.5]))
    with pytest.raises(TypeError, match="per-class calibrators, got IsotonicCalibrator"):
        estimate("multiclass_classification", est, ModelOutputs(probabilities=[[0.5, 0.5]]))
