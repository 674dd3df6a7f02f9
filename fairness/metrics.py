"""Group-fairness gaps with simultaneous pairwise intervals, thin functions of one disaggregated table.

A gap is the largest minus the smallest group rate (fairlearn's ``between_groups``
difference):

=================================  =======================================
``tpr_gap``                        true positive rate gap
``fpr_gap``                        false positive rate gap
``equalized_odds_difference``      ``max(tpr_gap, fpr_gap)`` (fairlearn's ``worst_case``)
``tpr_fpr_gap_sum``                ``tpr_gap + fpr_gap``
``demographic_parity_difference``  selection rate gap
``predictive_parity_difference``   positive predictive value (precision) gap
=================================  =======================================

Undefined rates
---------------
A group with no positive labels has no TPR, one with no negative labels no FPR, one
with no predicted positives no PPV.  ``undefined_rates`` says what to do:

* ``"exclude"`` (default): leave the group out of that gap and list it in
  ``FairnessEstimate.excluded_groups``; a gap over fewer than two groups is undefined
  (NaN with an ``undefined_reason``), never 0.
* ``"zero"``: count the rate as 0, as fairlearn (<= 0.15) does: its rates come from
  ``sklearn.metrics.confusion_matrix(normalize="true")``, which turns 0/0 into 0, and
  a gap over a single group is 0.  Use it to reproduce fairlearn's numbers.

Small groups (``n < min_group_size``) are included in the gaps by default, as fairlearn
includes every group; ``include_small_groups=False`` leaves them out (they stay in the
table, flagged, and are listed in ``excluded_groups``).

Intervals
---------
Each gap's interval is built from the group counts by :mod:`modelgate.fairness.gap_intervals`.
The upper end is the farthest end of any pair's Newcombe hybrid score interval at the one-pair
point (it lies below the gap in at most 2 % of samples at 95 % with two groups, 1 % with more).
The lower end is 0 when a test of equal rates at 4 % does not reject them, else the smallest
gap ``t`` that a test of ``gap <= t`` at 4 % (two groups) or 5 % (more) does not reject, each
test a parametric bootstrap at the group rates fitted under it (equal rates, from three groups
on: a permutation test, the counts drawn with their observed totals).  The equalized-odds
difference is the largest difference over the TPR and FPR pairs together;
``tpr_fpr_gap_sum`` adds the two families' ends at level ``1 - (1 - confidence_level) / 2``
each.  Unlike the percentile bootstrap used before (issue #38), the interval reaches 0 when
there is no gap: with random groups it breaches the 0.03 limit in at most about 5 % of
samples, and small gaps are covered in about 93-97 % (``bench/RESULTS.md``, "Fairness gap
intervals at the boundary").  The intervals draw no row resamples (the lower end's bootstrap
draws counts from fixed quasi-random points) and depend on the data only
through the ``(groups, 4)`` table; ``n_bootstrap=0`` still means "no intervals" (NaN), as for
every other result. Small groups left out of a gap and groups with an undefined rate are left
out of its interval as well (``undefined_rates="zero"``: such a group's rate is 0 with the
interval ``[0, 0]``).

Per-group rates get Wilson score intervals, modified near 0 and 1 (:meth:`GroupStats.rate_interval
<modelgate.fairness.disaggregate.GroupStats.rate_interval>`).

References
----------
.. [1] Hardt, M., Price, E. and Srebro, N. (2016). Equality of Opportunity in Supervised
   Learning.
.. [2] fairlearn, ``fairlearn.metrics.equalized_odds_difference`` and ``MetricFrame``.
.. [3] Newcombe, R. G. (1998). Interval estimation for the difference between independent
   proportions: comparison of eleven methods. Statistics in Medicine 17(8), 873-890.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from modelgate.intervals import check_confidence_level, check_int, interval_holding
from modelgate.records import finite_or_none

from .disaggregate import (
    DisaggregatedTable,
    disaggregate,
    highest_and_lowest,
    one_group_reason,
)
from .gap_intervals import gap_interval_of_families
from .group_scores import group_score_table, with_group_auc

__all__ = [
    "FAIRNESS_METRIC_NAMES",
    "FairnessEstimate",
    "FairnessReport",
    "demographic_parity_difference",
    "equalized_odds_difference",
    "fairness_report",
    "fairness_report_from_table",
]

FairnessMetricName = Literal[
    "equalized_odds_difference",
    "tpr_gap",
    "fpr_gap",
    "tpr_fpr_gap_sum",
    "demographic_parity_difference",
    "predictive_parity_difference",
]
FAIRNESS_METRIC_NAMES: tuple[FairnessMetricName, ...] = (
    "equalized_odds_difference",
    "tpr_gap",
    "fpr_gap",
    "tpr_fpr_gap_sum",
    "demographic_parity_difference",
    "predictive_parity_difference",
)
UndefinedRates = Literal["exclude", "zero"]

_FloatArray = npt.NDArray[np.float64]
# rate name, description, and why it can be undefined
_RATES = {
    "tpr": ("true positive rate", "no positive labels"),
    "fpr": ("false positive rate", "no negative labels"),
    "selection_rate": ("selection rate", "no rows"),
    "ppv": ("positive predictive value", "no predicted positives"),
}
GAP_RATE = {
    "tpr_gap": "tpr",
    "fpr_gap": "fpr",
    "demographic_parity_difference": "selection_rate",
    "predictive_parity_difference": "ppv",
}


@dataclass(frozen=True, slots=True)
class FairnessEstimate:
    """One fairness gap of one sensitive feature, with its confidence interval.

    Attributes
    ----------
    name : str
        One of :data:`FAIRNESS_METRIC_NAMES`.
    value : float
        Gap on all rows; NaN when undefined.
    ci_lower, ci_upper : float
        Interval of the gap from the group counts (see the module docstring); NaN when
        undefined or ``n_bootstrap == 0``.
    n : int
        Rows.
    highest_group, lowest_group : str or None
        Groups with the highest and lowest rate behind the gap (for
        ``equalized_odds_difference``, of the larger of the two gaps); None for
        ``tpr_fpr_gap_sum`` or when undefined.
    excluded_groups : tuple of (str, str)
        ``(group, why)`` for each group left out of the gap.
    undefined_reason : str or None
        Why ``value`` is NaN, else None.
    driving_rate : str or None
        The group rate whose spread is the gap: ``"tpr"``, ``"fpr"``, ``"selection_rate"``
        or ``"ppv"``; for ``equalized_odds_difference`` the one of the larger gap (``"tpr"``
        on a tie), between ``highest_group`` and ``lowest_group``.  None when undefined,
        for ``tpr_fpr_gap_sum`` (both rates) and for regression gaps.
    """

    name: str
    value: float
    ci_lower: float
    ci_upper: float
    n: int
    highest_group: str | None
    lowest_group: str | None
    excluded_groups: tuple[tuple[str, str], ...]
    undefined_reason: str | None = None
    driving_rate: str | None = None

    def to_record(self) -> dict[str, Any]:
        """The gap as a ``fairness_metric`` row (the caller adds the run and the sensitive
        feature), with the groups behind it.

        Returns
        -------
        dict
            The stored columns ``metric_name``, ``value``, ``ci_lower``, ``ci_upper`` (None
            where undefined), then ``n``, ``undefined_reason``, ``highest_group``,
            ``lowest_group``, ``excluded_groups`` (a list of ``[group, why]``) and
            ``driving_rate``.

        Examples
        --------
        >>> gap = FairnessEstimate("tpr_gap", 0.25, 0.1, 0.4, 90, "a", "b", (("c", "small group"),))
        >>> record = gap.to_record()
        >>> record["metric_name"], record["value"], record["excluded_groups"]
        ('tpr_gap', 0.25, [['c', 'small group']])
        >>> record["driving_rate"] is None
        True
        """
        return {"metric_name": self.name, "value": finite_or_none(self.value),
                "ci_lower": finite_or_none(self.ci_lower), "ci_upper": finite_or_none(self.ci_upper),
                "n": self.n, "undefined_reason": self.undefined_reason,
                "highest_group": self.highest_group, "lowest_group": self.lowest_group,
                "excluded_groups": [list(x) for x in self.excluded_groups],
                "driving_rate": self.driving_rate}


@dataclass(frozen=True, slots=True)
class FairnessReport:
    """Every fairness gap of one sensitive feature, the group table and the settings."""

    sensitive_feature: str
    table: DisaggregatedTable
    estimates: tuple[FairnessEstimate, ...]
    n_bootstrap: int
    confidence_level: float
    seed: int
    undefined_rates: UndefinedRates
    include_small_groups: bool

    def by_name(self) -> Mapping[str, FairnessEstimate]:
        """Return a read-only mapping from metric name to estimate."""
        return MappingProxyType({e.name: e for e in self.estimates})


def fairness_report(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    sensitive: npt.ArrayLike,
    *,
    sensitive_feature: str,
    min_group_size: int = 30,
    include_small_groups: bool = True,
    undefined_rates: UndefinedRates = "exclude",
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
    score: npt.ArrayLike | None = None,
) -> FairnessReport:
    """Disaggregate by one sensitive feature and compute every gap with an interval.

    Parameters
    ----------
    y_true, y_pred : array_like of shape (n,)
        True and predicted labels, 0 or 1.
    sensitive : array_like of shape (n,)
        Values of the sensitive feature; missing values form the group ``"__missing__"``.
    sensitive_feature : str
        Name of the feature (reported, and used by the gate's policy).
    min_group_size : int, default 30
        Groups with fewer rows are flagged ``small_group``.
    include_small_groups : bool, default True
        Whether small groups take part in the gaps (fairlearn: all groups do).
    undefined_rates : {"exclude", "zero"}, default "exclude"
        How undefined group rates enter a gap (see the module docstring).
    n_bootstrap : int, default 1000
        0 gives NaN intervals; any other value the closed-form intervals (binary gaps draw
        no resamples; the value is kept in the report).
    confidence_level : float, default 0.95
        Joint coverage of each gap's interval, in (0, 1).
    seed : int, default 0
        Kept in the report; binary gaps draw no resamples.
    score : array_like of shape (n,), optional
        Scores in [0, 1]; with them the table holds each group's ROC AUC
        (:mod:`modelgate.fairness.group_scores`).

    Returns
    -------
    FairnessReport

    Raises
    ------
    ValueError
        On invalid data or options.

    Examples
    --------
    >>> y = [1, 1, 0, 0, 1, 1, 0, 0]
    >>> p = [1, 0, 0, 1, 1, 1, 0, 0]
    >>> g = ["a", "a", "a", "a", "b", "b", "b", "b"]
    >>> r = fairness_report(y, p, g, sensitive_feature="group", n_bootstrap=100)
    >>> eod = r.by_name()["equalized_odds_difference"]
    >>> eod.value, eod.highest_group, eod.lowest_group
    (0.5, 'b', 'a')
    """
    _check_options(sensitive_feature, include_small_groups, undefined_rates, n_bootstrap,
                   confidence_level, seed)
    table = disaggregate(y_true, y_pred, sensitive, min_group_size=min_group_size)
    if score is not None:
        table = with_group_auc(table, group_score_table(sensitive_feature, y_true, score,
                                                        sensitive))
    return fairness_report_from_table(
        table, sensitive_feature=sensitive_feature, include_small_groups=include_small_groups,
        undefined_rates=undefined_rates, n_bootstrap=n_bootstrap,
        confidence_level=confidence_level, seed=seed)


def fairness_report_from_table(
    table: DisaggregatedTable,
    *,
    sensitive_feature: str,
    include_small_groups: bool = True,
    undefined_rates: UndefinedRates = "exclude",
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> FairnessReport:
    """:func:`fairness_report` from a disaggregated table (for example merged partition counts).

    The gaps and their intervals depend on the data only through the table, so this gives
    the same report as :func:`fairness_report` on the rows the table counts.

    Examples
    --------
    >>> from modelgate.fairness.disaggregate import table_from_counts
    >>> t = table_from_counts(("a", "b"), [[1, 1, 1, 1], [2, 0, 0, 2]])
    >>> r = fairness_report_from_table(t, sensitive_feature="group", n_bootstrap=0)
    >>> r.by_name()["equalized_odds_difference"].value
    0.5
    """
    _check_options(sensitive_feature, include_small_groups, undefined_rates, n_bootstrap,
                   confidence_level, seed)
    counts = table.counts()
    small = np.array([g.small_group for g in table.groups], dtype=bool)
    included = np.ones_like(small) if include_small_groups else ~small
    zero = undefined_rates == "zero"
    point = _gaps(counts[None], included, zero=zero)
    rates = _rates(counts[None], zero=zero)
    nan = (float("nan"), float("nan"))
    ends = (_gap_intervals(counts, included, zero=zero, confidence_level=confidence_level)
            if n_bootstrap > 0 else dict.fromkeys(FAIRNESS_METRIC_NAMES, nan))
    estimates = tuple(
        _holding_its_value(_estimate(name, point, ends[name], rates, table, included, zero))
        for name in FAIRNESS_METRIC_NAMES
    )
    return FairnessReport(sensitive_feature, table, estimates, n_bootstrap, confidence_level,
                          seed, undefined_rates, include_small_groups)


def equalized_odds_difference(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    sensitive: npt.ArrayLike,
    *,
    undefined_rates: UndefinedRates = "exclude",
) -> float:
    """``max(tpr_gap, fpr_gap)`` over all groups, without an interval; NaN when undefined.

    Examples
    --------
    >>> equalized_odds_difference([1, 0, 1, 0], [1, 0, 0, 0], ["a", "a", "b", "b"])
    1.0
    """
    return _single_gap("equalized_odds_difference", y_true, y_pred, sensitive, undefined_rates)


def demographic_parity_difference(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    sensitive: npt.ArrayLike,
    *,
    undefined_rates: UndefinedRates = "exclude",
) -> float:
    """Selection rate gap over all groups, without an interval.

    Examples
    --------
    >>> demographic_parity_difference([1, 0, 1, 0], [1, 1, 0, 1], ["a", "a", "b", "b"])
    0.5
    """
    return _single_gap("demographic_parity_difference", y_true, y_pred, sensitive,
                       undefined_rates)


def _single_gap(name: str, y_true: npt.ArrayLike, y_pred: npt.ArrayLike,
                sensitive: npt.ArrayLike, undefined_rates: UndefinedRates) -> float:
    if undefined_rates not in ("exclude", "zero"):
        raise ValueError(f"undefined_rates must be 'exclude' or 'zero'; got {undefined_rates!r}")
    counts = disaggregate(y_true, y_pred, sensitive).counts()
    included = np.ones(len(counts), dtype=bool)
    return float(_gaps(counts[None], included, zero=undefined_rates == "zero")[name][0])


def _rates(counts: npt.NDArray[np.int64], *, zero: bool) -> dict[str, _FloatArray]:
    """Rates of shape (resamples, groups); NaN where undefined or the group is absent."""
    tn, fp, fn, tp = (counts[..., i].astype(np.float64) for i in range(4))
    n = tn + fp + fn + tp
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = {"tpr": tp / (tp + fn), "fpr": fp / (fp + tn),
                 "selection_rate": (tp + fp) / n, "ppv": tp / (tp + fp)}
    if zero:  # fairlearn: a present group with an undefined rate counts as 0
        rates = {k: np.where(np.isnan(v) & (n > 0), 0.0, v) for k, v in rates.items()}
    return rates


def _gaps(counts: npt.NDArray[np.int64], included: npt.NDArray[np.bool_], *,
          zero: bool) -> dict[str, _FloatArray]:
    """Every gap for every resample; NaN when fewer groups than needed have the rate."""
    rates = _rates(counts, zero=zero)
    needed = 1 if zero else 2
    gaps = {}
    for gap, rate in GAP_RATE.items():
        values = np.where(included, rates[rate], np.nan)
        defined = (~np.isnan(values)).sum(axis=1)
        with np.errstate(invalid="ignore"):
            spread = np.fmax.reduce(values, axis=1) - np.fmin.reduce(values, axis=1)
        gaps[gap] = np.where(defined >= needed, spread, np.nan)
    gaps["equalized_odds_difference"] = np.maximum(gaps["tpr_gap"], gaps["fpr_gap"])
    gaps["tpr_fpr_gap_sum"] = gaps["tpr_gap"] + gaps["fpr_gap"]
    return gaps


def family_counts(counts: npt.NDArray[np.int64], rate: str
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Per group, the successes and trials of a rate (``tn, fp, fn, tp`` columns)."""
    tn, fp, fn, tp = (counts[:, i] for i in range(4))
    return {"tpr": (tp, tp + fn), "fpr": (fp, fp + tn), "selection_rate": (tp + fp, tn + fp + fn + tp),
            "ppv": (tp, tp + fp)}[rate]


def gap_members(counts: npt.NDArray[np.int64], included: npt.NDArray[np.bool_], rate: str,
                *, zero: bool) -> npt.NDArray[np.bool_]:
    """The groups taking part in one rate's gap: included, with the rate defined (or, with
    ``zero``, present)."""
    trials = family_counts(counts, rate)[1]
    return included & ((trials > 0) | (zero & (counts.sum(axis=1) > 0)))


def _family_interval(counts: npt.NDArray[np.int64], included: npt.NDArray[np.bool_],
                     rates: tuple[str, ...], *, zero: bool, confidence_level: float
                     ) -> tuple[float, float]:
    """The interval of the largest gap of ``rates`` over the groups taking part in each (see
    :mod:`modelgate.fairness.gap_intervals`); NaN when a rate has too few groups."""
    successes, trials = [], []
    for rate in rates:
        members = gap_members(counts, included, rate, zero=zero)
        k = int(members.sum())
        if k < (1 if zero else 2):
            return float("nan"), float("nan")
        if k == 1:  # "zero": a gap over one group is 0, exactly; the other rates decide
            continue
        x, n = family_counts(counts, rate)
        successes.append(x[members])
        trials.append(n[members])
    if not successes:
        return 0.0, 0.0
    return gap_interval_of_families(successes, trials, confidence_level)


def _gap_intervals(counts: npt.NDArray[np.int64], included: npt.NDArray[np.bool_], *,
                   zero: bool, confidence_level: float) -> dict[str, tuple[float, float]]:
    """Every gap's interval; the equalized-odds difference over the TPR and FPR families
    jointly, their sum from each family's interval at the Bonferroni level."""
    ends = {gap: _family_interval(counts, included, (rate,), zero=zero,
                                  confidence_level=confidence_level)
            for gap, rate in GAP_RATE.items()}
    ends["equalized_odds_difference"] = _family_interval(
        counts, included, ("tpr", "fpr"), zero=zero, confidence_level=confidence_level)
    (tl, th), (fl, fh) = (_family_interval(counts, included, (rate,), zero=zero,
                                           confidence_level=(1.0 + confidence_level) / 2.0)
                          for rate in ("tpr", "fpr"))
    ends["tpr_fpr_gap_sum"] = (tl + fl, th + fh)
    return ends


def _estimate(
    name: str,
    point: Mapping[str, _FloatArray],
    ends: tuple[float, float],
    rates: Mapping[str, _FloatArray],
    table: DisaggregatedTable,
    included: npt.NDArray[np.bool_],
    zero: bool,
) -> FairnessEstimate:
    parts = _components(name)
    labels = tuple(g.group for g in table.groups)
    n = table.n
    excluded: dict[str, str] = {}
    reasons = []
    for gap in parts:
        rate = GAP_RATE[gap]
        for i, stats in enumerate(table.groups):
            if not included[i]:
                excluded[stats.group] = f"small group (n={stats.n} < {table.min_group_size})"
            elif np.isnan(rates[rate][0][i]) and not zero:
                excluded.setdefault(stats.group, f"{_RATES[rate][1]} (undefined {rate})")
        if np.isnan(point[gap][0]):
            reasons.append(f"fewer than two groups have a defined {_RATES[rate][0]}")
    single = one_group_reason(labels)  # not a rate short of groups: the column's one value
    if single:
        reasons = [single]
    value = float(point[name][0])
    if np.isnan(value):
        return FairnessEstimate(name, float("nan"), float("nan"), float("nan"), n, None, None,
                                tuple(excluded.items()), "; ".join(reasons) or "undefined")
    lower, upper = ends
    high, low, driving = _extremes(name, parts, point, rates, labels, included)
    return FairnessEstimate(name, value, lower, upper, n, high, low, tuple(excluded.items()),
                            driving_rate=driving)


def _holding_its_value(estimate: FairnessEstimate) -> FairnessEstimate:
    lower, upper = interval_holding(estimate.value, estimate.ci_lower, estimate.ci_upper)
    return dataclasses.replace(estimate, ci_lower=lower, ci_upper=upper)


def _components(name: str) -> tuple[str, ...]:
    if name in ("equalized_odds_difference", "tpr_fpr_gap_sum"):
        return ("tpr_gap", "fpr_gap")
    return (name,)


def _extremes(name: str, parts: tuple[str, ...], point: Mapping[str, _FloatArray],
              rates: Mapping[str, _FloatArray], labels: tuple[str, ...],
              included: npt.NDArray[np.bool_]) -> tuple[str | None, str | None, str | None]:
    """The highest and lowest group of the rate behind the gap, and that rate's name."""
    if name == "tpr_fpr_gap_sum":
        return None, None, None
    gap = max(parts, key=lambda g: float(point[g][0]))  # first (tpr) on a tie
    rate = GAP_RATE[gap]
    values = np.where(included, rates[rate][0], np.nan)
    return *highest_and_lowest(labels, values), rate


def _check_options(sensitive_feature: object, include_small_groups: object,
                   undefined_rates: object, n_bootstrap: object, confidence_level: object,
                   seed: object) -> None:
    if not isinstance(sensitive_feature, str) or not sensitive_feature:
        raise ValueError(f"sensitive_feature must be a non-empty string; got "
                         f"{sensitive_feature!r}")
    if not isinstance(include_small_groups, bool):
        raise ValueError(f"include_small_groups must be True or False; got "
                         f"{include_small_groups!r}")
    if undefined_rates not in ("exclude", "zero"):
        raise ValueError(f"undefined_rates must be 'exclude' or 'zero'; got {undefined_rates!r}")
    check_int(n_bootstrap, "n_bootstrap", minimum=0)
    check_int(seed, "seed", minimum=0)
    check_confidence_level(confidence_level)
