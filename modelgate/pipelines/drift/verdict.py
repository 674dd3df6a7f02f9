"""An interval's verdict from what could decide it (issue #39.2: evidence before verdicts).

A feature with fewer non-missing current values than its minimum (``thresholds.min_values``,
:data:`modelgate.drift.data_drift.DEFAULT_MIN_VALUES`) has the verdict ``insufficient_data``.
When no feature has that evidence, the interval's verdict is ``insufficient_data`` too: never
``drift`` (no alarm, ``model_version.is_drifting`` left as it was) and never ``ok``. The joint
and estimated checks then decide nothing either: they are computed on the same too-few rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

JUDGED = ("ok", "drift")


def interval_verdict(sample_rows: int, features: Sequence[Any], *, drifting: bool
                     ) -> tuple[str, str | None]:
    """The run's verdict and, for ``insufficient_data``, why.

    Parameters
    ----------
    sample_rows : int
        Rows sampled from the interval.
    features : sequence of FeatureDrift
        Every feature's result (the model's score included).
    drifting : bool
        Whether a feature, a joint check or an estimate breached.

    Examples
    --------
    >>> from types import SimpleNamespace as F
    >>> interval_verdict(0, [], drifting=False)
    ('no_data', None)
    >>> interval_verdict(10, [F(verdict="insufficient_data", n_current=10, n_missing_current=0)],
    ...                  drifting=True)  # doctest: +NORMALIZE_WHITESPACE
    ('insufficient_data', '10 sampled row(s): no feature has the non-missing values a verdict
      needs (thresholds.min_values; the most any feature has: 10)')
    >>> interval_verdict(900, [F(verdict="ok", n_current=900, n_missing_current=0)], drifting=False)
    ('ok', None)
    """
    if not sample_rows:
        return "no_data", None
    if not any(f.verdict in JUDGED for f in features):
        most = max((_values(f) for f in features), default=0)
        return "insufficient_data", (
            f"{sample_rows} sampled row(s): no feature has the non-missing values a verdict needs "
            f"(thresholds.min_values; the most any feature has: {most})")
    return ("drift" if drifting else "ok"), None


def _values(feature: Any) -> int:
    """Non-missing current values behind a feature's statistic."""
    if getattr(feature, "kind", "numeric") == "categorical":
        return int(feature.n_current - feature.n_missing_current)
    return int(feature.n_current)


def count_insufficient(features: Sequence[Any]) -> int:
    """Features whose verdict is ``insufficient_data``."""
    return sum(1 for f in features if f.verdict == "insufficient_data")


def headline(sample_rows: int, features: Sequence[Any], *, set_aside: str | None,
             estimator_skipped: str | None) -> str:
    """The drift report's first words about the evidence (empty when there is nothing to say).

    >>> from types import SimpleNamespace as F
    >>> headline(5, [F(verdict="insufficient_data", n_current=5, n_missing_current=0)], set_aside=None,
    ...          estimator_skipped="the reference labels hold one class only (0: 9, 1: 0)")
    ... # doctest: +NORMALIZE_WHITESPACE
    'Insufficient data: 5 sampled row(s): no feature has the non-missing values a verdict needs
     (thresholds.min_values; the most any feature has: 5); nothing is judged. No performance
     estimate: the reference labels hold one class only (0: 9, 1: 0). '
    """
    verdict, why = interval_verdict(sample_rows, features, drifting=False)
    parts = []
    if verdict == "insufficient_data":
        parts.append(f"Insufficient data: {why}; nothing is judged. ")
    elif count_insufficient(features):
        names = ", ".join(f.feature for f in features if f.verdict == "insufficient_data")
        parts.append(f"Too few values to judge: {names}. ")
    if set_aside:
        parts.append(f"Degraded: {set_aside}. ")
    if estimator_skipped:
        parts.append(f"No performance estimate: {estimator_skipped}. ")
    return "".join(parts)
