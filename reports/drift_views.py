"""Plain input views of the drift report (see :mod:`.views` for the conventions every view
follows: plain fields, validated on construction, strings escaped by the renderers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from .drift_segment_views import SegmentDriftRow, SegmentEstimateRow
from .summary_views import EstimateRow, LabelledPerformance, QualityRow
from .view_checks import check_choice, check_count, check_finite, check_optional_finite, check_rate

DriftVerdict = Literal["ok", "warn", "drift"]
"""Outcome of a drift check, per feature or for a whole run."""
#: "model output": the drift of the model's own score, shown beside the features' (#23)
FeatureKind = Literal["numeric", "categorical", "model output"]
DriftStatistic = Literal["js", "wasserstein_normalised"]
"""The statistic a feature's drift threshold is compared with."""


@dataclass(frozen=True, slots=True)
class FeatureDriftRow:
    """Drift of one feature between the reference and the current interval.

    ``threshold`` applies to ``statistic``: base-2 Jensen-Shannon distance (``"js"``, in 0..1)
    or the normalised Wasserstein distance (numeric features only). ``wasserstein*`` are
    ``None`` for categorical features. ``unseen_categories`` lists categories of the current
    data missing from the reference.

    Examples
    --------
    >>> FeatureDriftRow("age", "numeric", 1.2, 0.08, 0.11, 0.1, "drift", 990, 10, ()).verdict
    'drift'
    """

    feature: str
    kind: FeatureKind
    wasserstein: float | None
    wasserstein_normalised: float | None
    js: float
    threshold: float
    verdict: DriftVerdict
    n_current: int
    n_missing: int
    unseen_categories: tuple[str, ...]
    statistic: DriftStatistic = "js"

    def __post_init__(self) -> None:
        check_choice("FeatureDriftRow.kind", self.kind, FeatureKind)
        check_choice("FeatureDriftRow.verdict", self.verdict, DriftVerdict)
        check_choice("FeatureDriftRow.statistic", self.statistic, DriftStatistic)
        check_finite("FeatureDriftRow.js", self.js)
        check_rate("FeatureDriftRow.js", self.js)
        for field in ("threshold", "wasserstein", "wasserstein_normalised"):
            value = getattr(self, field)
            if value is not None and not (math.isfinite(value) and value >= 0.0):
                raise ValueError(
                    f"FeatureDriftRow.{field} must be a finite number >= 0, got {value!r} "
                    f"for feature {self.feature!r}"
                )
        if self.statistic == "wasserstein_normalised" and self.wasserstein_normalised is None:
            raise ValueError(
                "FeatureDriftRow.statistic is 'wasserstein_normalised' but "
                f"wasserstein_normalised is None for feature {self.feature!r}"
            )
        check_count("FeatureDriftRow.n_current", self.n_current)
        check_count("FeatureDriftRow.n_missing", self.n_missing)

    @property
    def score(self) -> float:
        """The value compared with ``threshold``.

        Examples
        --------
        >>> FeatureDriftRow("c", "categorical", None, None, 0.2, 0.1, "drift", 5, 0, ()).score
        0.2
        """
        if self.statistic == "wasserstein_normalised" and self.wasserstein_normalised is not None:
            return self.wasserstein_normalised
        return self.js


@dataclass(frozen=True, slots=True)
class HistogramView:
    """Reference and current bin probabilities of one feature, over the same bins.

    Examples
    --------
    >>> HistogramView("age", ("<30", "30-50", ">50"), (0.3, 0.5, 0.2), (0.2, 0.5, 0.3)).feature
    'age'
    """

    feature: str
    bin_labels: tuple[str, ...]
    reference: tuple[float, ...]
    current: tuple[float, ...]

    def __post_init__(self) -> None:
        n = len(self.bin_labels)
        for field in ("reference", "current"):
            values = getattr(self, field)
            if len(values) != n:
                raise ValueError(
                    f"HistogramView.{field} must have one value per bin label ({n}), "
                    f"got {len(values)} for feature {self.feature!r}"
                )
            for value in values:
                check_rate(f"HistogramView.{field}", value)
                if math.isnan(value):
                    raise ValueError(f"HistogramView.{field} must not contain nan")


