"""The records of a binary evaluation: metric estimates with their intervals, paired deltas,
calibration bins and the reports that hold them (frozen dataclasses, no computation).

:mod:`~.metrics` computes them; they live apart so that the pipelines, the gate and the
reports can read a result without the bootstrap machinery.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from modelgate.records import finite_or_none

__all__ = [
    "METRIC_NAMES",
    "CalibrationBin",
    "CalibrationStrategy",
    "CalibrationTable",
    "ComparisonReport",
    "MetricDelta",
    "MetricEstimate",
    "MetricName",
    "PairedComparison",
    "PerformanceReport",
]

MetricName = Literal["roc_auc", "accuracy", "precision", "recall", "f1", "log_loss", "brier"]
METRIC_NAMES: tuple[MetricName, ...] = (
    "roc_auc",
    "accuracy",
    "precision",
    "recall",
    "f1",
    "log_loss",
    "brier",
)
CalibrationStrategy = Literal["uniform", "quantile"]


@dataclass(frozen=True, slots=True)
class MetricEstimate:
    """One metric on one data set, with its bootstrap interval.

    Attributes
    ----------
    name : str
        Metric name, one of :data:`METRIC_NAMES`.
    value : float
        Point estimate on all rows; NaN when undefined.
    ci_lower, ci_upper : float
        Bootstrap interval (per metric by default, see
        :mod:`~modelgate.evaluation.metric_intervals`; percentile for the metrics not
        listed there); NaN when undefined or ``n_bootstrap == 0``.
    n : int
        Number of rows.
    undefined_reason : str or None
        Why ``value`` is NaN (for example ``"label has one class only"``), else None.
    """

    name: str
    value: float
    ci_lower: float
    ci_upper: float
    n: int
    undefined_reason: str | None = None

    def to_record(self) -> dict[str, Any]:
        """The estimate as an ``evaluation_metric`` row (the caller adds the run and model role).

        Returns
        -------
        dict
            ``metric_name``, ``value``, ``ci_lower``, ``ci_upper`` (None where undefined),
            ``n`` and ``undefined_reason``.

        Examples
        --------
        >>> record = MetricEstimate("roc_auc", float("nan"), float("nan"), float("nan"), 12,
        ...                         "label has one class only").to_record()
        >>> record["metric_name"], record["value"], record["n"], record["undefined_reason"]
        ('roc_auc', None, 12, 'label has one class only')
        """
        return {"metric_name": self.name, "value": finite_or_none(self.value),
                "ci_lower": finite_or_none(self.ci_lower), "ci_upper": finite_or_none(self.ci_upper),
                "n": self.n, "undefined_reason": self.undefined_reason}


@dataclass(frozen=True, slots=True)
class MetricDelta:
    """Paired difference ``candidate - champion`` of one metric on the same rows.

    The interval comes from the same resampled rows for both models.

    Attributes
    ----------
    name : str
        Metric name, one of :data:`METRIC_NAMES`.
    candidate, champion : float
        Point estimates of the two models (NaN when undefined).
    delta : float
        ``candidate - champion``; NaN when either is undefined.
    ci_lower, ci_upper : float
        Percentile bootstrap interval of the paired difference.
    n : int
        Number of rows.
    undefined_reason : str or None
        Why ``delta`` is NaN, else None.
    """

    name: str
    candidate: float
    champion: float
    delta: float
    ci_lower: float
    ci_upper: float
    n: int
    undefined_reason: str | None = None

    def to_record(self) -> dict[str, Any]:
        """The delta as an ``evaluation_metric`` row of model role ``delta``: its ``value`` is
        ``candidate - champion``; the two point estimates come along.

        Returns
        -------
        dict
            ``metric_name``, ``value`` (the delta), ``ci_lower``, ``ci_upper``, ``n``,
            ``undefined_reason``, ``candidate`` and ``champion``; numbers None where undefined.

        Examples
        --------
        >>> record = MetricDelta("accuracy", 0.9, 0.85, 0.05, 0.02, 0.08, 400).to_record()
        >>> record["metric_name"], round(record["value"], 2), record["champion"]
        ('accuracy', 0.05, 0.85)
        """
        return {"metric_name": self.name, "value": finite_or_none(self.delta),
                "ci_lower": finite_or_none(self.ci_lower), "ci_upper": finite_or_none(self.ci_upper),
                "n": self.n, "undefined_reason": self.undefined_reason,
                "candidate": finite_or_none(self.candidate), "champion": finite_or_none(self.champion)}


@dataclass(frozen=True, slots=True)
class CalibrationBin:
    """One reliability bin: rows with ``lower < score <= upper`` (the first bin includes 0).

    ``mean_predicted`` and ``observed_rate`` are NaN for an empty bin.
    """

    lower: float
    upper: float
    n: int
    mean_predicted: float
    observed_rate: float

    def to_record(self) -> dict[str, Any]:
        """The bin as a ``calibration_bin`` row (the caller adds the run and the bin index).

        Returns
        -------
        dict
            ``bin_lower``, ``bin_upper``, ``n``, ``mean_predicted`` and ``observed_rate``
            (None for an empty bin).

        Examples
        --------
        >>> CalibrationBin(0.0, 0.1, 0, float("nan"), float("nan")).to_record()["observed_rate"] is None
        True
        """
        return {"bin_lower": self.lower, "bin_upper": self.upper, "n": self.n,
                "mean_predicted": finite_or_none(self.mean_predicted),
                "observed_rate": finite_or_none(self.observed_rate)}


@dataclass(frozen=True, slots=True)
class CalibrationTable:
    """Reliability table; empty bins are kept (scikit-learn's calibration_curve drops them)."""

    bins: tuple[CalibrationBin, ...]
    strategy: CalibrationStrategy
    n_bins: int


@dataclass(frozen=True, slots=True)
class PerformanceReport:
    """Result of :func:`evaluate`: every metric, the calibration table and the settings."""

    metrics: tuple[MetricEstimate, ...]
    calibration: CalibrationTable
    n: int
    threshold: float
    n_bootstrap: int
    confidence_level: float
    seed: int

    def by_name(self) -> Mapping[str, MetricEstimate]:
        """Return a read-only mapping from metric name to estimate (the gate's input)."""
        return MappingProxyType({m.name: m for m in self.metrics})


@dataclass(frozen=True, slots=True)
class ComparisonReport:
    """Result of :func:`compare`: one paired delta per metric and the settings."""

    deltas: tuple[MetricDelta, ...]
    n: int
    threshold: float
    n_bootstrap: int
    confidence_level: float
    seed: int

    def by_name(self) -> Mapping[str, MetricDelta]:
        """Return a read-only mapping from metric name to paired delta."""
        return MappingProxyType({d.name: d for d in self.deltas})


@dataclass(frozen=True, slots=True)
class PairedComparison:
    """Paired deltas of a multiclass or regression model against its champion.

    The binary :class:`ComparisonReport` without the decision threshold, which those
    tasks do not have; the deltas come from the same resampled rows for both models.
    """

    deltas: tuple[MetricDelta, ...]
    n: int
    n_bootstrap: int
    confidence_level: float
    seed: int

    def by_name(self) -> Mapping[str, MetricDelta]:
        """Return a read-only mapping from metric name to paired delta."""
        return MappingProxyType({d.name: d for d in self.deltas})
