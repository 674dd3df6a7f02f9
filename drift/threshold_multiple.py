"""A drift statistic as a multiple of its own threshold, and the worst of several: the one
definition of "worst" the drift report, its chart, the stored drift rank and the summaries
(``modelgate demo``'s, ``modelgate monitor list``'s) share.

Statistics of different kinds do not share a scale: a normalised Wasserstein distance runs to
1.5 and more where a base-2 Jensen-Shannon distance of a real shift is a few hundredths. Each
is judged against its own threshold, so each is compared, drawn and ranked as
``value / threshold``: 1 is the threshold, 8.9 is nearly nine times it, whatever the
statistic. Exact arithmetic on the stored values; no estimate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def threshold_multiple(value: float | None, threshold: float | None) -> float | None:
    """``value / threshold``; ``None`` when either is missing (no data to judge).

    A zero threshold makes any positive value infinitely far over it (``inf``) and a zero
    value exactly at it (0.0).

    Parameters
    ----------
    value : float or None
        The statistic (non-negative).
    threshold : float or None
        The threshold the statistic is judged against (non-negative).

    Returns
    -------
    float or None

    Raises
    ------
    ValueError
        If ``value`` or ``threshold`` is negative or NaN.

    Examples
    --------
    >>> threshold_multiple(0.09, 0.01), threshold_multiple(1.5, 1.0), threshold_multiple(None, 0.1)
    (9.0, 1.5, None)
    >>> threshold_multiple(0.1, 0.0), threshold_multiple(0.0, 0.0)
    (inf, 0.0)
    """
    if value is None or threshold is None:
        return None
    for name, x in (("value", value), ("threshold", threshold)):
        if math.isnan(x) or x < 0:
            raise ValueError(f"threshold_multiple: {name} must be a number >= 0, got {x!r}")
    if threshold == 0:
        return math.inf if value > 0 else 0.0
    return value / threshold


def worst_first(names: Sequence[str], values: Sequence[float | None],
                thresholds: Sequence[float | None]) -> list[int]:
    """Positions of ``names`` ordered worst first: the largest threshold multiple first, ties
    and missing values (last) broken by name, so any input order gives one ranking.

    Examples
    --------
    >>> worst_first(["childs", "educcat", "age"], [1.2, 0.089, None], [1.0, 0.01, 0.1])
    [1, 0, 2]
    """
    if not len(names) == len(values) == len(thresholds):
        raise ValueError(f"worst_first: names, values and thresholds must have one length, got "
                         f"{len(names)}, {len(values)} and {len(thresholds)}")
    multiples = [threshold_multiple(v, t) for v, t in zip(values, thresholds, strict=True)]
    return sorted(range(len(names)), key=lambda i: (multiples[i] is None, -(multiples[i] or 0.0),
                                                    names[i]))
