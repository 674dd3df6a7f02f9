"""Plain input views for the HTML reports.

The report renderers in :mod:`modelgate.reports.html` never see the numeric cores' result
objects. The pipeline copies what a page shows into these frozen, slotted dataclasses made
of plain fields (``str``, ``int``, ``float``, ``bytes``, ``None`` and tuples of those), so the
pages do not change when a core's result type grows a field, and a report can be rebuilt
from stored numbers alone.

Every view validates itself on construction: a malformed view fails where it is built
(in the pipeline), with a message naming the field, what was allowed and what came, rather
than producing a misleading page. Strings may contain anything, markup included; the
renderers escape every one of them.

Conventions
-----------
* ``float('nan')`` is allowed where a rate can be undefined (a group with no positives has
  no TPR); pages show it as ``n/a``. ``None`` means "not applicable" (no champion); pages
  show it as an em dash.
* Timestamps are strings supplied by the caller (no clock here); ISO 8601 UTC is expected.
* Verdict words are lower case and drawn from the ``Literal`` types below.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal, get_args
from urllib.parse import urlsplit

from .segment_views import SegmentSection, WeakSliceRow
from .summary_views import (
    EstimateRow,
    GroupShapSection,
    LabelledPerformance,
    QualityRow,
    ShapClassSection,
    ShapSwarmRow,
)

CheckVerdict = Literal["pass", "warn", "breach", "fail", "inconclusive", "skipped"]
"""Outcome of one gate check or one fairness gap (``fail``: could not be computed)."""
Severity = Literal["block", "warn", "info"]
"""What a failing check does to the gate: block promotion, warn, or inform only."""
DriftVerdict = Literal["ok", "warn", "drift"]
"""Outcome of a drift check, per feature or for a whole run."""
#: "model output": the drift of the model's own score, shown beside the features' (#23)
FeatureKind = Literal["numeric", "categorical", "model output"]
DriftStatistic = Literal["js", "wasserstein_normalised"]
"""The statistic a feature's drift threshold is compared with."""
RunKind = Literal["evaluation", "drift"]
IndexVerdict = Literal["passed", "warn", "blocked", "ok", "drift", "failed", "abandoned"]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_HREF_SCHEMES = ("", "http", "https")


def _check_choice(name: str, value: object, allowed: object) -> None:
    options = get_args(allowed)
    if value not in options:
        raise ValueError(f"{name} must be one of {options!r}, got {value!r}")


def _check_finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _check_optional_finite(name: str, value: float | None) -> None:
    if value is not None:
        _check_finite(name, value)


