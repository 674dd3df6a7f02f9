"""Plain input views for the reports' summary sections (see :mod:`.views`).

The SHAP summary (beeswarm) and SHAP by sensitive group of the evaluation report, and the
labelled performance of the drift report. Like every view, each validates itself on
construction and holds plain fields only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def _finite(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


@dataclass(frozen=True, slots=True)
class ShapSwarmRow:
    """One feature of the SHAP summary: every explained row's SHAP value, with the feature's
    value on that row as a colour position in [0, 1] (NaN: not numeric, drawn grey).

    ``value_correlation`` is the Spearman correlation of the feature's value with its SHAP
    value (NaN when not defined).

    Examples
    --------
    >>> ShapSwarmRow("age", (0.1, -0.2), (1.0, 0.0), 0.15, -1.0).mean_abs
    0.15
    """

    feature: str
    values: tuple[float, ...]
    colours: tuple[float, ...]
    mean_abs: float
    value_correlation: float

    def __post_init__(self) -> None:
        if len(self.colours) != len(self.values) or not self.values:
            raise ValueError(
                f"ShapSwarmRow.colours must have one entry per value ({len(self.values)}, at least "
                f"1), got {len(self.colours)} for feature {self.feature!r}")
        for value in self.values:
            _finite(f"ShapSwarmRow.values[{self.feature!r}]", value)
        for colour in self.colours:
            if not (math.isnan(colour) or 0.0 <= colour <= 1.0):
                raise ValueError(f"ShapSwarmRow.colours must be in [0, 1] or nan, got {colour!r} "
                                 f"for feature {self.feature!r}")
        if not (math.isfinite(self.mean_abs) and self.mean_abs >= 0.0):
            raise ValueError(f"ShapSwarmRow.mean_abs must be a finite number >= 0, got "
                             f"{self.mean_abs!r}")

    @property
    def minimum(self) -> float:
        """Smallest SHAP value.

        >>> ShapSwarmRow("a", (0.5, -1.0), (0.0, 1.0), 0.75, -1.0).minimum
        -1.0
        """
        return min(self.values)

    @property
    def maximum(self) -> float:
        """Largest SHAP value.

        >>> ShapSwarmRow("a", (0.5, -1.0), (0.0, 1.0), 0.75, -1.0).maximum
        0.5
        """
        return max(self.values)


@dataclass(frozen=True, slots=True)
class GroupShapSection:
    """SHAP by the groups of one sensitive feature: per feature (rows of ``mean`` and
    ``mean_abs``), one value per group (columns, in ``groups`` order); ``spread`` is the largest
    minus the smallest group mean SHAP of each feature.

    Examples
    --------
    >>> s = GroupShapSection("sex", ("F", "M"), (30, 20), ("age",), ((0.1, -0.1),), ((0.2, 0.3),),
    ...                      (0.2,))
    >>> s.rows[0]
    ('age', (0.1, -0.1), (0.2, 0.3), 0.2)
    """

    sensitive_feature: str
    groups: tuple[str, ...]
    counts: tuple[int, ...]
    features: tuple[str, ...]
    mean: tuple[tuple[float, ...], ...]
    mean_abs: tuple[tuple[float, ...], ...]
    spread: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.counts) != len(self.groups):
            raise ValueError(f"GroupShapSection.counts must have one count per group "
                             f"({len(self.groups)}), got {len(self.counts)}")
        for name in ("mean", "mean_abs", "spread"):
            table = getattr(self, name)
            if len(table) != len(self.features):
                raise ValueError(f"GroupShapSection.{name} must have one entry per feature "
                                 f"({len(self.features)}), got {len(table)}")
        for name in ("mean", "mean_abs"):
            for row in getattr(self, name):
                if len(row) != len(self.groups):
                    raise ValueError(f"GroupShapSection.{name} rows must have one value per group "
                                     f"({len(self.groups)}), got {len(row)}")
                for value in row:
                    _finite(f"GroupShapSection.{name}", value)

    @property
    def rows(self) -> tuple[tuple[str, tuple[float, ...], tuple[float, ...], float], ...]:
        """``(feature, mean per group, mean |SHAP| per group, spread)`` per feature."""
        return tuple(zip(self.features, self.mean, self.mean_abs, self.spread, strict=True))


@dataclass(frozen=True, slots=True)
class LabelledPerformance:
    """How the production model did on the rows whose labels arrived, as the concept-drift
    step fed them to ADWIN: ``error`` is the mean of its error stream (the share of wrong
    predictions for classifiers; for regression the mean absolute error scaled by the
    reference predictions' spread, capped at 1), ``error_name`` says which.

    Examples
    --------
    >>> LabelledPerformance(200, 0.1, "error rate (prediction differs from label)").accuracy
    0.9
    """

    rows_labelled: int
    error: float
    error_name: str
    classification: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.rows_labelled, bool) or self.rows_labelled < 1:
            raise ValueError(f"LabelledPerformance.rows_labelled must be an int >= 1, got "
                             f"{self.rows_labelled!r}")
        if not 0.0 <= self.error <= 1.0:
            raise ValueError(f"LabelledPerformance.error must be in [0, 1], got {self.error!r}")

    @property
    def accuracy(self) -> float | None:
        """``1 - error`` for classifiers; None for regression."""
        return 1.0 - self.error if self.classification else None


@dataclass(frozen=True, slots=True)
class QualityRow:
    """One feature's data quality on the interval's sampled rows, against the reference
    schema; ``verdict`` ``ok``, ``breach`` or ``warn`` (no rows), ``reasons`` the limits passed.

    Examples
    --------
    >>> QualityRow("age", "numeric", 100, 0.0, 0.0, 0, 5, 0, "breach", "out_of_range 0.0500 > 0.0100").verdict
    'breach'
    """

    feature: str
    kind: str
    n_rows: int
    missing_rate: float | None
    reference_missing_rate: float | None
    n_type_mismatch: int
    n_out_of_range: int
    n_new_category: int
    verdict: str
    reasons: str

    def __post_init__(self) -> None:
        for name in ("n_rows", "n_type_mismatch", "n_out_of_range", "n_new_category"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"QualityRow.{name} must be an int >= 0, got {value!r}")
        if self.verdict not in ("ok", "breach", "warn"):
            raise ValueError(f"QualityRow.verdict must be ok, breach or warn, got {self.verdict!r}")


@dataclass(frozen=True, slots=True)
class ShapClassSection:
    """The SHAP summary of one class of a multiclass model: the explained rows whose SHAP
    values explain that class's probability (each row explains its predicted class).

    Examples
    --------
    >>> ShapClassSection("setosa", 2, (ShapSwarmRow("x", (0.1, -0.2), (1.0, 0.0), 0.15, -1.0),)).n_rows
    2
    """

    class_name: str
    n_rows: int
    rows: tuple[ShapSwarmRow, ...]


@dataclass(frozen=True, slots=True)
class EstimateRow:
    """One metric estimated from the interval's scores before labels: the estimate, its
    interval for the value the labels will give, the reference's realised value and the
    configured largest worsening (None: not thresholded); ``realised`` is the value the
    interval's labels gave, once they have landed (None before).

    Examples
    --------
    >>> EstimateRow("accuracy", 0.8, 0.78, 0.82, 0.85, 0.03, "breach").metric
    'accuracy'
    """

    metric: str
    estimate: float | None
    lower: float | None
    upper: float | None
    reference: float | None
    max_worsening: float | None
    verdict: str
    realised: float | None = None

    def __post_init__(self) -> None:
        for name in ("estimate", "lower", "upper", "reference", "max_worsening", "realised"):
            value = getattr(self, name)
            if value is not None:
                _finite(f"EstimateRow.{name}", value)
        if self.verdict not in ("ok", "breach", "warn"):
            raise ValueError(f"EstimateRow.verdict must be ok, breach or warn, got {self.verdict!r}")
