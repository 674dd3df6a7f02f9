"""A task's performance estimator: fitted on a labelled reference, applied to unlabelled rows.

The one place that chooses the estimator by the model's task; the drift pipeline (a model
version's estimation reference, each interval's estimates) and ``modelgate drift`` (two
files) both call it:

* ``binary_classification``: an isotonic calibrator of the positive class's score, then
  confidence-based performance estimation (:func:`~modelgate.drift.performance_estimation.fit_isotonic`,
  :func:`~modelgate.drift.performance_estimation.estimate_binary`);
* ``multiclass_classification``: one calibrator per class, one-vs-rest, macro-averaged
  (:func:`~modelgate.drift.performance_estimation.fit_multiclass`);
* ``regression``: a nanny error model of |e| and e^2 from the features and the prediction,
  NannyML's DLE (:func:`~modelgate.drift.regression_estimation.fit_nanny_model`).

Each estimate is a model of the labelled reference carried over to the rows: an estimate,
not a measurement (see the estimators' own modules for what each assumes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from modelgate.drift.performance_estimation import (
    ClassificationEstimate,
    IsotonicCalibrator,
    MulticlassReference,
    estimate_binary,
    estimate_multiclass,
    fit_isotonic,
    fit_multiclass,
)
from modelgate.drift.regression_estimation import (
    BinnedErrorModel,
    NannyErrorModel,
    RegressionEstimate,
    estimate_regression,
    fit_nanny_model,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Estimator", "ModelOutputs", "estimate", "fit_estimator"]

#: What :func:`fit_estimator` returns (``BinnedErrorModel``: regression references built
#: before the nanny model, still read).
Estimator: TypeAlias = IsotonicCalibrator | MulticlassReference | NannyErrorModel | BinnedErrorModel


@dataclass(frozen=True, slots=True)
class ModelOutputs:
    """What a model gave for some rows, as its task has it: ``scores`` (binary: the positive
    class's probability), ``probabilities`` (multiclass: one column a class, in the classes'
    order) or ``predictions`` (regression) with the rows' ``features`` (the nanny model's input)."""

    scores: Any = None
    probabilities: Any = None
    predictions: Any = None
    features: pd.DataFrame | None = None

    def need(self, name: str, task: str) -> Any:
        value = getattr(self, name)
        if value is None:
            raise ValueError(f"a {task} estimator needs the model's {name}")
        return value


def fit_estimator(task: str, labels: Any, outputs: ModelOutputs, *, classes: tuple[str, ...] = (),
                  categorical: tuple[str, ...] | list[str] = ()) -> Estimator:
    """The ``task``'s estimator fitted on a labelled reference.

    ``labels`` are as the model compares them: 0/1 (binary), class indices into ``classes``
    (multiclass), numbers (regression, whose ``categorical`` features are one-hot encoded).
    The arrays go to the estimators as given (each converts them itself).

    >>> est = fit_estimator("binary_classification", [0, 1, 1, 0], ModelOutputs(scores=[0.2, 0.9, 0.7, 0.4]))
    >>> type(est).__name__
    'IsotonicCalibrator'
    >>> fit_estimator("ranking", [0], ModelOutputs())
    Traceback (most recent call last):
    ValueError: no performance estimator for task 'ranking'
    """
    if task == "regression":
        features = outputs.need("features", task)
        return fit_nanny_model(features, outputs.need("predictions", task), labels, categorical=categorical)
    if task == "multiclass_classification":
        return fit_multiclass(outputs.need("probabilities", task), labels, classes)
    if task == "binary_classification":
        return fit_isotonic(outputs.need("scores", task), labels)
    raise ValueError(f"no performance estimator for task {task!r}")


def estimate(task: str, estimator: Estimator, outputs: ModelOutputs, *, threshold: float | None = None,
             confidence: float = 0.95) -> ClassificationEstimate | RegressionEstimate:
    """The ``task``'s estimated performance on unlabelled rows (``threshold``: the binary
    classifier's decision threshold)."""
    if task == "regression":
        if not isinstance(estimator, NannyErrorModel | BinnedErrorModel):
            raise TypeError(f"a regression estimate needs an error model, got {type(estimator).__name__}")
        features = (outputs.need("features", task)[list(estimator.features)]
                    if isinstance(estimator, NannyErrorModel) else None)
        return estimate_regression(estimator, outputs.need("predictions", task), features=features,
                                   confidence=confidence)
    if task == "multiclass_classification":
        if not isinstance(estimator, MulticlassReference):
            raise TypeError("a multiclass estimate needs per-class calibrators, got "
                            f"{type(estimator).__name__}")
        return estimate_multiclass(estimator, outputs.need("probabilities", task), confidence=confidence)
    if task == "binary_classification":
        if not isinstance(estimator, IsotonicCalibrator) or threshold is None:
            raise TypeError("a binary estimate needs a calibrator and the decision threshold")
        return estimate_binary(estimator, outputs.need("scores", task), threshold=threshold,
                               confidence=confidence)
    raise ValueError(f"no performance estimator for task {task!r}")
