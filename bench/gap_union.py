"""A candidate lower end for a fairness gap: a union test of the pair and one-vs-rest statistics.

Used by ``bench/gap_candidates.py --methods union`` (min-p; ``bench/RESULTS.md``, "The window
fitted again", the union paragraphs) and ``--methods joint-upper balanced-upper`` (critical
values chosen together, :func:`joint_union_lower_end`; "Two ends that need not hold the
point"); not shipped.

The shipped test of ``gap <= t`` (:mod:`modelgate.fairness.gap_lower_end`) compares the
largest Newcombe pair lower end ``A`` with its law at the rates fitted under the hypothesis,
near-edge groups on the edges.  Where the data cannot tell one group apart from a split of the
groups in two, that fit guards the split, and one group apart is covered 98-99 % at ten groups.
``bench/gap_floor.py`` shows in the normal model that a test rejecting when ``A`` *or* the
largest one-vs-rest difference ``B`` (a group against the pooled others) is large can reject
one-apart samples more often while holding its level at the split: one group apart puts ``B``
at the gap, a split only about halfway.

Here, for one hypothesis: the draws come from two fits, the shipped one and a one-apart fit
(the group with the largest one-vs-rest lower end on one edge, every other group on the other,
the window placed by maximum likelihood); each statistic's p-value is the larger of its two
mid-p values; the test's p-value is the share of draws, under the worse of the two fits, whose
smaller p-value lies at or below the observed one (min-p, Westfall and Young).  The gap 0 is
tested as shipped (equal rates have no edges).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from modelgate.fairness import count_draws
from modelgate.fairness import gap_lower_end as gle
from modelgate.fairness.score_intervals import group_rates, wilson_reach
from scipy.special import ndtri


def _one_vs_rest_ends(x: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe lower ends of ``rest - group`` and ``group - rest`` for each group of the last
    axis, the rest pooled."""
    n = np.broadcast_to(n, x.shape)
    rest_x, rest_n = x.sum(axis=-1, keepdims=True) - x, n.sum(axis=-1, keepdims=True) - n
    p, rest = group_rates(x, n), group_rates(rest_x, rest_n)
    below, above = wilson_reach(x, n, p, z)
    rest_below, rest_above = wilson_reach(rest_x, rest_n, rest, z)
    return (rest - p - np.sqrt(above**2 + rest_below**2),
            p - rest - np.sqrt(below**2 + rest_above**2))


def largest_one_vs_rest_end(x: np.ndarray, n: np.ndarray, z: float) -> np.ndarray:
    """The largest one-vs-rest Newcombe lower end of each row (either direction)."""
    down, up = _one_vs_rest_ends(np.asarray(x, dtype=float), np.asarray(n, dtype=float), z)
    return np.maximum(down, up).max(axis=-1)


def apart_group(x: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, bool]:
    """The group of the largest one-vs-rest lower end (a mask) and whether it lies below the
    rest: where the one-apart fit puts it, whatever the width tested."""
    down, up = _one_vs_rest_ends(x, n, z)
    group = int(np.argmax(np.maximum(down, up)))
    apart = np.zeros(x.shape, dtype=bool)
    apart[group] = True
    return apart, bool(down[group] >= up[group])


def one_apart_rates(x: np.ndarray, n: np.ndarray, width: float, apart: np.ndarray, below: bool
                    ) -> np.ndarray:
    """Rates at gap ``width`` with the ``apart`` group on one edge (the bottom when ``below``)
    and the others on the other, the window's position by maximum likelihood."""
    on_top, on_bottom = (~apart, apart) if below else (apart, ~apart)
    low = gle._fitted_position(x, n, group_rates(x, n), width, max(0.0, 1.0 - width), on_top,
                               on_bottom)
    return np.clip(np.where(on_top, low + width, low), 0.0, 1.0)


def _mid_p(null: np.ndarray, observed: np.ndarray | float) -> np.ndarray:
    ordered = np.sort(null)
    right = np.searchsorted(ordered, observed, side="right")
    left = np.searchsorted(ordered, observed, side="left")
    return (null.size - right + 0.5 * (right - left)) / null.size


