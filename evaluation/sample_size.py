"""How many more rows would decide an inconclusive gate check: an approximation.

A check on the interval basis is ``inconclusive`` when its interval straddles the limit
(or, for a TPR/FPR gap, when a group has fewer label positives or negatives than the
policy's minimum). This module says roughly how much more data of the same kind would let
the interval clear the limit, if the effect stayed what was observed.

Method
------
A bootstrap interval's half-width shrinks about as ``1 / sqrt(n)``. Take the half-width
``h`` on the side that faces a straddled limit ``L`` (``ci_upper - point`` for a limit
above the point, ``point - ci_lower`` for one below) and the observed distance
``d = |point - L|``. At ``n' = n (h / d)**2`` rows the projected half-width equals ``d``,
so the interval would just clear ``L``. More data of the same population scales every
count by ``k = n' / n = (h / d)**2``; "more rows" is ``ceil(n k) - n``, and for a fairness
gap the same factor applies to the label positives and negatives of the group with the
fewest of them. When the point lies inside the allowed range every straddled limit must be
cleared (the largest ``k`` wins); when it lies past a limit, clearing that one decides a
breach. A check held back by a policy minimum also needs ``k >= minimum / count``.

When the point equals a straddled limit (``d = 0``) no amount of data decides it at the
observed effect: the counts are None and :attr:`RowsToDecide.reason` says why.

A fairness gap whose interval holds 0 gets a second projection. The gap is the largest of
the pairwise differences of group rates; with equal rates each difference is noise, and the
largest of them is biased upwards, so the observed gap (0.04-0.29 on a fair model at
n = 200 against a limit of 0.03, ``bench/RESULTS.md``, "Acceptance on unseen data") projects
a breach that more rows do not bring. The data are consistent with equal rates, so the
second projection asks when the interval would show the gap below the upper limit ``L`` if
they were: with equal rates every term of the upper end ``U`` (each pair's observed
difference and its score-interval half-width) is noise of order ``1 / sqrt(n)`` at fixed
group shares, so ``U`` scales as ``sqrt(n / n')`` and reaches ``L`` at
``n' = n (U / L)**2``. That extrapolation is the fallback; the gate passes a factor
simulated at the projected size on the pooled rates with its own interval
(:func:`modelgate.fairness.equal_rates.scale_to_clear_if_equal`), because with a few
positives per group the upper end does not yet scale as ``1 / sqrt(n)``: on fair three-group
samples of 200 the simulated rows passed 52-57 % of fresh samples, the extrapolated 35-37 %
(``bench/RESULTS.md``, "Rows to decide a fair model's gap"; a cheap seeded version in
``tests/evaluation/test_sample_size.py``). The policy's group minimums apply to it as to the
first.

Output: an estimate. It assumes the point stays put and the interval narrows as
``1 / sqrt(n)``; the point moves by sampling error as the rows come in, so the suggested
rows decide about half the time or more (two thirds of 400 seeded draws of a proportion in
``tests/evaluation/test_sample_size.py``), which is what "about" means in the wording.

References
----------
.. [1] Efron, B. and Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 12-14
   (percentile intervals, width of order ``n**-0.5``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["RowsToDecide", "rows_to_decide"]


@dataclass(frozen=True, slots=True)
class RowsToDecide:
    """About how much more data would decide a check at the observed effect.

    Attributes
    ----------
    scale : float or None
        ``n' / n``: the factor on every count (None when it cannot be decided).
    rows : int or None
        About how many more rows (``ceil(n * scale) - n``).
    group_positives, group_negatives : int or None
        About how many more label positives and negatives in the group with the fewest of
        them (fairness checks of classifiers; None otherwise).
    reason : str
        The projection in words, to add to a check's reason.
    scale_if_equal : float or None
        A fairness gap whose interval holds 0 and straddles the upper limit: the factor on
        every count that would show the gap below the limit if the groups' rates were equal
        (the interval's upper end scaling as ``1 / sqrt(n)``); None otherwise.
    rows_if_equal, group_positives_if_equal, group_negatives_if_equal : int or None
        The same projection's more rows and group positives and negatives.
    """

    scale: float | None
    rows: int | None
    group_positives: int | None
    group_negatives: int | None
    reason: str
    scale_if_equal: float | None = None
    rows_if_equal: int | None = None
    group_positives_if_equal: int | None = None
    group_negatives_if_equal: int | None = None


def rows_to_decide(
    point: float,
    ci_lower: float,
    ci_upper: float,
    n: int,
    *,
    lower: float | None = None,
    upper: float | None = None,
    group_counts: tuple[int | None, int | None] = (None, None),
    required_counts: tuple[int | None, int | None] = (None, None),
    fairness_gap: bool = False,
    scale_if_equal: float | None = None,
) -> RowsToDecide:
    """About how many more rows would make ``[ci_lower, ci_upper]`` clear the limits.

    Parameters
    ----------
    point, ci_lower, ci_upper : float
        The judged estimate and its interval (finite, ``ci_lower <= ci_upper``).
    n : int
        Rows behind the estimate (> 0).
    lower, upper : float, optional
        The check's inclusive limits (at least one).
    group_counts : (int or None, int or None), default (None, None)
        Fewest label positives and negatives of any group in a fairness gap.
    required_counts : (int or None, int or None), default (None, None)
        The policy's minimum positives and negatives per group that applied.
    fairness_gap : bool, default False
        The estimate is a fairness gap (0 when the groups' rates are equal): when its
        interval holds 0 and straddles ``upper``, also project the rows that would show it
        below ``upper`` if the rates were equal (the module docstring says why).
    scale_if_equal : float, optional
        That projection's factor on the counts when the caller simulated it
        (:func:`modelgate.fairness.equal_rates.scale_to_clear_if_equal`); without it,
        ``(ci_upper / upper)**2``.

    Returns
    -------
    RowsToDecide

    Raises
    ------
    ValueError
        If a number is not finite, ``n`` is not positive, the interval is reversed, or no
        limit is given.

    Examples
    --------
    Recall 0.62 in [0.55, 0.69] on 228 rows against ``>= 0.60``: ``228 * (0.07 / 0.02)**2``.

    >>> got = rows_to_decide(0.62, 0.55, 0.69, 228, lower=0.60)
    >>> round(got.scale, 2), got.rows
    (12.25, 2565)
    >>> print(got.reason)
    about 2,565 more rows (12.2x the 228) would make the interval clear the limit at the observed effect
    >>> rows_to_decide(0.6, 0.55, 0.65, 228, lower=0.6).rows is None
    True

    An equalized-odds gap 0.09 in [0, 0.36] on 200 rows against ``<= 0.03``: a breach
    ``200 * (0.09 / 0.06)**2`` at the observed gap, a pass ``200 * (0.36 / 0.03)**2`` if the
    groups' rates were equal.

    >>> got = rows_to_decide(0.09, 0.0, 0.36, 200, upper=0.03, fairness_gap=True)
    >>> got.rows, got.rows_if_equal
    (250, 28600)
    >>> print(got.reason)
    at the observed gap 0.09 about 250 more rows (2.2x the 200) would confirm a breach; if the \
groups' rates were equal, about 28,600 more rows (144.0x the 200) would show it below 0.03
    """
    _validate(point, ci_lower, ci_upper, n, lower, upper)
    if_equal = _if_equal(ci_lower, ci_upper, n, upper, group_counts, required_counts,
                         fairness_gap, scale_if_equal)
    observed = _at_observed(point, ci_lower, ci_upper, n, lower, upper, group_counts,
                            required_counts)
    if if_equal is None:
        return observed
    return _with_if_equal(observed, if_equal, point, n, upper)


def _at_observed(point: float, ci_lower: float, ci_upper: float, n: int, lower: float | None,
                 upper: float | None, group_counts: tuple[int | None, int | None],
                 required_counts: tuple[int | None, int | None]) -> RowsToDecide:
    """The projection at the observed effect (the module docstring's method)."""
    straddled = [limit for limit, side in ((lower, "lower"), (upper, "upper"))
                 if limit is not None and _straddles(ci_lower, ci_upper, limit, side)]
    past = [limit for limit in straddled if (limit == lower and point < limit)
            or (limit == upper and point > limit)]
    scales = []
    for limit in past or straddled:  # past a limit, clearing that one decides a breach
        if point == limit:
            return RowsToDecide(None, None, None, None,
                                f"it cannot be decided at the observed effect: the point equals "
                                f"the limit {limit:g}, so no number of rows would clear it")
        half_width = ci_upper - point if limit > point else point - ci_lower
        scales.append((half_width / abs(point - limit)) ** 2)
    scale = max([1.0, *scales, *_count_scales(group_counts, required_counts)])
    if math.isinf(scale):
        return RowsToDecide(None, None, None, None,
                            "it cannot be decided at the observed effect: a group taking part has "
                            "no cases of a kind the gap needs, so more rows of the same mix add none")
    rows, positives, negatives = (_more(c, scale) for c in (n, *group_counts))
    assert rows is not None
    return RowsToDecide(scale, rows, positives, negatives,
                        _wording(rows, n, scale, positives, negatives))


def _if_equal(ci_lower: float, ci_upper: float, n: int, upper: float | None,
              group_counts: tuple[int | None, int | None],
              required_counts: tuple[int | None, int | None],
              fairness_gap: bool, simulated: float | None) -> RowsToDecide | None:
    """The projection for a gap whose interval holds 0 if the groups' rates were equal: the
    caller's simulated factor, or the upper end scaling as ``sqrt(n / n')`` to meet ``upper``
    at ``n (ci_upper / upper)**2``."""
    if not (fairness_gap and upper is not None and upper > 0 and ci_lower <= 0.0
            and _straddles(ci_lower, ci_upper, upper, "upper")):
        return None
    noise = (ci_upper / upper) ** 2 if simulated is None else simulated
    scale = max([1.0, noise, *_count_scales(group_counts, required_counts)])
    if math.isinf(scale):
        return None
    rows, positives, negatives = (_more(c, scale) for c in (n, *group_counts))
    return RowsToDecide(scale, rows, positives, negatives, "")


def _with_if_equal(observed: RowsToDecide, if_equal: RowsToDecide, point: float, n: int,
                   upper: float | None) -> RowsToDecide:
    """The observed-effect projection with the equal-rates one beside it, in one sentence."""
    assert if_equal.rows is not None and if_equal.scale is not None and upper is not None
    if observed.rows is None or observed.scale is None:
        first = f"{observed.reason}; "
    else:
        outcome = "confirm a breach" if point > upper else f"show it below {upper:g}"
        counts = _counts_text(observed.rows, n, observed.scale, observed.group_positives,
                              observed.group_negatives)
        first = f"at the observed gap {point:.2g} {counts} would {outcome}; "
    counts = _counts_text(if_equal.rows, n, if_equal.scale, if_equal.group_positives,
                          if_equal.group_negatives)
    second = f"if the groups' rates were equal, {counts} would show it below {upper:g}"
    return RowsToDecide(observed.scale, observed.rows, observed.group_positives,
                        observed.group_negatives, first + second, if_equal.scale, if_equal.rows,
                        if_equal.group_positives, if_equal.group_negatives)


def _more(count: int | None, scale: float) -> int | None:
    """``ceil(count * scale) - count`` (a rounding error of 1e-9 is not a row)."""
    return None if count is None else math.ceil(count * scale - 1e-9) - count


def _straddles(ci_lower: float, ci_upper: float, limit: float, side: str) -> bool:
    """Whether the interval is on both sides of an inclusive limit (the gate's rule)."""
    if side == "lower":
        return ci_lower < limit <= ci_upper
    return ci_lower <= limit < ci_upper


def _count_scales(have: tuple[int | None, int | None],
                  need: tuple[int | None, int | None]) -> list[float]:
    """Factors that lift each group count short of its policy minimum to that minimum."""
    return [need_c / have_c if have_c else math.inf
            for have_c, need_c in zip(have, need, strict=True)
            if have_c is not None and need_c is not None and have_c < need_c]


def _counts_text(rows: int, n: int, scale: float, positives: int | None,
                 negatives: int | None) -> str:
    groups = "" if positives is None or negatives is None else (
        f", {positives:,} more positives and {negatives:,} more negatives in the group with "
        "the fewest")
    return f"about {rows:,} more rows ({scale:.1f}x the {n:,}){groups}"


def _wording(rows: int, n: int, scale: float, positives: int | None,
             negatives: int | None) -> str:
    return (f"{_counts_text(rows, n, scale, positives, negatives)} would make the interval "
            "clear the limit at the observed effect")


def _validate(point: float, ci_lower: float, ci_upper: float, n: int,
              lower: float | None, upper: float | None) -> None:
    for name, value in (("point", point), ("ci_lower", ci_lower), ("ci_upper", ci_upper)):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number; got {value!r}")
    if ci_lower > ci_upper:
        raise ValueError(f"ci_lower must be <= ci_upper; got {ci_lower!r} > {ci_upper!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"n must be a positive integer; got {n!r}")
    if lower is None and upper is None:
        raise ValueError("give at least one of lower and upper (the check's limits)")
