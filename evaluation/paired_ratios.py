"""Paired deltas of precision, F1 and the Brier score: intervals over the rows' contributions.

Two binary models judged on the same rows put every row in one of 8 cells: its label
and each model's predicted label.  Precision, F1 (and recall and accuracy) of each model
are ratios ``sum(a) / sum(b)`` of per-row values fixed by the cell (precision: ``a = tp``,
``b = predicted positive``; F1: ``a = 2 tp``, ``b = positive + predicted positive``), so
the delta of two models' ratios and its delta-method variance need only the 8 counts:
each row's contribution to the delta is ``(a_c - m_c b_c) / mean(b_c) - (a_h - m_h b_h)
/ mean(b_h)`` (its influence on the candidate's ratio minus that on the champion's),
and the variance is the mean square of the contributions over ``n``.  For precision the
quantile is Student's t with Satterthwaite's effective degrees of freedom of the
contributions, as for the ROC AUC delta (:mod:`~.auc_delta`): for two near-equal models
only the few rows predicted positive by one model carry the variance, and a variance read
off a handful of rows is itself uncertain.  For F1 the delta and its standard error are
those of the cells with one pseudo-row spread evenly over them (1/8 in each; Agresti and
Min's adjustment for matched pairs, 0.5 in each cell of a 2 x 2 table, scaled down), with the
normal quantile, and the interval is widened to hold the observed delta.

Chosen by simulation (``bench/paired_delta_candidates.py``; ``bench/RESULTS.md``,
"Paired precision, F1 and Brier deltas of near-equal models"), two near-equal models at
AUC 0.8, 0.98 and 0.997, n = 200 and 2,000: MOVER of the two Wilson intervals with the
correlation of the resampled values, the method before, held the precision delta in
97.6-98.2 % of sets at n = 200 (it reads each interval's asymmetry as spread), this
interval in 95.4-96.8 % everywhere; the normal quantile held precision in 91.8 % at AUC
0.98 (too few discordant rows for the normal law), the bootstrap-t and percentile
intervals 87-93 %.  For F1 the plain normal quantile sat at the band's lower edge on
confident models (93.2-93.8 % of sets at AUC 0.997, n = 200, its misses lopsided: 5-6 % of
truths above the interval, 1 % below: a few discordant rows make the small observed deltas'
standard errors small too); the pseudo-rows raise it to about 95.5 % there and leave the
other cells in 94.5-95.8 %, where Satterthwaite's t read 97.2-97.4 % and two pseudo-rows up
to 96.8 %.  The counts come from the merged cell table (:func:`~.bootstrap_cells.correct_pairs`), so
mapped and one-process runs agree, and no resample is drawn.

The Brier delta is a plain mean of per-row differences ``d = (s_c - y)^2 - (s_h - y)^2``
(:func:`mean_delta_interval`): its own t interval with Satterthwaite's degrees of freedom
held 95.2-96.5 % of near-equal models' deltas at n = 200 where MOVER over the parts of
``d`` (the method before, still the log loss's) held 96.1-97.2 % with up to half as much
width again, and the t quantile with ``n - 1`` degrees of freedom 93.0 % on the confident model
(its rare large differences make the variance uncertain).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.stats import norm
from scipy.stats import t as student_t

from .auc_delta import effective_df

__all__ = ["mean_delta_interval", "paired_label_cells", "ratio_delta_interval"]

# the F1 delta's pseudo-rows, spread evenly over the 8 cells (module docstring)
_F1_PSEUDO_ROWS = 1.0
# cell j holds the rows with label y, candidate's prediction c, champion's h: j = 4 y + 2 c + h
_Y = np.array([0, 0, 0, 0, 1, 1, 1, 1], dtype=np.float64)
_CANDIDATE = np.array([0, 0, 1, 1, 0, 0, 1, 1], dtype=np.float64)
_CHAMPION = np.array([0, 1, 0, 1, 0, 1, 0, 1], dtype=np.float64)


def paired_label_cells(correct: tuple[int, int, int, int],
                       found: tuple[int, int, int, int]) -> npt.NDArray[np.float64]:
    """The 8 counts of ``(label, candidate's prediction, champion's prediction)``.

    Parameters
    ----------
    correct : tuple of int
        Rows both models classify correctly, only the candidate, only the champion, neither.
    found : tuple of int
        The same of the positive rows (both find it, only the candidate, ...).

    Returns
    -------
    ndarray of shape (8,)
        Cell ``4 y + 2 c + h``.  A negative row is classified correctly when predicted 0,
        so ``correct - found`` counts the negatives predicted (0, 0), (0, 1), (1, 0), (1, 1).

    Examples
    --------
    >>> paired_label_cells((5, 2, 1, 2), (3, 1, 1, 1)).tolist()
    [2.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 3.0]
    """
    neg = [c - f for c, f in zip(correct, found, strict=True)]
    if min(neg) < 0 or min(found) < 0:
        raise ValueError(f"paired_label_cells: found {found!r} must not exceed correct {correct!r}")
    return np.array([neg[0], neg[1], neg[2], neg[3], found[3], found[2], found[1], found[0]],
                    dtype=np.float64)


def _parts(metric: str, predicted: npt.NDArray[np.float64]
           ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    tp = _Y * predicted
    if metric == "precision":
        return tp, predicted
    return 2.0 * tp, _Y + predicted  # f1


def ratio_delta_interval(metric: Literal["precision", "f1"], cells: npt.ArrayLike,
                         confidence_level: float) -> tuple[float, float] | None:
    """Interval of the candidate's minus the champion's precision or F1 from the 8 cells.

    Precision: ``delta -+ q se``, ``se`` the delta method's standard error (the root of the
    sum of squares of each row's contribution, over ``n``; module docstring), ``q``
    Student's t quantile with Satterthwaite's effective degrees of freedom of the
    contributions (at least 1).  F1: ``delta' -+ z se'``, the delta and standard error of
    the cells plus 1/8 each, widened to hold ``delta``.  Clipped to [-1, 1].

    Parameters
    ----------
    metric : {"precision", "f1"}
    cells : array_like of shape (8,)
        :func:`paired_label_cells`.
    confidence_level : float
        In (0, 1).

    Returns
    -------
    tuple of float or None
        ``(lower, upper)``; None where a model's ratio is undefined (no predicted
        positives, for F1 no positive and no predicted positive) or the standard error is
        0 (no row the two models treat differently contributes).

    Examples
    --------
    100 rows; the models disagree on 6 of them:

    >>> cells = [50, 2, 1, 5, 3, 1, 2, 36]
    >>> lo, hi = ratio_delta_interval("precision", cells, 0.95)
    >>> round(lo, 4), round(hi, 4)
    (-0.0586, 0.104)
    """
    counts = np.asarray(cells, dtype=np.float64)
    if counts.shape != (8,) or np.any(counts < 0):
        raise ValueError(f"ratio_delta_interval: cells must be 8 counts >= 0, got {counts!r}")
    observed = _delta_and_contributions(metric, counts)
    if observed is None:
        return None
    delta, se, contribution = observed
    if not se > 0.0:
        return None
    level = 0.5 + confidence_level / 2.0
    if metric == "precision":
        quantile = float(student_t.ppf(level, max(effective_df(contribution, counts), 1.0)))
        return max(delta - quantile * se, -1.0), min(delta + quantile * se, 1.0)
    padded = _delta_and_contributions(metric, counts + _F1_PSEUDO_ROWS / 8.0)
    assert padded is not None  # every cell holds rows: both denominators > 0
    centre, se, _ = padded
    quantile = float(norm.ppf(level))
    return (max(min(centre - quantile * se, delta), -1.0),
            min(max(centre + quantile * se, delta), 1.0))


def _delta_and_contributions(metric: str, counts: npt.NDArray[np.float64]
                             ) -> tuple[float, float, npt.NDArray[np.float64]] | None:
    """The delta, its delta-method standard error and each cell's contribution; None where
    a model's ratio is undefined."""
    n = float(counts.sum())
    contribution = np.zeros(8)
    ratios = []
    for predicted, sign in ((_CANDIDATE, 1.0), (_CHAMPION, -1.0)):
        a, b = _parts(metric, predicted)
        total = float(counts @ b)
        if total <= 0.0:
            return None
        ratio = float(counts @ a) / total
        ratios.append(ratio)
        contribution += sign * (a - ratio * b) / (total / n)
    return ratios[0] - ratios[1], float(np.sqrt(counts @ contribution**2)) / n, contribution


