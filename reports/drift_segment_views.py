"""Plain input views for the drift report's segment section (see :mod:`modelgate.reports.views`).

Drift of each feature within each segment, and the performance estimated on each segment with its
interval, both judged in one false-discovery-controlled family. Like every view, each row
validates itself on construction and holds plain fields only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_VERDICTS = ("ok", "drift", "breach", "warn")


def _probability(name: str, value: float | None) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")


def _finite(name: str, value: float | None) -> None:
    if value is not None and not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def _verdict(name: str, value: str) -> None:
    if value not in _VERDICTS:
        raise ValueError(f"{name} must be one of {', '.join(_VERDICTS)}, got {value!r}")


@dataclass(frozen=True, slots=True)
class SegmentDriftRow:
    """One feature tested within one segment (``column=value``): its test, statistic, p-value,
    q-value in the family, and verdict (``drift``, ``ok``, ``warn``: too few rows to test).

    Examples
    --------
    >>> SegmentDriftRow("region=s", "age", "ks", 200, 100, 0.4, 1e-9, 4e-9, "drift").verdict
    'drift'
    """

    segment: str
    feature: str
    test: str
    n_reference: int
    n_current: int
    statistic: float | None
    p_value: float | None
    q_value: float | None
    verdict: str

    def __post_init__(self) -> None:
        _finite("SegmentDriftRow.statistic", self.statistic)
        _probability("SegmentDriftRow.p_value", self.p_value)
        _probability("SegmentDriftRow.q_value", self.q_value)
        _verdict("SegmentDriftRow.verdict", self.verdict)


@dataclass(frozen=True, slots=True)
class SegmentEstimateRow:
    """One metric estimated on one segment: the estimate and its interval for the value the
    labels will give, the reference's value, the largest worsening allowed (None: not judged),
    the check's q-value, verdict (``breach``, ``ok``, ``warn``: not judged) and why not judged.

    Examples
    --------
    >>> SegmentEstimateRow("region=s", "accuracy", 400, 0.78, 0.75, 0.81, 0.9, 0.05, 1e-6,
    ...                    "breach", "").metric
    'accuracy'
    """

    segment: str
    metric: str
    n_rows: int
    estimate: float | None
    lower: float | None
    upper: float | None
    reference: float | None
    max_worsening: float | None
    q_value: float | None
    verdict: str
    note: str

    def __post_init__(self) -> None:
        for name in ("estimate", "lower", "upper", "reference", "max_worsening"):
            _finite(f"SegmentEstimateRow.{name}", getattr(self, name))
        _probability("SegmentEstimateRow.q_value", self.q_value)
        _verdict("SegmentEstimateRow.verdict", self.verdict)
