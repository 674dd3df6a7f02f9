"""The realised value beside each estimate in a drift report, once the labels have landed.

A drift run estimates the interval's performance from its scores; the same run may also feed
ADWIN the labels of that very interval (they arrived before the run did). Then the report
shows the metric the labels gave beside the estimate and its interval, as NannyML does: an
estimate is shown with its check once it can be. Labels of earlier intervals fed by this run
belong to those intervals' reports, not this one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any


def with_realised(estimates: Sequence[Any], realised: Sequence[tuple[dt.datetime, dt.datetime, int,
                                                                     Mapping[str, float | None]]],
                  interval_start: dt.datetime) -> tuple[Any, ...]:
    """``estimates`` (report ``EstimateRow`` s) with ``realised`` set from the metrics of the
    labelled interval that starts at ``interval_start``; unchanged when its labels are not
    among ``realised`` (``ConceptResult.realised``: start, end, rows, metrics).

    Examples
    --------
    >>> from modelgate.reports.summary_views import EstimateRow
    >>> start = dt.datetime(2026, 11, 28, tzinfo=dt.UTC)
    >>> rows = [EstimateRow("accuracy", 0.8, 0.75, 0.85, 0.82, None, "ok")]
    >>> with_realised(rows, [(start, start + dt.timedelta(days=1), 90, {"accuracy": 0.79})],
    ...               start)[0].realised
    0.79
    >>> with_realised(rows, [], start)[0].realised is None
    True
    """
    found = [metrics for start, _, _, metrics in realised if start == interval_start]
    if not found:
        return tuple(estimates)
    return tuple(dataclasses.replace(e, realised=found[-1].get(e.metric)) for e in estimates)