@dataclass(frozen=True, slots=True)
class ChangePointRow:
    """A change point detected on the error-rate stream (``position`` indexes the stream).

    Examples
    --------
    >>> ChangePointRow(1200, "2026-11-29T10:00:00Z", 0.08, 0.15).rate_after
    0.15
    """

    position: int
    event_time: str
    rate_before: float
    rate_after: float

    def __post_init__(self) -> None:
        check_count("ChangePointRow.position", self.position)
        check_rate("ChangePointRow.rate_before", self.rate_before)
        check_rate("ChangePointRow.rate_after", self.rate_after)


@dataclass(frozen=True, slots=True)
class QuarantineRow:
    """A live or labels partition the run could not use and left out, with the reason.

    Examples
    --------
    >>> QuarantineRow("labels", "dt=2026-11-28", "3 rows share their 'row_id' value").source
    'labels'
    """

    source: Literal["live", "labels"]
    partition: str
    reason: str

    def __post_init__(self) -> None:
        check_choice("QuarantineRow.source", self.source, Literal["live", "labels"])


@dataclass(frozen=True, slots=True)
class JointDriftRow:
    """A drift statistic over several features at once (multivariate or attribution drift).

    Examples
    --------
    >>> JointDriftRow("multivariate", "sliced Wasserstein-2", 0.3, 0.05, 0.02, "drift", "3 features").verdict
    'drift'
    """

    check: str
    statistic: str
    value: float | None
    threshold: float | None
    baseline: float | None
    verdict: DriftVerdict
    note: str

    def __post_init__(self) -> None:
        check_choice("JointDriftRow.verdict", self.verdict, DriftVerdict)
        for name in ("value", "threshold", "baseline"):
            check_optional_finite(f"JointDriftRow.{name}", getattr(self, name))


@dataclass(frozen=True, slots=True)
class AttributionShareRow:
    """Share of one feature in the mean |SHAP| of the reference and of the live rows.

    Examples
    --------
    >>> AttributionShareRow("age", 0.5, 0.25).current
    0.25
    """

    feature: str
    reference: float
    current: float

    def __post_init__(self) -> None:
        check_rate("AttributionShareRow.reference", self.reference)
        check_rate("AttributionShareRow.current", self.current)


@dataclass(frozen=True, slots=True, kw_only=True)
class DriftReportView:
    """Everything the drift report shows (keyword-only).

    ``histograms`` holds the top drifted features only. ``error_rate`` holds
    ``(position, error rate)`` points in increasing position. ``labelled`` is the model's
    performance on the rows whose labels arrived (None: none did).

    Examples
    --------
    >>> view = DriftReportView(
    ...     model_name="churn", model_version="7", interval_start="2026-11-28T00:00:00Z",
    ...     interval_end="2026-11-29T00:00:00Z", run_id="drift-1", rows_sampled=5000,
    ...     features=(), histograms=(), error_rate=(), change_points=(),
    ...     summary="no drift", verdict="ok")
    >>> view.verdict
    'ok'
    """

    model_name: str
    model_version: str
    interval_start: str
    interval_end: str
    run_id: str
    rows_sampled: int
    features: tuple[FeatureDriftRow, ...]
    histograms: tuple[HistogramView, ...]
    error_rate: tuple[tuple[int, float], ...]
    change_points: tuple[ChangePointRow, ...]
    summary: str
    verdict: DriftVerdict
    joint: tuple[JointDriftRow, ...] = ()
    attribution_shares: tuple[AttributionShareRow, ...] = ()
    labelled: LabelledPerformance | None = None
    quarantined: tuple[QuarantineRow, ...] = ()  # partitions left out (the run is degraded)
    quality: tuple[QualityRow, ...] = ()  # data quality against the reference schema (shown first)
    estimates: tuple[EstimateRow, ...] = ()  # performance estimated before labels
    segment_drift: tuple[SegmentDriftRow, ...] = ()  # flagged first
    segment_estimates: tuple[SegmentEstimateRow, ...] = ()  # weakest first
    segment_family: str = ""  # how the segments' tests were adjusted, one sentence

    def __post_init__(self) -> None:
        check_count("DriftReportView.rows_sampled", self.rows_sampled)
        check_choice("DriftReportView.verdict", self.verdict, DriftVerdict)
        previous = -1
        for position, rate in self.error_rate:
            if position <= previous:
                raise ValueError(
                    "DriftReportView.error_rate positions must increase strictly, "
                    f"got {position!r} after {previous!r}"
                )
            check_rate("DriftReportView.error_rate", rate)
            previous = position

