"""Plain input views of the evaluation report's segment section (see :mod:`.views`).

One :class:`SegmentSection` per metric shown: a row per segment (the slice's value and
interval, the rest's value, the difference with its interval, the one-sided p-value that
the slice is worse and its q-value, and the gate's verdict when a segment threshold judged
it); :class:`WeakSliceRow` per slice the weakest-slice search found.  Numbers may be NaN
where undefined (shown ``n/a``); ``None`` where not applicable (a segment not judged).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SegmentRow", "SegmentSection", "WeakSliceRow"]


@dataclass(frozen=True, slots=True)
class SegmentRow:
    """One segment of one metric."""

    segment: str
    n: int
    value: float
    ci_lower: float
    ci_upper: float
    rest_value: float | None
    difference: float | None
    difference_ci_lower: float | None
    difference_ci_upper: float | None
    p_value: float | None
    q_value: float | None
    verdict: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 0:
            raise ValueError(f"SegmentRow.n must be a count >= 0, got {self.n!r}")
        if self.verdict not in ("", "pass", "breach", "inconclusive"):
            raise ValueError(f"SegmentRow.verdict must be '', 'pass', 'breach' or 'inconclusive', "
                             f"got {self.verdict!r}")


@dataclass(frozen=True, slots=True)
class SegmentSection:
    """The segments of one metric, worst q-value first; ``family`` states the tests' family."""

    metric: str
    higher_is_better: bool
    rows: tuple[SegmentRow, ...]
    family: str = ""


@dataclass(frozen=True, slots=True)
class WeakSliceRow:
    """One slice the weakest-slice search found worse than its complement."""

    segment: str
    metric: str
    n: int
    value: float
    rest_value: float
    difference: float
    difference_ci_lower: float
    difference_ci_upper: float
    q_value: float
