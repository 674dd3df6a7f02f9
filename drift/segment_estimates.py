"""Estimated performance per segment, judged in one false-discovery-controlled family with the
segments' drift tests.

Each segment (one value of a segment column) of an interval gets the label-free performance
estimate of its own rows (the task's estimator of :mod:`.estimators`, fitted once on the labelled
reference) with its interval. A metric with a configured largest worsening ``L`` and the
reference's realised value ``b`` is then a one-sided test of

    H0: the slice's realised metric is within the limit (``m >= b - L``; ``m <= b + L`` for an
    error metric such as ``mae``),

with the normal p-value ``Phi((estimate - (b - L)) / standard_error)`` (``Phi((b + L -
estimate) / standard_error)`` for an error metric): small when the estimate lies many of its
standard errors beyond the limit. The standard error is the estimator's, of the value the labels
will give on the slice's rows (label noise and the calibrator's error, added), so the check asks
whether the labels will show the slice worse than the limit. That standard error is wider than the
estimate's own spread from one sample of an unchanged slice to the next, which makes the check
conservative: with the limit at 0 and nothing changed, no check in 4,000 had p <= 0.05 on its own
(``bench/RESULTS.md``), and only a clearly degraded slice breaches. A standard error of 0 gives
p = 0 beyond the limit and 1 within it.

One family
----------
The estimate checks and the segments' drift tests (:mod:`.by_segment`, one per feature x segment)
are one family: their p-values are adjusted together (Benjamini-Hochberg by default, through
:func:`modelgate.evaluation.adjusted_p_values`), every test is flagged when its q-value is at most
``level``, and ``family_size`` counts every test made, drift and estimate alike. Adding segments
adds tests to the family rather than chances of a false alarm: under no change anywhere, the
chance that anything is flagged stays at most about ``level`` (``bench/bench_segment_estimates.py``,
``bench/RESULTS.md``). Benjamini-Hochberg's guarantee assumes positive dependence between the
tests (a slice's drift test and its estimate share rows); ``correction="by"`` holds under any
dependence.

Not judged
----------
An estimate the evidence rules out (too few rows or expected rows of a class in the slice,
:func:`.evidence.estimate_evidence`) is ``insufficient_data``: reported with its reason, not in
the family. A metric without a limit, or without a reference value, is ``not_judged``: reported
with its estimate and interval, not in the family.

The baseline ``b`` is the reference's realised value over all its rows, the same baseline as the
interval's own check: a slice that was always weaker than the model as a whole is flagged as well
as one that got worse.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from modelgate.evaluation import adjusted_p_values
from scipy.stats import norm

from .by_segment import SegmentDriftFamily

__all__ = ["SegmentEstimate", "SegmentMonitoring", "segment_family", "worsening_p_value"]

EstimateStatus = Literal["breach", "ok", "not_judged", "insufficient_data"]


def worsening_p_value(estimate: float, standard_error: float, reference_value: float,
                      max_worsening: float, *, lower_is_better: bool = False) -> float:
    """One-sided p-value that a slice's realised metric is worse than the reference by more than
    ``max_worsening``, from its estimate and standard error (normal approximation).

    Parameters
    ----------
    estimate, standard_error : float
        The slice's estimated metric and the standard error of its realised value (>= 0).
    reference_value : float
        The reference's realised value of the metric.
    max_worsening : float
        Largest worsening allowed (>= 0).
    lower_is_better : bool, default False
        True for error metrics (``mae``, ``rmse``).

    Returns
    -------
    float
        In [0, 1]; small when the estimate lies far beyond the limit.

    Raises
    ------
    ValueError
        On a value that is not finite, a negative standard error or a negative limit.

    Examples
    --------
    An estimated accuracy of 0.80 (standard error 0.02) against a reference of 0.90 with a
    largest worsening of 0.05: the limit 0.85 is 2.5 standard errors above, ``Phi(-2.5)``:

    >>> round(worsening_p_value(0.80, 0.02, 0.90, 0.05), 5)
    0.00621
    >>> round(worsening_p_value(1.30, 0.10, 1.00, 0.10, lower_is_better=True), 5)
    0.02275
    """
    values = {"estimate": estimate, "standard_error": standard_error,
              "reference_value": reference_value, "max_worsening": max_worsening}
    for name, value in values.items():
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
    if standard_error < 0 or max_worsening < 0:
        raise ValueError(f"standard_error and max_worsening must be >= 0, got {standard_error!r} "
                         f"and {max_worsening!r}")
    margin = (reference_value + max_worsening - estimate if lower_is_better
              else estimate - (reference_value - max_worsening))  # > 0: within the limit
    if standard_error == 0.0:
        return 0.0 if margin < 0 else 1.0
    return float(norm.cdf(margin / standard_error))


@dataclass(frozen=True, slots=True)
class SegmentEstimate:
    """One metric estimated on one segment of an interval, and its check.

    Attributes
    ----------
    segment_column, segment_value : str
        The segment (its value as text).
    metric : str
    n_rows : int
        Scored rows of the segment.
    estimate, standard_error, lower, upper : float or None
        The estimate and its interval for the value the labels will give; None when the
        evidence rules the estimate out.
    reference_value, max_worsening : float or None
        The baseline and the configured largest worsening (None: none configured).
    p_value, q_value : float or None
        The check's p-value (:func:`worsening_p_value`) and its q-value in the family; None when
        not judged.
    status : {"breach", "ok", "not_judged", "insufficient_data"}
    reason : str or None
        Why the estimate is not judged, or None.
    """

    segment_column: str
    segment_value: str
    metric: str
    n_rows: int
    estimate: float | None
    standard_error: float | None
    lower: float | None
    upper: float | None
    reference_value: float | None
    max_worsening: float | None
    p_value: float | None
    q_value: float | None
    status: EstimateStatus
    reason: str | None

    def to_record(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}


@dataclass(frozen=True, slots=True)
class SegmentMonitoring:
    """The segments' drift tests and estimate checks of one interval, adjusted as one family.

    Attributes
    ----------
    drift : SegmentDriftFamily or None
        The drift tests with their q-values and statuses from the whole family (its
        ``family_size`` is the whole family's).
    estimates : tuple of SegmentEstimate
        Sorted by segment column, segment value, metric.
    level : float
    correction : str
    family_size : int
        Tests made: drift tests plus judged estimate checks.
    """

    drift: SegmentDriftFamily | None
    estimates: tuple[SegmentEstimate, ...]
    level: float
    correction: str
    family_size: int

    @property
    def breaches(self) -> tuple[SegmentEstimate, ...]:
        """The breached estimate checks, smallest q-value first."""
        hits = [e for e in self.estimates if e.status == "breach"]
        return tuple(sorted(hits, key=lambda e: (e.q_value, e.p_value)))


def _check(row: Mapping[str, Any], lower_is_better: bool) -> tuple[float | None, EstimateStatus | None,
                                                                   str | None]:
    """(p-value, final status when not judged, reason) of one estimate."""
    if row.get("reason") or row["estimate"] is None:
        return None, "insufficient_data", row.get("reason") or "undefined on this segment's scores"
    se, base, limit = row["standard_error"], row["reference_value"], row["max_worsening"]
    if limit is None:
        return None, "not_judged", "no limit configured for this metric"
    if base is None or not math.isfinite(base):
        return None, "not_judged", "the reference has no realised value of this metric"
    if se is None or not math.isfinite(se):
        return None, "not_judged", "no standard error on this segment's scores"
    return worsening_p_value(row["estimate"], se, base, limit, lower_is_better=lower_is_better), None, None


def segment_family(estimates: Sequence[Mapping[str, Any]], drift: SegmentDriftFamily | None = None, *,
                   level: float = 0.05, correction: str = "bh",
                   lower_is_better: Collection[str] = ()) -> SegmentMonitoring:
    """Judge every segment's estimates and drift tests as one family.

    Parameters
    ----------
    estimates : sequence of mapping
        One per (segment, metric): ``segment_column``, ``segment_value``, ``metric``,
        ``n_rows``, ``estimate``, ``standard_error``, ``lower``, ``upper`` (None when not
        estimated), ``reference_value``, ``max_worsening`` (None: no limit) and ``reason``
        (why the evidence rules the estimate out, or None).
    drift : SegmentDriftFamily, optional
        The segments' drift tests (:func:`.by_segment.segment_drift`); their q-values are
        recomputed over the whole family.
    level : float, default 0.05
        Largest q-value flagged.
    correction : {"bh", "by", "holm"}, default "bh"
    lower_is_better : collection of str, default ()
        Metrics that get worse as they grow (``mae``, ``rmse``).

    Returns
    -------
    SegmentMonitoring

    Raises
    ------
    ValueError
        ``level`` outside (0, 1), an unknown correction, or a value
        :func:`worsening_p_value` refuses.

    Examples
    --------
    Two segments' accuracy against a reference of 0.90, at most 0.05 worse; the family is the
    two checks (no drift tests given):

    >>> rows = [{"segment_column": "region", "segment_value": v, "metric": "accuracy",
    ...          "n_rows": 400, "estimate": e, "standard_error": 0.015, "lower": e - 0.03,
    ...          "upper": e + 0.03, "reference_value": 0.90, "max_worsening": 0.05, "reason": None}
    ...         for v, e in (("n", 0.89), ("s", 0.78))]
    >>> out = segment_family(rows)
    >>> [(e.segment_value, e.status) for e in out.estimates], out.family_size
    ([('n', 'ok'), ('s', 'breach')], 2)
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    worse_up = set(lower_is_better)
    checks = [_check(r, r["metric"] in worse_up) for r in estimates]
    drift_rows = drift.rows if drift is not None else ()
    p = np.array([np.nan if r.p_value is None else r.p_value for r in drift_rows]
                 + [np.nan if c[0] is None else c[0] for c in checks], dtype=np.float64)
    q = adjusted_p_values(p, correction)
    family_size = int(np.count_nonzero(~np.isnan(p)))
    new_drift = None
    if drift is not None:
        rows = tuple(r if r.p_value is None else
                     replace(r, q_value=float(qv), status="drift" if qv <= level else "no_drift")
                     for r, qv in zip(drift_rows, q[:len(drift_rows)].tolist(), strict=True))
        new_drift = replace(drift, rows=rows, level=level, correction=correction, family_size=family_size)
    out = []
    for r, (pv, status, reason), qv in zip(estimates, checks, q[len(drift_rows):].tolist(), strict=True):
        judged = pv is not None
        out.append(SegmentEstimate(
            str(r["segment_column"]), str(r["segment_value"]), str(r["metric"]), int(r["n_rows"]),
            r["estimate"], r["standard_error"], r["lower"], r["upper"], r["reference_value"],
            r["max_worsening"], pv, qv if judged else None,
            ("breach" if qv <= level else "ok") if judged else status or "not_judged",
            None if judged else reason))
    out.sort(key=lambda e: (e.segment_column, e.segment_value, e.metric))
    return SegmentMonitoring(new_drift, tuple(out), level, correction, family_size)
