"""Textbook interval formulas for the fairness gap tests, written out independently of
fairness/gap_intervals.py: Wilson's score interval (Wilson 1927), Newcombe's hybrid score
interval for a difference of independent proportions (Newcombe 1998, method 10), Tukey's
critical value (scipy's studentized range) and a gap's ends over unordered pairs."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.stats import norm, studentized_range


def wilson(x: int, n: int, z: float) -> tuple[float, float]:
    """Textbook Wilson: (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)."""
    p = x / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


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