def _check_rate(name: str, value: float) -> None:
    """A proportion in [0, 1], or NaN when undefined."""
    if not (math.isnan(value) or 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be in [0, 1] or nan, got {value!r}")


def _check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")


def _check_sha256(name: str, value: str) -> None:
    if not _SHA256.fullmatch(value):
        raise ValueError(f"{name} must be 64 hexadecimal characters (a sha256), got {value!r}")


def _check_interval(name: str, lower: float | None, upper: float | None) -> None:
    if lower is not None and upper is not None and lower > upper:
        raise ValueError(f"{name}: lower bound {lower!r} is above upper bound {upper!r}")


@dataclass(frozen=True, slots=True)
class MetricRow:
    """One evaluation metric for the candidate, with its interval and the champion delta.

    ``delta`` is candidate minus champion; every champion field is ``None`` when there is
    no champion.

    Examples
    --------
    >>> MetricRow("roc_auc", 0.91, 0.89, 0.93, 0.9, 0.01, -0.005, 0.025, 5000).delta
    0.01
    """

    name: str
    candidate: float
    ci_lower: float
    ci_upper: float
    champion: float | None
    delta: float | None
    delta_ci_lower: float | None
    delta_ci_upper: float | None
    n: int

    def __post_init__(self) -> None:
        for field in ("candidate", "ci_lower", "ci_upper"):
            _check_finite(f"MetricRow.{field}", getattr(self, field))
        for field in ("champion", "delta", "delta_ci_lower", "delta_ci_upper"):
            _check_optional_finite(f"MetricRow.{field}", getattr(self, field))
        _check_interval("MetricRow.ci", self.ci_lower, self.ci_upper)
        _check_interval("MetricRow.delta_ci", self.delta_ci_lower, self.delta_ci_upper)
        _check_count("MetricRow.n", self.n)


@dataclass(frozen=True, slots=True)
class CalibrationRow:
    """One bin of a reliability diagram (predicted probability in ``[bin_lower, bin_upper)``).

    Examples
    --------
    >>> CalibrationRow(0.0, 0.1, 120, 0.05, 0.04).n
    120
    """

    bin_lower: float
    bin_upper: float
    n: int
    mean_predicted: float
    observed_rate: float

    def __post_init__(self) -> None:
        for field in ("bin_lower", "bin_upper", "mean_predicted", "observed_rate"):
            _check_rate(f"CalibrationRow.{field}", getattr(self, field))
        _check_interval("CalibrationRow.bin", self.bin_lower, self.bin_upper)
        _check_count("CalibrationRow.n", self.n)


@dataclass(frozen=True, slots=True)
class GroupRow:
    """Disaggregated rates for one group of one sensitive feature (NaN when undefined), with the
    counts behind them (None when not known): ``positives`` for TPR and FNR, ``negatives`` for
    FPR, ``predicted_positives`` for PPV; the group's accuracy and ROC AUC (NaN when undefined),
    and the AUC's error bound (0 when exact); the Wilson score intervals of TPR and FPR (None
    when the rate is undefined or the interval not known).

    Examples
    --------
    >>> GroupRow("F", 800, 0.3, 0.28, 0.7, 0.1, 0.75, 0.3, small_group=False).group
    'F'
    """

    group: str
    n: int
    base_rate: float
    selection_rate: float
    tpr: float
    fpr: float
    ppv: float
    fnr: float
    small_group: bool
    positives: int | None = None
    negatives: int | None = None
    predicted_positives: int | None = None
    accuracy: float = math.nan
    roc_auc: float = math.nan
    roc_auc_error_bound: float = math.nan
    tpr_ci_lower: float | None = None
    tpr_ci_upper: float | None = None
    fpr_ci_lower: float | None = None
    fpr_ci_upper: float | None = None

    def __post_init__(self) -> None:
        _check_count("GroupRow.n", self.n)
        _check_interval("GroupRow.tpr_ci", self.tpr_ci_lower, self.tpr_ci_upper)
        _check_interval("GroupRow.fpr_ci", self.fpr_ci_lower, self.fpr_ci_upper)
        for field in ("positives", "negatives", "predicted_positives"):
            if getattr(self, field) is not None:
                _check_count(f"GroupRow.{field}", getattr(self, field))
        for field in ("base_rate", "selection_rate", "tpr", "fpr", "ppv", "fnr", "accuracy",
                      "roc_auc"):
            _check_rate(f"GroupRow.{field}", getattr(self, field))


@dataclass(frozen=True, slots=True)
class ErrorGroupRow:
    """A regression model's errors in one group of one sensitive feature (label units).

    Examples
    --------
    >>> ErrorGroupRow("F", 800, 1.2, 1.6, 30.5, -0.1, small_group=False).rmse
    1.6
    """

    group: str
    n: int
    mae: float
    rmse: float
    mean_prediction: float
    mean_error: float
    small_group: bool

    def __post_init__(self) -> None:
        _check_count("ErrorGroupRow.n", self.n)
        for field in ("mae", "rmse"):
            value = getattr(self, field)
            if not (math.isnan(value) or value >= 0.0):
                raise ValueError(f"ErrorGroupRow.{field} must be >= 0 or nan, got {value!r}")


@dataclass(frozen=True, slots=True)
class GapRow:
    """One fairness gap (e.g. the TPR difference) with its interval and threshold.

    ``value`` may be NaN when the gap is undefined; ``threshold`` is ``None`` when the gap is
    reported but not gated; ``driven_by`` says which rate drives it, between which groups, and
    the rows behind each (empty when not known).

    Examples
    --------
    >>> GapRow("tpr_difference", 0.08, 0.03, 0.13, 0.1, "inconclusive").verdict
    'inconclusive'
    """

    metric: str
    value: float
    ci_lower: float
    ci_upper: float
    threshold: float | None
    verdict: CheckVerdict
    driven_by: str = ""

    def __post_init__(self) -> None:
        _check_optional_finite("GapRow.threshold", self.threshold)
        _check_choice("GapRow.verdict", self.verdict, CheckVerdict)
        if not (math.isnan(self.ci_lower) or math.isnan(self.ci_upper)):
            _check_interval("GapRow.ci", self.ci_lower, self.ci_upper)


@dataclass(frozen=True, slots=True)
class FairnessSection:
    """Per-group table and gaps for one sensitive feature.

    Examples
    --------
    >>> FairnessSection("sex", groups=(), gaps=()).sensitive_feature
    'sex'
    """

    sensitive_feature: str
    groups: tuple[GroupRow, ...]
    gaps: tuple[GapRow, ...]
    #: Regression models: the group errors, shown instead of the rates.
    error_groups: tuple[ErrorGroupRow, ...] = ()


@dataclass(frozen=True, slots=True)
class WaterfallImage:
    """A SHAP waterfall plot for one explained row, as PNG bytes.

    ``row_label`` identifies the row without its values (e.g. ``"row 17"``); ``reason`` says
    why it was chosen (e.g. ``"largest false positive score"``).

    Examples
    --------
    >>> WaterfallImage("row 3", "highest score", PNG_MAGIC + b"...").row_label
    'row 3'
    """

    row_label: str
    reason: str
    png: bytes

    def __post_init__(self) -> None:
        if not self.png.startswith(PNG_MAGIC):
            raise ValueError(
                f"WaterfallImage.png must start with the PNG signature {PNG_MAGIC!r}, "
                f"got {self.png[:8]!r}"
            )


@dataclass(frozen=True, slots=True)
class GateCheckRow:
    """One check of the promotion gate, as decided.

    ``threshold`` is display text (e.g. ``">= 0.85"``); numeric fields are ``None`` when the
    check has no such number.

    Examples
    --------
    >>> row = GateCheckRow("metric", "roc_auc", None, ">= 0.85", 0.91, 0.89, 0.93, 5000,
    ...                    "pass", "block", "lower CI bound 0.89 >= 0.85")
    >>> row.verdict
    'pass'
    """

    kind: str
    metric: str
    sensitive_feature: str | None
    threshold: str
    observed: float | None
    ci_lower: float | None
    ci_upper: float | None
    n: int | None
    verdict: CheckVerdict
    severity: Severity
    reason: str

    def __post_init__(self) -> None:
        _check_choice("GateCheckRow.verdict", self.verdict, CheckVerdict)
        _check_choice("GateCheckRow.severity", self.severity, Severity)
        if self.n is not None:
            _check_count("GateCheckRow.n", self.n)


@dataclass(frozen=True, slots=True)
class GateView:
    """The gate decision: ``passed`` is the decision itself, ``checks`` explain it.

    Examples
    --------
    >>> GateView(False, "blocked by 1 check", checks=()).passed
    False
    """

    passed: bool
    summary: str
    checks: tuple[GateCheckRow, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationReportView:
    """Everything the evaluation report shows (keyword-only).

    ``shap_importance`` holds ``(feature, mean |SHAP|)`` pairs in any order (the page sorts
    them). ``drift_context`` is the latest drift status of the production model, if any;
    ``budget_notes`` says how the SHAP budget was spent (e.g. ``"2000 rows, 480 s"``).
    ``policy`` says where the run's policy came from; ``policy_looser``, when set, says which
    blocking checks it loosens against the model's own policy (shown as a warning banner).
    ``champion_version`` is the production version compared against (None: no champion).
    ``shap_summary`` (beeswarm rows, most important first) and ``shap_groups`` (one section
    per sensitive feature) describe the rows explained for the global importance.
    ``shap_output_space`` names the space the SHAP values explain (``probability``, ``logit``,
    ``margin``, ``value``; ``""`` when not known), shown on every SHAP chart's axis.

    Examples
    --------
    >>> view = EvaluationReportView(
    ...     title="Evaluation", model_name="churn", model_version="7",
    ...     model_sha256="ab" * 32, data_fingerprint="cd" * 32, dataset_name="churn-2026-11",
    ...     run_id="run-1", created_at="2026-11-29T21:00:00Z", provider="CPUExecutionProvider",
    ...     rows_scored=1000, metrics=(), calibration=(), fairness=(), shap_importance=(),
    ...     waterfalls=(), gate=GateView(True, "all checks passed", ()))
    >>> view.drift_context is None
    True
    """

    title: str
    model_name: str
    model_version: str
    model_sha256: str
    data_fingerprint: str
    dataset_name: str
    run_id: str
    created_at: str
    provider: str
    rows_scored: int
    metrics: tuple[MetricRow, ...]
    calibration: tuple[CalibrationRow, ...]
    fairness: tuple[FairnessSection, ...]
    shap_importance: tuple[tuple[str, float], ...]
    waterfalls: tuple[WaterfallImage, ...]
    gate: GateView
    drift_context: str | None = None
    budget_notes: str = ""
    policy: str = ""
    policy_looser: str | None = None
    champion_version: str | None = None
    shap_summary: tuple[ShapSwarmRow, ...] = ()
    shap_groups: tuple[GroupShapSection, ...] = ()
    shap_classes: tuple[ShapClassSection, ...] = ()  # multiclass: one summary per class
    shap_output_space: str = ""
    segments: tuple[SegmentSection, ...] = ()  # one per metric shown (reports.segment_views)
    weakest_slices: tuple[WeakSliceRow, ...] = ()
    weakest_slices_note: str = ""  # how large the search was; "" when none was run

    def __post_init__(self) -> None:
        _check_sha256("EvaluationReportView.model_sha256", self.model_sha256)
        if self.shap_output_space not in ("", "probability", "logit", "margin", "value"):
            raise ValueError("EvaluationReportView.shap_output_space must be 'probability', 'logit', "
                             f"'margin', 'value' or '', got {self.shap_output_space!r}")
        _check_sha256("EvaluationReportView.data_fingerprint", self.data_fingerprint)
        _check_count("EvaluationReportView.rows_scored", self.rows_scored)
        for feature, value in self.shap_importance:
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(
                    f"EvaluationReportView.shap_importance[{feature!r}] must be a finite "
                    f"number >= 0, got {value!r}"
                )


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
        _check_choice("FeatureDriftRow.kind", self.kind, FeatureKind)
        _check_choice("FeatureDriftRow.verdict", self.verdict, DriftVerdict)
        _check_choice("FeatureDriftRow.statistic", self.statistic, DriftStatistic)
        _check_finite("FeatureDriftRow.js", self.js)
        _check_rate("FeatureDriftRow.js", self.js)
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
        _check_count("FeatureDriftRow.n_current", self.n_current)
        _check_count("FeatureDriftRow.n_missing", self.n_missing)

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
                _check_rate(f"HistogramView.{field}", value)
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
        _check_count("ChangePointRow.position", self.position)
        _check_rate("ChangePointRow.rate_before", self.rate_before)
        _check_rate("ChangePointRow.rate_after", self.rate_after)


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
        _check_choice("QuarantineRow.source", self.source, Literal["live", "labels"])


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
        _check_choice("JointDriftRow.verdict", self.verdict, DriftVerdict)
        for name in ("value", "threshold", "baseline"):
            _check_optional_finite(f"JointDriftRow.{name}", getattr(self, name))


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
        _check_rate("AttributionShareRow.reference", self.reference)
        _check_rate("AttributionShareRow.current", self.current)


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

    def __post_init__(self) -> None:
        _check_count("DriftReportView.rows_sampled", self.rows_sampled)
        _check_choice("DriftReportView.verdict", self.verdict, DriftVerdict)
        previous = -1
        for position, rate in self.error_rate:
            if position <= previous:
                raise ValueError(
                    "DriftReportView.error_rate positions must increase strictly, "
                    f"got {position!r} after {previous!r}"
                )
            _check_rate("DriftReportView.error_rate", rate)
            previous = position


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One run listed on a model's index page.

    ``href`` is a relative link or an ``http(s)`` URL (other schemes, such as
    ``javascript:``, are refused), or empty when the run has no report (a failed run).
    ``stage`` is the version's stage now (``candidate``, ``production``, ``archived``...);
    ``note`` says why a run failed or was blocked (one line).

    Examples
    --------
    >>> IndexRow("drift", "drift-1", "7", "2026-11-29T00:00:00Z", "ok", "drift-1.html").kind
    'drift'
    """

    kind: RunKind
    run_id: str
    version: str
    when: str
    verdict: IndexVerdict
    href: str
    stage: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        _check_choice("IndexRow.kind", self.kind, RunKind)
        _check_choice("IndexRow.verdict", self.verdict, IndexVerdict)
        if any(ch.isspace() or ord(ch) < 32 for ch in self.href):
            raise ValueError(f"IndexRow.href must not contain whitespace, got {self.href!r}")
        scheme = urlsplit(self.href).scheme.lower()
        if scheme not in _HREF_SCHEMES:
            raise ValueError(
                f"IndexRow.href scheme must be one of {_HREF_SCHEMES!r}, got {scheme!r}"
            )


@dataclass(frozen=True, slots=True)
class ModelIndexView:
    """The list of a model's evaluation and drift runs, in the order given.

    Examples
    --------
    >>> ModelIndexView("churn", runs=()).model_name
    'churn'
    """

    model_name: str
    runs: tuple[IndexRow, ...]