def union_p_value(x: np.ndarray, n: np.ndarray, width: float, z: float,
                  observed: tuple[float, float], apart: tuple[np.ndarray, bool]) -> float:
    """The min-p value of the union test of ``gap <= width`` (module docstring), given the
    observed pair and one-vs-rest statistics and the one-apart fit's group
    (:func:`apart_group`)."""
    u = count_draws.fixed_uniforms(x.size, gle.DRAWS)
    laws = []
    for rates in (gle.window_rates(x, n, width), one_apart_rates(x, n, width, *apart)):
        draws = count_draws.binomial_draws(u, n, rates)
        laws.append((gle.largest_pair_lower_end(draws, n, z), largest_one_vs_rest_end(draws, n, z)))

    def p_pairs(v: np.ndarray | float) -> np.ndarray:
        return np.maximum(_mid_p(laws[0][0], v), _mid_p(laws[1][0], v))

    def p_rest(v: np.ndarray | float) -> np.ndarray:
        return np.maximum(_mid_p(laws[0][1], v), _mid_p(laws[1][1], v))

    smallest = min(float(p_pairs(observed[0])), float(p_rest(observed[1])))
    worst = 0.0
    for pairs, rest in laws:
        smaller = np.minimum(p_pairs(pairs), p_rest(rest))
        tie = np.abs(smaller - smallest) <= 1e-12
        worst = max(worst, float(((smaller < smallest) & ~tie).mean() + 0.5 * tie.mean()))
    return worst


def _smallest_not_rejected(x: np.ndarray, n: np.ndarray, rejected: Callable[[float], bool]
                           ) -> float:
    """The width where ``rejected`` stops, by bisection to 2**-10 between 0 and the observed
    range (erring low)."""
    low, high = 0.0, float(np.ptp(group_rates(x, n)))
    if rejected(high):
        return high
    while high - low > 2.0 ** -10:
        middle = (low + high) / 2.0
        low, high = (middle, high) if rejected(middle) else (low, middle)
    return low


def union_lower_end(x: np.ndarray, n: np.ndarray, tail: float) -> float:
    """The smallest gap whose hypothesis the union test does not reject at ``tail``."""
    z = float(ndtri(1.0 - tail))
    if gle.gap_p_value([(x, n)], 0.0, tail) > tail:
        return 0.0
    observed = (float(gle.largest_pair_lower_end(x, n, z)), float(largest_one_vs_rest_end(x, n, z)))
    apart = apart_group(x, n, z)

    def rejected(width: float) -> bool:
        return union_p_value(x, n, width, z, observed, apart) <= tail

    return _smallest_not_rejected(x, n, rejected)


def joint_critical_values(laws: list[tuple[np.ndarray, np.ndarray]], tail: float,
                          balanced: bool = False) -> tuple[float, float]:
    """Critical values ``(c_A, c_B)`` of the test ``A > c_A or B > c_B`` rejecting at most
    ``tail`` of the draws of every law, chosen to reject the last law's draws most often, or
    with ``balanced`` the smallest share any law's draws are rejected in as large as it can be
    (``c_B`` on a grid of the last law's quantiles, ``c_A`` the smallest value that holds the
    level given ``c_B``)."""
    size = laws[0][0].size
    allowed = int(np.floor(tail * size))
    best = (-1.0, np.inf, np.inf)
    grid = np.unique(np.quantile(laws[-1][1], np.linspace(0.5, 1.0, 41)))
    for c_b in np.r_[grid, np.inf]:
        c_a = -np.inf
        feasible = True
        for a, b in laws:
            left = allowed - int((b > c_b).sum())
            if left < 0:
                feasible = False
                break
            rest = np.sort(a[b <= c_b])[::-1]  # A among the draws B does not reject, largest first
            if left < rest.size:
                c_a = max(c_a, float(rest[left]))  # at most `left` of them above c_a
        if not feasible:
            continue
        power = min(float(((a > c_a) | (b > c_b)).mean())
                    for a, b in (laws if balanced else laws[-1:]))
        if power > best[0]:
            best = (power, c_a, float(c_b))
    return best[1], best[2]


def joint_union_lower_end(x: np.ndarray, n: np.ndarray, tail: float, balanced: bool = False
                          ) -> float:
    """The smallest gap whose hypothesis the union test with jointly calibrated critical
    values (:func:`joint_critical_values`, laws at the shipped fit and the one-apart fit) does
    not reject at ``tail``; the gap 0 tested as shipped."""
    z = float(ndtri(1.0 - tail))
    if gle.gap_p_value([(x, n)], 0.0, tail) > tail:
        return 0.0
    observed = (float(gle.largest_pair_lower_end(x, n, z)), float(largest_one_vs_rest_end(x, n, z)))
    apart = apart_group(x, n, z)
    u = count_draws.fixed_uniforms(x.size, gle.DRAWS)

    def rejected(width: float) -> bool:
        laws = []
        for rates in (gle.window_rates(x, n, width), one_apart_rates(x, n, width, *apart)):
            draws = count_draws.binomial_draws(u, n, rates)
            laws.append((gle.largest_pair_lower_end(draws, n, z),
                         largest_one_vs_rest_end(draws, n, z)))
        c_a, c_b = joint_critical_values(laws, tail, balanced)
        return observed[0] > c_a or observed[1] > c_b

    return _smallest_not_rejected(x, n, rejected)
