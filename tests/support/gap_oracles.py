"""Textbook interval formulas for the fairness gap tests, written out independently of
fairness/score_intervals.py, gap_intervals.py and gap_lower_end.py: Wilson's score interval
(Wilson 1927) and its modification near 0 and n (Brown, Cai and DasGupta 2001), Newcombe's hybrid score
interval for a difference of independent proportions (Newcombe 1998, method 10), a gap's upper
end over the pairs, and the lower end's test inversion: the window fit by Brent's search, the
p-value by enumerating every count table (tiny groups) or by plain pseudo-random draws, and the
inversion by bisection.  With no gap and few counts the p-value's law is the tables with the
observed total (a permutation test), by enumeration or numpy's multivariate hypergeometric."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
from scipy import optimize
from scipy.stats import binom, chi2, norm


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


def agresti_coull_se(x: int, n: int) -> float:
    """Standard error of x / n with Agresti and Coull's adjusted rate at z = 1.96 (0 when n = 0)."""
    z2 = 1.959963984540054 ** 2
    q = (x + z2 / 2) / (n + z2)
    return math.sqrt(q * (1 - q) / (n + z2)) if n > 0 else 0.0


def pair_lower_max(groups: list[tuple[int, int]], z: float) -> float:
    """The largest Newcombe lower end over the ordered pairs, not clipped at 0 (a group without
    trials: rate 0, interval [0, 0])."""
    def rate_and_wilson(x: int, n: int) -> tuple[float, float, float]:
        return (0.0, 0.0, 0.0) if n == 0 else (x / n, *wilson(x, n, z))

    best = -math.inf
    for (x1, n1), (x2, n2) in itertools.permutations(groups, 2):
        p1, l1, _ = rate_and_wilson(x1, n1)
        p2, _, u2 = rate_and_wilson(x2, n2)
        best = max(best, p1 - p2 - math.hypot(p1 - l1, u2 - p2))
    return best


def window_fit(groups: list[tuple[int, int]], width: float, edge_slack: float) -> list[float]:
    """Rates maximising the binomial likelihood with every rate in [w, w + width] (Brent's
    bounded search over w: the log-likelihood is concave in w); each group within
    ``edge_slack`` Agresti-Coull errors of an edge marked for the nearer edge; w searched
    again with the marked groups held on their edges; the marks taken again at that w, and the
    marked groups put on their edges.  A group without trials stays at 0 (so w = 0)."""
    rates = [x / n if n else 0.0 for x, n in groups]
    free = ["" for _ in groups]

    def placed(w: float, marks: list[str]) -> list[float]:
        return [w + width if m == "top" else w if m == "bottom" else min(max(r, w), w + width)
                for r, m in zip(rates, marks, strict=True)]

    def minus_loglik(w: float, marks: list[str]) -> float:
        return -sum(x * math.log(min(max(q, 1e-12), 1 - 1e-12))
                    + (n - x) * math.log(min(max(1 - q, 1e-12), 1 - 1e-12))
                    for (x, n), q in zip(groups, placed(w, marks), strict=True))

    def fitted(marks: list[str]) -> float:
        if any(n == 0 for _, n in groups) or width >= 1:
            return 0.0
        return float(optimize.minimize_scalar(lambda w: minus_loglik(w, marks),
                                              bounds=(0.0, 1.0 - width), method="bounded",
                                              options={"xatol": 1e-10}).x)

    def marks_at(w: float) -> list[str]:
        out = []
        for (x, n), q in zip(groups, placed(w, free), strict=True):
            top, bottom, se = w + width - q, q - w, agresti_coull_se(x, n)
            out.append("top" if top <= bottom and top <= edge_slack * se else
                       "bottom" if bottom < top and bottom <= edge_slack * se else "")
        return out

    w = fitted(free)
    w = fitted(marks_at(w))
    return [0.0 if n == 0 else q for (_, n), q in zip(groups, placed(w, marks_at(w)), strict=True)]


EXACT_NULL_UP_TO = 1000  # the library's rarer-outcome bound for testing no gap by permutation


def by_permutation(family: list[tuple[int, int]], width: float) -> bool:
    """Whether ``gap <= width`` is tested with the family's total held (no gap, three groups
    or more, few counts, every group with trials: under the zero convention a group without
    any has the rate 0)."""
    successes = sum(x for x, _ in family)
    return (width == 0.0 and len(family) >= 3 and all(n > 0 for _, n in family)
            and min(successes, sum(n for _, n in family) - successes) <= EXACT_NULL_UP_TO)


def family_tables(family: list[tuple[int, int]], width: float, edge_slack: float
                  ) -> list[tuple[tuple[int, ...], float]]:
    """Every count table of one family with its probability under ``gap <= width``: the
    binomial law at the fitted rates, or at width 0 (few counts) the tables with the observed
    total, each ``prod C(n_k, x_k) / C(N, S)`` (the multivariate hypergeometric law)."""
    trials = [n for _, n in family]
    tables = itertools.product(*(range(n + 1) for n in trials))
    if by_permutation(family, width):
        total = sum(x for x, _ in family)
        whole = math.comb(sum(trials), total)
        return [(xs, math.prod(math.comb(n, x) for x, n in zip(xs, trials, strict=True)) / whole)
                for xs in tables if sum(xs) == total]
    rates = window_fit(family, width, edge_slack)
    return [(xs, math.prod(float(binom.pmf(x, n, q)) for x, n, q in zip(xs, trials, rates, strict=True)))
            for xs in tables]


