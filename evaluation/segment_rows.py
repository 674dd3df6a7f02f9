"""Segments of multiclass and regression models: each slice's metrics from its own rows.

Binary models summarise each segment into mergeable counts while they are scored
(:mod:`.segment_statistics`).  A multiclass or regression evaluation keeps its scored rows
and computes its metrics from them (:mod:`.multiclass`, :mod:`.regression`), so its
segments do the same: each segment's rows and its rest's (every other row) are evaluated
with the task's own definitions, and compared as the binary segments are
(:mod:`.segments`): the difference ``segment - rest`` with its MOVER interval
(correlation 0: the two share no row), a one-sided p-value that the segment is worse
(:func:`~.segments.worse_p_value`), and q-values adjusted over every judged (segment,
metric) of the report.  The result is a :class:`~.segments.SegmentReport`, so the gate
(:mod:`.segment_gate`), the store and the report take it unchanged.  The rows come in the
run's partition order, so a mapped run and a one-process run see the same rows and agree.

* Multiclass (:func:`evaluate_multiclass_segments`): every metric of
  :func:`~.multiclass.evaluate_multiclass` (accuracy, macro and weighted F1, macro
  one-vs-rest ROC AUC, log loss, recall and precision per class) with its intervals:
  Wilson for the proportions, logit Wald with DeLong's variance for the macro AUC and
  percentile bootstraps over confusion cells for the F1s (their resamples cost cells, not
  rows); the log loss takes Hall's skewness-corrected interval of a mean of the rows'
  losses, as the binary segments' (:func:`~.segment_intervals.hall_mean_interval`), in
  place of the whole data's studentized bootstrap: closed-form, with the same coverage in
  simulation (``bench/RESULTS.md``, "Segments of multiclass and regression models").  A
  class absent from a segment leaves its recall, and the macro AUC, undefined there (not
  judged).
* Regression (:func:`evaluate_regression_segments`): MAE, RMSE and R^2 with the
  closed-form intervals of :mod:`.segment_regression`.

Cost: one evaluation of each segment and of each rest, ``O(segments x rows)``; a multiclass
rest is read off the whole data's totals (:mod:`.segment_multiclass`), with no sort of its
rows and no resample the segments do not use.

Examples
--------
>>> from modelgate.fairness.disaggregate import encode_groups
>>> rng = np.random.default_rng(0)
>>> y = rng.normal(size=400)
>>> region = np.array(["n", "s"])[rng.integers(0, 2, 400)]
>>> report = evaluate_regression_segments(y, y + rng.normal(size=400),
...                                       columns={"region": encode_groups(region)})
>>> [(s.name, s.n, s.judged) for s in report.segments], report.family_size
([('region=n', 193, True), ('region=s', 207, True)], 6)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from modelgate.intervals import check_confidence_level

from .metrics import MetricEstimate
from .multiple_testing import CORRECTIONS
from .segment_policy import segment_higher_is_better
from .segment_regression import regression_estimates
from .segment_statistics import segment_columns
from .segments import (
    DEFAULT_MIN_ROWS,
    SegmentReport,
    SegmentResult,
    compare_with_rest,
    not_judged,
    with_q_values,
)

__all__ = ["evaluate_multiclass_segments", "evaluate_regression_segments", "segment_rows"]

_IntArray = npt.NDArray[np.intp]
#: Rows (as indices into the data) -> metric name -> estimate, in report order.
Estimator = Callable[[_IntArray], Mapping[str, MetricEstimate]]
Encoded = Mapping[str, tuple[Sequence[str], npt.ArrayLike]]


def evaluate_multiclass_segments(
    y_true: npt.ArrayLike, proba: npt.ArrayLike, *, classes: Sequence[object],
    columns: Encoded, pairs: Sequence[tuple[str, str]] = (), min_rows: int = DEFAULT_MIN_ROWS,
    n_bootstrap: int = 1000, confidence_level: float = 0.95, seed: int = 0,
    correction: str = "bh",
) -> SegmentReport:
    """Every multiclass metric per segment, with intervals and the comparison with the rest.

    Parameters
    ----------
    y_true : array_like of int, shape (N,)
        Class indices into ``classes``.
    proba : array_like, shape (N, C)
        The candidate's probabilities.
    classes : sequence
        The model's classes, naming the per-class metrics.
    columns, pairs, min_rows, n_bootstrap, confidence_level, seed, correction
        As for :func:`segment_rows` (``n_bootstrap`` and ``seed``: each slice's
        :func:`~.multiclass.evaluate_multiclass`).

    Returns
    -------
    SegmentReport
        ``n_pos`` of every segment is None (no positive class).
    """
    from .segment_multiclass import multiclass_segment_estimators

    y = np.asarray(y_true)
    own, rest = multiclass_segment_estimators(y, proba, classes=classes, n_bootstrap=n_bootstrap,
                                              confidence_level=confidence_level, seed=seed)
    return segment_rows(own, y.shape[0], columns=columns, pairs=pairs, min_rows=min_rows,
                        n_bootstrap=n_bootstrap, confidence_level=confidence_level, seed=seed,
                        correction=correction, rest_estimate=rest)


def evaluate_regression_segments(
    y_true: npt.ArrayLike, prediction: npt.ArrayLike, *, columns: Encoded,
    pairs: Sequence[tuple[str, str]] = (), min_rows: int = DEFAULT_MIN_ROWS,
    n_bootstrap: int = 1000, confidence_level: float = 0.95, seed: int = 0,
    correction: str = "bh",
) -> SegmentReport:
    """MAE, RMSE and R^2 per segment (:mod:`.segment_regression`), compared with the rest.

    Parameters are those of :func:`segment_rows`; ``y_true`` and ``prediction`` are the
    finite labels and predictions.  ``n_bootstrap`` 0 gives NaN intervals (as for the
    whole data); otherwise the intervals are closed-form and draw no resample.
    """
    y = np.asarray(y_true, dtype=np.float64)
    pred = np.asarray(prediction, dtype=np.float64)

    def estimate(rows: _IntArray) -> Mapping[str, MetricEstimate]:
        return regression_estimates(y[rows], pred[rows], confidence_level=confidence_level,
                                    intervals=n_bootstrap > 0)

    return segment_rows(estimate, y.shape[0], columns=columns, pairs=pairs, min_rows=min_rows,
                        n_bootstrap=n_bootstrap, confidence_level=confidence_level, seed=seed,
                        correction=correction)


def segment_rows(estimate: Estimator, n_rows: int, *, columns: Encoded,
                 pairs: Sequence[tuple[str, str]] = (), min_rows: int = DEFAULT_MIN_ROWS,
                 n_bootstrap: int = 1000, confidence_level: float = 0.95, seed: int = 0,
                 correction: str = "bh", rest_estimate: Estimator | None = None) -> SegmentReport:
    """Each segment of each column (then each pair) estimated on its rows and on its rest's.

    Parameters
    ----------
    estimate : callable
        Row indices -> metric name -> :class:`~.metrics.MetricEstimate` (every metric a
        segment metric of :data:`~.segment_policy.SEGMENT_METRICS_BY_TASK`).
    n_rows : int
        Rows of the data.
    columns : mapping
        Segment column -> ``(labels, codes)`` as from
        :func:`modelgate.fairness.disaggregate.encode_groups`, one code per row.
    pairs : sequence of (str, str), optional
        Pairs of names of ``columns`` whose joint values are segments too.
    min_rows : int, default :data:`~.segments.DEFAULT_MIN_ROWS`
        Fewest rows a segment and its rest need to be judged (>= 2).
    n_bootstrap, seed : int
        Recorded in the report (and used by ``estimate``).
    confidence_level : float
        Coverage of every interval.
    correction : {"bh", "by", "holm"}
        How the family's p-values are adjusted.
    rest_estimate : callable, optional
        A segment's row indices -> its rest's estimates, for a task that reads the rest off
        the whole data's totals; default ``estimate`` of the rest's rows.

    Returns
    -------
    SegmentReport

    Raises
    ------
    ValueError
        On a ``min_rows`` below 2, an unknown correction, codes of another length, or a
        pair naming a column not in ``columns``.
    """
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 2:
        raise ValueError(f"min_rows must be an integer >= 2; got {min_rows!r}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}; got {correction!r}")
    check_confidence_level(confidence_level)
    results: list[SegmentResult] = []
    for names, labels, codes in segment_columns(n_rows, columns, pairs):
        order = np.argsort(codes, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(labels)))])
        present = [k for k in range(len(labels)) if bounds[k + 1] > bounds[k]]
        for k in sorted(present, key=lambda k: _value_key(labels[k])):
            rows = np.sort(order[bounds[k]:bounds[k + 1]])
            own = estimate(rows)
            reason = not_judged(rows.size, n_rows - rows.size, min_rows)
            rest = (None if reason is not None
                    else estimate(np.flatnonzero(codes != k)) if rest_estimate is None
                    else rest_estimate(rows))
            metrics = tuple(compare_with_rest(own[name], None if rest is None else rest[name],
                                              segment_higher_is_better(name), confidence_level)
                            for name in own)
            results.append(SegmentResult(names, labels[k], int(rows.size), None, reason is None,
                                         reason, metrics))
    return with_q_values(results, SegmentReport((), min_rows, correction, confidence_level,
                                                n_bootstrap, seed, 0))


def _value_key(values: tuple[str, ...]) -> tuple[tuple[bool, str], ...]:
    """Segments in label order, the missing value after every other (as the binary segments)."""
    from modelgate.fairness.disaggregate import MISSING_LABEL

    return tuple((label == MISSING_LABEL, label) for label in values)
