"""Whether the data can decide: the minimum evidence behind an estimate, and the references a
performance estimator refuses to be fitted on.

A verdict needs evidence. Two checks, both exact (counts, no estimation):

- :func:`estimate_evidence`: an interval's estimated metric is undefined (``None``, with the
  reason) below ``min_rows`` scored rows, and a classifier's metric also when the rows its
  denominator counts fall below ``min_expected_per_class``. Binary: the ROC AUC needs that
  many expected positives and negatives (the sums of the calibrated probabilities and of
  their complements): an AUC is a mean over positive-negative pairs, and with (nearly) no
  pairs there is nothing to average; recall needs that many expected positives (its
  denominator) and precision that many predicted positives (its denominator, a count); F1,
  the harmonic mean of the two, needs both (its denominator ``2 TP + FP + FN`` is their sum,
  but a sum met by one side alone gives an F1 of 0 or of one precision made of a handful of
  rows, whatever the labels say). Multiclass (one-vs-rest, macro-averaged): the same rule for
  every class, with the class's expected rows (the sum of its calibrated probabilities) and
  its predicted rows (argmax), and for the AUC the expected rows of the other classes too.
  Accuracy's denominator is every scored row, of whatever class, so the rows minimum is its
  rule (an interval with no positive still has an accuracy); the regression metrics need the
  rows only. The per-feature drift minimum is
  ``DriftThresholds.min_values`` in :mod:`.data_drift`.
- :func:`estimator_refusal`: a reference the CBPE calibrator (or the one-vs-rest calibrators,
  or the nanny error model) cannot be fitted on honestly. With one class the isotonic
  calibrator maps every score to that class's rate (0 or 1), and the estimates' intervals
  shrink to nothing around a wrong value; with a handful of a class its steps are that
  handful; with constant scores (or predictions) there is no ranking to calibrate. The
  estimator is then not fitted and the reason is stored instead.

The defaults: ``MIN_ESTIMATE_ROWS`` = 50 scored rows (the per-feature drift minimum of the
default statistic, chosen by simulation in ``bench/bench_drift_min_rows.py``);
``MIN_EXPECTED_PER_CLASS`` = 5 expected rows of each class (the usual rule of thumb for a
normal approximation to a count, which is what the Hanley-McNeil interval of the AUC is);
``MIN_REFERENCE_PER_CLASS`` = 20 labelled reference rows of each class for a calibrator
(isotonic blocks of at least a few rows at both ends).

References
----------
.. [1] Hanley, J. A. and McNeil, B. J. (1982). The meaning and use of the area under a
   receiver operating characteristic (ROC) curve. Radiology 143(1), 29-36.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["MIN_ESTIMATE_ROWS", "MIN_EXPECTED_PER_CLASS", "MIN_REFERENCE_PER_CLASS",
           "estimate_evidence", "estimator_refusal"]

MIN_ESTIMATE_ROWS = 50
MIN_EXPECTED_PER_CLASS = 5.0
MIN_REFERENCE_PER_CLASS = 20


def _check_minimum(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValueError(f"{name} must be a number >= 0, got {value!r}")


def estimate_evidence(metric: str, n_rows: int, *, expected_positives: float | None = None,
                      expected_negatives: float | None = None,
                      predicted_positives: float | None = None,
                      classes: Mapping[str, tuple[float, float]] | None = None,
                      min_rows: int = MIN_ESTIMATE_ROWS,
                      min_expected_per_class: float = MIN_EXPECTED_PER_CLASS) -> str | None:
    """Why ``metric`` cannot be estimated on this interval, or None when it can.

    Parameters
    ----------
    metric : str
        ``roc_auc``, ``accuracy``, ``precision``, ``recall``, ... (``roc_auc``, ``recall``,
        ``precision`` and ``f1`` look at the classes).
    n_rows : int
        Scored rows of the interval.
    expected_positives, expected_negatives : float, optional
        Binary classifiers: sums of the calibrated probabilities and of their complements.
    predicted_positives : float, optional
        Binary classifiers: rows predicted positive (score at or above the threshold).
    classes : mapping of str to (float, float), optional
        Multiclass classifiers: per class, its expected rows (sum of its calibrated
        probabilities) and its predicted rows (argmax). Given, the binary counts are ignored.
    min_rows : int, default :data:`MIN_ESTIMATE_ROWS`
    min_expected_per_class : float, default :data:`MIN_EXPECTED_PER_CLASS`
        Fewest rows a classifier metric's denominator may count (per class for multiclass).

    Returns
    -------
    str or None

    Examples
    --------
    >>> estimate_evidence("accuracy", 10)
    'insufficient data: 10 scored row(s), fewer than the 50 an estimate needs'
    >>> estimate_evidence("roc_auc", 500, expected_positives=0.4, expected_negatives=499.6)
    'undefined: 0.4 expected positive(s) and 499.6 negative(s); an AUC needs pairs (at least 5 of each)'
    >>> estimate_evidence("roc_auc", 500, expected_positives=40.0, expected_negatives=460.0) is None
    True
    >>> estimate_evidence("precision", 500, predicted_positives=3)
    'undefined: 3 predicted positive(s); precision needs at least 5 (its denominator)'
    >>> estimate_evidence("recall", 500, classes={"a": (480.0, 490), "b": (20.0, 10)}) is None
    True
    >>> estimate_evidence("f1", 500, expected_positives=30.0, predicted_positives=2)[:63]
    'undefined: 2 predicted positive(s); F1 needs at least 5 of each'
    """
    _check_minimum("min_rows", min_rows)
    _check_minimum("min_expected_per_class", min_expected_per_class)
    if n_rows < min_rows:
        return (f"insufficient data: {n_rows} scored row(s), fewer than the {min_rows:g} an "
                "estimate needs")
    least = max(min_expected_per_class, 1e-12)
    if classes is not None:
        return _class_evidence(metric, n_rows, classes, least, min_expected_per_class)
    if metric == "roc_auc" and expected_positives is not None and expected_negatives is not None \
            and min(expected_positives, expected_negatives) < least:
        return (f"undefined: {expected_positives:.1f} expected positive(s) and "
                f"{expected_negatives:.1f} negative(s); an AUC needs pairs (at least "
                f"{min_expected_per_class:g} of each)")
    if metric == "recall" and expected_positives is not None and expected_positives < least:
        return (f"undefined: {expected_positives:.1f} expected positive(s); recall needs at least "
                f"{min_expected_per_class:g} (its denominator)")
    if metric == "precision" and predicted_positives is not None and predicted_positives < least:
        return (f"undefined: {predicted_positives:g} predicted positive(s); precision needs at "
                f"least {min_expected_per_class:g} (its denominator)")
    if metric == "f1":
        short = [f"{count:{fmt}} {what}" for count, fmt, what in (
            (expected_positives, ".1f", "expected positive(s)"),
            (predicted_positives, "g", "predicted positive(s)")) if count is not None and count < least]
        if short:
            return (f"undefined: {' and '.join(short)}; F1 needs at least {min_expected_per_class:g} "
                    "of each (the denominators of recall and precision)")
    return None


def _class_evidence(metric: str, n_rows: int, classes: Mapping[str, tuple[float, float]],
                    least: float, shown: float) -> str | None:
    """:func:`estimate_evidence` for a multiclass metric: the first class short of ``least``."""
    for name, (expected, predicted) in classes.items():
        if metric == "roc_auc" and min(expected, n_rows - expected) < least:
            return (f"undefined: class {name!r} has {expected:.1f} expected row(s) and the others "
                    f"{n_rows - expected:.1f}; a one-vs-rest AUC needs pairs (at least {shown:g} "
                    "of each, for every class)")
        if metric == "recall" and expected < least:
            return (f"undefined: class {name!r} has {expected:.1f} expected row(s); its recall "
                    f"needs at least {shown:g} (its denominator, for every class)")
        if metric == "precision" and predicted < least:
            return (f"undefined: class {name!r} has {predicted:g} predicted row(s); its precision "
                    f"needs at least {shown:g} (its denominator, for every class)")
        if metric == "f1" and min(expected, predicted) < least:
            return (f"undefined: class {name!r} has {expected:.1f} expected and {predicted:g} "
                    f"predicted row(s); its F1 needs at least {shown:g} of each (the denominators "
                    "of its recall and precision, for every class)")
    return None


def _class_counts(labels: np.ndarray, classes: Sequence[object]) -> dict[str, int]:
    return {str(c): int(np.count_nonzero(labels == c)) for c in classes}


def estimator_refusal(task: str, labels: ArrayLike, outputs: ArrayLike, *,
                      classes: Sequence[object] = (0, 1),
                      min_per_class: int = MIN_REFERENCE_PER_CLASS) -> str | None:
    """Why no performance estimator may be fitted on this labelled reference, or None.

    Parameters
    ----------
    task : {"binary_classification", "multiclass_classification", "regression"}
    labels : array_like
        The reference's labels as the model compares them (binary 0/1, multiclass class
        indices, regression values).
    outputs : array_like
        Binary: positive-class scores ``(n,)``; multiclass: probabilities ``(n, C)``;
        regression: predictions ``(n,)``.
    classes : sequence, default (0, 1)
        The label values of each class (classification).
    min_per_class : int, default :data:`MIN_REFERENCE_PER_CLASS`
        Fewest labelled rows of each class a calibrator is fitted on.

    Returns
    -------
    str or None

    Examples
    --------
    >>> estimator_refusal("binary_classification", [0] * 50, np.linspace(0, 1, 50))
    'the reference labels hold one class only (0: 50, 1: 0); a calibrator needs both'
    >>> estimator_refusal("binary_classification", [0, 1] * 25, [0.3] * 50)
    'the model gives every reference row the same output (0.3); there is no ranking to calibrate'
    >>> estimator_refusal("binary_classification", [0] * 45 + [1] * 5, np.linspace(0, 1, 50))
    'the reference labels hold too few of a class for a calibrator (0: 45, 1: 5; at least 20 each)'
    >>> estimator_refusal("binary_classification", [0, 1] * 25, np.linspace(0, 1, 50)) is None
    True
    """
    _check_minimum("min_per_class", min_per_class)
    y = np.asarray(labels)
    out = np.asarray(outputs, dtype=np.float64)
    if out.ndim and out.shape[0] and np.all(out == out[0]):
        shown_out = f"{out[0]:g}" if out.ndim == 1 else "one probability vector"
        return (f"the model gives every reference row the same output ({shown_out}); there "
                "is no ranking to calibrate")
    if task == "regression":
        return None
    counts = _class_counts(y, classes)
    shown = ", ".join(f"{c}: {n}" for c, n in counts.items())
    if sum(1 for n in counts.values() if n) < 2:
        return f"the reference labels hold one class only ({shown}); a calibrator needs both" \
            if len(counts) == 2 else f"the reference labels hold one class only ({shown})"
    if min(counts.values()) < min_per_class:
        return (f"the reference labels hold too few of a class for a calibrator ({shown}; at "
                f"least {min_per_class} each)")
    return None
