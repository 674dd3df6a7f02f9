"""Textbook interval formulas for the fairness gap tests, written out independently of
fairness/gap_intervals.py: Wilson's score interval (Wilson 1927) and its modification near 0
and n (Brown, Cai and DasGupta 2001), Newcombe's hybrid score
interval for a difference of independent proportions (Newcombe 1998, method 10), Tukey's
critical value (scipy's studentized range) and a gap's ends over unordered pairs."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.stats import chi2, norm, studentized_range


def wilson(x: int, n: int, z: float) -> tuple[float, float]:
    """Textbook Wilson: (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)."""
    p = x / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def modified_wilson(x: int, n: int, z: float) -> tuple[float, float]:
    """Brown, Cai and DasGupta's (2001, section 4.1.1) modified Wilson interval: Wilson's ends,
    except at x = 1, 2 (1-3 for 51 <= n <= 100) the lower end chi2.ppf(alpha, 2x) / (2n), and at
    n - x = 1, 2 (1-3) the upper end 1 - chi2.ppf(alpha, 2(n - x)) / (2n), alpha = 2 Phi(-z)."""
    lower, upper = wilson(x, n, z)
    near = 2 if n <= 50 else 3 if n <= 100 else 0
    alpha = 2 * float(norm.sf(z))
    if 1 <= x <= near:
        lower = float(chi2.ppf(alpha, 2 * x)) / (2 * n)
    if 1 <= n - x <= near:
        upper = 1 - float(chi2.ppf(alpha, 2 * (n - x))) / (2 * n)
    return lower, upper


def newcombe(x1: int, n1: int, x2: int, n2: int, z: float) -> tuple[float, float]:
    """Newcombe (1998) method 10 for p1 - p2: d - sqrt((p1-l1)^2 + (u2-p2)^2), d + sqrt(...)."""
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson(x1, n1, z)
    l2, u2 = wilson(x2, n2, z)
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def gap_by_hand(groups: list[tuple[int, int]], z_lower: float, z_upper: float) -> tuple[float, float]:
    """Over unordered pairs: lower = farthest distance of a (z_lower) pair interval from 0,
    upper = farthest |end| of a (z_upper) pair interval."""
    lower = upper = 0.0
    for (x1, n1), (x2, n2) in itertools.combinations(groups, 2):
        lo, hi = newcombe(x1, n1, x2, n2, z_lower)
        lower = max(lower, lo, -hi)  # the interval's distance from 0 (0 when it holds 0)
        lo, hi = newcombe(x1, n1, x2, n2, z_upper)
        upper = max(upper, abs(lo), abs(hi))
    return lower, upper


def tukey(k: int, level: float) -> float:
    return float(studentized_range.ppf(level, k, np.inf) / math.sqrt(2)) if k > 2 else float(
        norm.ppf(0.5 + level / 2))


def agresti_coull_se(x: int, n: int) -> float:
    """Standard error of x / n with Agresti and Coull's adjusted rate at z = 1.96 (0 when n = 0)."""
    z2 = 1.959963984540054 ** 2
    q = (x + z2 / 2) / (n + z2)
    return math.sqrt(q * (1 - q) / (n + z2)) if n > 0 else 0.0


def selected_z_by_monte_carlo(families: list[list[tuple[int, int]]], tail: float, slack: float,
                              draws: int = 50_000, seed: int = 5) -> float:
    """The ``1 - tail`` point of the largest standardised difference over the ordered pairs (of
    one family) lying within ``slack`` standard errors of the largest difference, from plain
    pseudo-random normal draws of the groups' errors."""
    groups = [(f, x, n) for f, fam in enumerate(families) for x, n in fam]
    se = [agresti_coull_se(x, n) for _, x, n in groups]
    rate = [x / n if n else 0.0 for _, x, n in groups]
    pairs = [(a, b) for a, b in itertools.permutations(range(len(groups)), 2)
             if groups[a][0] == groups[b][0]]
    largest = max(rate[a] - rate[b] for a, b in pairs)
    kept = [(a, b, math.hypot(se[a], se[b])) for a, b in pairs
            if math.hypot(se[a], se[b]) > 0
            and largest - (rate[a] - rate[b]) <= slack * math.hypot(se[a], se[b])]
    if not kept:
        return float(norm.ppf(1 - tail))
    e = np.random.default_rng(seed).standard_normal((draws, len(groups))) * np.array(se)
    m = np.max([(e[:, a] - e[:, b]) / s for a, b, s in kept], axis=0)
    return float(np.quantile(m, 1 - tail))


def two_step_gap(families: list[list[tuple[int, int]]], level: float, z_selected: float,
                 lower_share: float = 0.8, upper_share: float = 0.4) -> tuple[float, float]:
    """The gap's ends written out: upper = farthest pair end at the one-sided normal point of
    ``upper_share (1 - level)``; lower = 0 when every family's Tukey pair intervals (Sidak level
    over the families, at ``1 - lower_share (1 - level)``) hold 0, else the farthest distance
    from 0 of a pair interval at ``z_selected``."""
    alpha = 1 - level
    z_up = float(norm.ppf(1 - upper_share * alpha))
    step = (1 - lower_share * alpha) ** (1 / len(families))
    tukey_ends = [gap_by_hand(fam, tukey(len(fam), step), z_up) for fam in families]
    upper = max(hi for _, hi in tukey_ends)
    if all(lo <= 0 for lo, _ in tukey_ends):
        return 0.0, upper
    return max(gap_by_hand(fam, z_selected, z_up)[0] for fam in families), upper
