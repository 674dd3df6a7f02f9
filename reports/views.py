"""Plain input views for the HTML reports: the evaluation report's here; the drift report's in
:mod:`.drift_views`, the model index's in :mod:`.index_views`, the summary and segment sections'
in :mod:`.summary_views` and :mod:`.segment_views`; the checks they share in :mod:`.view_checks`.

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
from dataclasses import dataclass
from typing import Literal

from .segment_views import SegmentSection, WeakSliceRow
from .summary_views import GroupShapSection, ShapClassSection, ShapSwarmRow
from .view_checks import (
    check_choice,
    check_count,
    check_finite,
    check_interval,
    check_optional_finite,
    check_rate,
    check_sha256,
)

CheckVerdict = Literal["pass", "warn", "breach", "fail", "inconclusive", "skipped"]
"""Outcome of one gate check or one fairness gap (``fail``: could not be computed)."""
Severity = Literal["block", "warn", "info"]
"""What a failing check does to the gate: block promotion, warn, or inform only."""

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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
    ci_lower: float | None  # None: no interval (a regression metric on one row)
    ci_upper: float | None
    champion: float | None
    delta: float | None
    delta_ci_lower: float | None
    delta_ci_upper: float | None
    n: int

    def __post_init__(self) -> None:
        check_finite("MetricRow.candidate", self.candidate)
        for field in ("ci_lower", "ci_upper", "champion", "delta", "delta_ci_lower",
                      "delta_ci_upper"):
            check_optional_finite(f"MetricRow.{field}", getattr(self, field))
        check_interval("MetricRow.ci", self.ci_lower, self.ci_upper)
        check_interval("MetricRow.delta_ci", self.delta_ci_lower, self.delta_ci_upper)
        check_count("MetricRow.n", self.n)


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
            check_rate(f"CalibrationRow.{field}", getattr(self, field))
        check_interval("CalibrationRow.bin", self.bin_lower, self.bin_upper)
        check_count("CalibrationRow.n", self.n)


@dataclass(frozen=True, slots=True)
class GroupRow:
    """Disaggregated rates for one group of one sensitive feature (NaN when undefined), with the
    counts behind them (None when not known): ``positives`` for TPR and FNR, ``negatives`` for
    FPR, ``predicted_positives`` for PPV; the group's accuracy and ROC AUC (NaN when undefined),
    and the AUC's error bound (0 when exact); the modified Wilson score intervals of TPR and FPR (None
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
        check_count("GroupRow.n", self.n)
        check_interval("GroupRow.tpr_ci", self.tpr_ci_lower, self.tpr_ci_upper)
        check_interval("GroupRow.fpr_ci", self.fpr_ci_lower, self.fpr_ci_upper)
        for field in ("positives", "negatives", "predicted_positives"):
            if getattr(self, field) is not None:
                check_count(f"GroupRow.{field}", getattr(self, field))
        for field in ("base_rate", "selection_rate", "tpr", "fpr", "ppv", "fnr", "accuracy",
                      "roc_auc"):
            check_rate(f"GroupRow.{field}", getattr(self, field))


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
        check_count("ErrorGroupRow.n", self.n)
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
        check_optional_finite("GapRow.threshold", self.threshold)
        check_choice("GapRow.verdict", self.verdict, CheckVerdict)
        if not (math.isnan(self.ci_lower) or math.isnan(self.ci_upper)):
            check_interval("GapRow.ci", self.ci_lower, self.ci_upper)


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
        check_choice("GateCheckRow.verdict", self.verdict, CheckVerdict)
        check_choice("GateCheckRow.severity", self.severity, Severity)
        if self.n is not None:
            check_count("GateCheckRow.n", self.n)


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
        check_sha256("EvaluationReportView.model_sha256", self.model_sha256)
        if self.shap_output_space not in ("", "probability", "logit", "margin", "value"):
            raise ValueError("EvaluationReportView.shap_output_space must be 'probability', 'logit', "
                             f"'margin', 'value' or '', got {self.shap_output_space!r}")
        check_sha256("EvaluationReportView.data_fingerprint", self.data_fingerprint)
        check_count("EvaluationReportView.rows_scored", self.rows_scored)
        for feature, value in self.shap_importance:
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(
                    f"EvaluationReportView.shap_importance[{feature!r}] must be a finite "
                    f"number >= 0, got {value!r}"
                )