def exact_mid_p(families: list[list[tuple[int, int]]], width: float, z: float,
                edge_slack: float = 2.0) -> float:
    """Mid-p value of ``gap <= width`` by enumerating every count table (tiny groups only),
    each family's tables by :func:`family_tables`; the statistic the largest unclipped
    Newcombe lower end at ``z`` over any family's ordered pairs."""
    observed = max(pair_lower_max(f, z) for f in families)
    above = tie = 0.0
    for combo in itertools.product(*(family_tables(f, width, edge_slack) for f in families)):
        weight = math.prod(w for _, w in combo)
        drawn = [list(zip(xs, (n for _, n in f), strict=True))
                 for (xs, _), f in zip(combo, families, strict=True)]
        stat = max(pair_lower_max(f, z) for f in drawn)
        if abs(stat - observed) <= 1e-12:
            tie += weight
        elif stat > observed:
            above += weight
    return above + tie / 2


def monte_carlo_mid_p(families: list[list[tuple[int, int]]], width: float, z: float,
                      draws: int = 10_000, seed: int = 5, edge_slack: float = 2.0) -> float:
    """``exact_mid_p`` by plain pseudo-random draws for larger counts: scipy's binomial, or
    numpy's multivariate hypergeometric for the tables with the observed total."""
    observed = max(pair_lower_max(f, z) for f in families)
    rng = np.random.default_rng(seed)
    stat = np.full(draws, -np.inf)
    for f in families:
        n = np.array([t for _, t in f])
        if by_permutation(f, width):
            x = rng.multivariate_hypergeometric(n, sum(c for c, _ in f), size=draws)
        else:
            x = binom.rvs(n, window_fit(f, width, edge_slack), size=(draws, len(f)),
                          random_state=rng)
        p = np.where(n > 0, x / np.maximum(n, 1), 0.0)
        lower = np.zeros_like(p)
        upper = np.zeros_like(p)
        for g, t in enumerate(n):
            if t > 0:
                ends = [wilson(int(v), int(t), z) for v in range(t + 1)]
                lower[:, g] = np.array([e[0] for e in ends])[x[:, g]]
                upper[:, g] = np.array([e[1] for e in ends])[x[:, g]]
        for i, j in itertools.permutations(range(len(f)), 2):
            stat = np.maximum(stat, p[:, i] - p[:, j] - np.hypot(p[:, i] - lower[:, i],
                                                                  upper[:, j] - p[:, j]))
    tie = np.abs(stat - observed) <= 1e-12
    return float(((stat > observed) & ~tie).mean() + 0.5 * tie.mean())


def inverted_lower_end(p_value: Callable[[float], float], threshold: float, top: float) -> float:
    """0 if ``p_value(0) > threshold``, else where ``p_value`` first exceeds it on [0, top]
    (bisection to 1e-5)."""
    if p_value(0.0) > threshold:
        return 0.0
    if p_value(top) <= threshold:
        return top
    low, high = 0.0, top
    while high - low > 1e-5:
        mid = (low + high) / 2
        low, high = (mid, high) if p_value(mid) <= threshold else (low, mid)
    return low


LIBRARY_DRAWS = 2048


def lower_end_bracket(families: list[list[tuple[int, int]]], tail: float,
                      p_value: Callable[..., float] = monte_carlo_mid_p,
                      oracle_draws: int = 10_000, null_tail: float | None = None
                      ) -> tuple[float, float]:
    """Where the lower end of a test inversion at ``tail`` may lie given the Monte Carlo
    error of a 2,048-draw p-value and the oracle's own: the oracle's inversions at
    ``tail -+ 3`` combined standard errors (the statistic's z fixed at ``Phi^-1(1 - tail)``),
    widened by the library's bisection step (2**-10, erring low).  With ``null_tail`` the
    gap 0 is tested first at that level (its own z): the end is 0 where that test surely does
    not reject, and may be 0 where it may not."""
    def spread_at(level: float) -> float:
        return 3 * math.sqrt(level * (1 - level) * (1 / LIBRARY_DRAWS + 1 / oracle_draws))

    z = float(norm.ppf(1 - tail))
    spread = spread_at(tail)
    top = max(max(x / n for x, n in f if n) - min(x / n if n else 0.0 for x, n in f)
              for f in families)
    ends = [inverted_lower_end(lambda w: p_value(families, w, z), tail + sign * spread, top)
            for sign in (-1, 1)]
    low, high = ends[0] - 2.0**-10 - 1e-5, ends[1] + 2e-5
    if null_tail is not None:
        at_zero = p_value(families, 0.0, float(norm.ppf(1 - null_tail)))
        if at_zero > null_tail + spread_at(null_tail):
            return 0.0, 0.0
        if at_zero > null_tail - spread_at(null_tail):
            low = 0.0
    return low, high


def gap_upper_end(families: list[list[tuple[int, int]]], level: float,
                  upper_share: float | None = None) -> float:
    """The farthest pair end over the families at the one-sided point of ``upper_share (1 -
    level)``; by default 0.4 of it for two groups and 0.2 for more (the fewest in a family)."""
    if upper_share is None:
        upper_share = 0.4 if min(len(f) for f in families) <= 2 else 0.2
    z_up = float(norm.ppf(1 - upper_share * (1 - level)))
    return max(gap_by_hand(f, z_up, z_up)[1] for f in families)