def mean_delta_interval(difference: npt.ArrayLike, counts: npt.ArrayLike,
                        confidence_level: float) -> tuple[float, float]:
    """t interval of the mean of per-row differences, Satterthwaite's degrees of freedom.

    ``mean -+ t_(df) sd / sqrt(n)``, ``sd`` with ``n - 1``, ``df`` the effective degrees of
    freedom of the deviations from the mean (at least 1); clipped to [-1, 1] (a
    difference of two Brier scores).  Every difference equal: ``(mean, mean)``.

    Parameters
    ----------
    difference : array_like of shape (cells,)
        Each cell's difference (with rows as cells, each row's; with cells that pool rows,
        the cell's mean, which leaves out the spread inside a cell).
    counts : array_like of shape (cells,)
        Rows per cell (cells without rows are left out).
    confidence_level : float
        In (0, 1).

    Returns
    -------
    tuple of float
        NaN ends with fewer than 2 rows.

    Examples
    --------
    >>> lo, hi = mean_delta_interval([0.02, -0.01, 0.0, 0.05], [50, 30, 100, 20], 0.95)
    >>> round(lo, 4), round(hi, 4)
    (0.0061, 0.0109)
    """
    c = np.asarray(counts, dtype=np.float64)
    d = np.asarray(difference, dtype=np.float64)
    if c.shape != d.shape or np.any(c < 0):
        raise ValueError(f"mean_delta_interval: counts must be >= 0 and match the differences, "
                         f"got shapes {c.shape} and {d.shape}")
    d, c = d[c > 0], c[c > 0]
    n = float(c.sum())
    if n < 2:
        return float("nan"), float("nan")
    mean = float(c @ d) / n
    deviation = d - mean
    se = float(np.sqrt(c @ deviation**2 / (n - 1.0) / n))
    if not se > 0.0:
        return mean, mean
    df = max(effective_df(deviation, c), 1.0)
    half = float(student_t.ppf(0.5 + confidence_level / 2.0, df)) * se
    return max(mean - half, -1.0), min(mean + half, 1.0)
