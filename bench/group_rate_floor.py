"""Exact coverage of a group's rate interval on the fairness bench's populations (issue #38).

Run from the repository root::

    .venv/bin/python -m bench.group_rate_floor            # both tables of bench/RESULTS.md
    .venv/bin/python -m bench.group_rate_floor --deltas 0.05 0.1 0.2

``bench/bench_fairness_coverage.py`` measures the groups' 95 % rate intervals by simulation (its
last column).  Here the same coverage is computed exactly, with no sampling error, for the
shipped interval and five textbook ones, so that what no interval can reach is told apart from
what the shipped one misses.  In a sample of ``n`` rows a group's trials (its positives for the
TPR, negatives for the FPR, rows for the selection rate, predicted positives for the PPV) are
binomial with the population's cell probabilities, and given ``m`` trials its successes are
binomial at the group's rate; the coverage over groups and samples is therefore

    sum_g sum_{m >= 1} P(m_g = m) C(m, p_g)  /  sum_g P(m_g >= 1),

``C(m, p)`` the exact coverage of the interval at ``m`` trials and rate ``p`` (a sum of the
binomial law over the counts whose interval holds ``p``).  Groups without trials have no interval
and count in neither sum, as in the simulation.

A second table shows why the confident model at ``n = 200`` does not land in 93-97 %: at a
handful of trials ``m`` and a rate ``p`` near 1, an interval whose ends rise with the count holds
``p`` either at ``m - 1`` successes (and covers at least ``P(X >= m - 1)``) or not (and covers at
most ``P(X = m)``); nothing lies between.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

import numpy as np
from modelgate.fairness.score_intervals import modified_wilson_bounds, wilson_bounds
from scipy.stats import beta, binom

from bench.bench_fairness_coverage import MODELS, PI, Z95, Model, population
from bench.gap_candidates import jeffreys_bounds

ALPHA = 0.05
Ends = tuple[np.ndarray, np.ndarray]


def clopper_pearson(x: np.ndarray, m: np.ndarray) -> Ends:
    """The exact (Clopper-Pearson) interval: Beta quantiles of the tail sums."""
    lower = np.where(x <= 0, 0.0, beta.ppf(ALPHA / 2, np.maximum(x, 1), m - x + 1))
    upper = np.where(x >= m, 1.0, beta.ppf(1 - ALPHA / 2, x + 1, np.maximum(m - x, 1)))
    return lower, upper


def mid_p(x: np.ndarray, m: np.ndarray) -> Ends:
    """The mid-p interval: each end where the tail beyond ``x`` plus half of ``P(X = x)`` is
    ``alpha / 2``, found by bisection (both tails are monotone in the rate)."""
    def root(excess: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        low, high = np.zeros_like(x, dtype=float), np.ones_like(x, dtype=float)
        for _ in range(50):
            middle = (low + high) / 2
            below = excess(middle) < 0
            low, high = np.where(below, middle, low), np.where(below, high, middle)
        return (low + high) / 2

    lower = root(lambda p: binom.sf(x, m, p) + binom.pmf(x, m, p) / 2 - ALPHA / 2)
    upper = root(lambda p: ALPHA / 2 - binom.cdf(x - 1, m, p) - binom.pmf(x, m, p) / 2)
    return np.where(x <= 0, 0.0, lower), np.where(x >= m, 1.0, upper)


def agresti_coull(x: np.ndarray, m: np.ndarray) -> Ends:
    """Agresti and Coull's interval: Wald's around ``(x + z^2/2) / (m + z^2)``, clipped."""
    total = m + Z95 ** 2
    centre = (x + Z95 ** 2 / 2) / total
    half = Z95 * np.sqrt(centre * (1 - centre) / total)
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


INTERVALS: dict[str, Callable[[np.ndarray, np.ndarray], Ends]] = {
    "modified Wilson (shipped)": lambda x, m: modified_wilson_bounds(x, m, Z95),
    "Wilson": lambda x, m: wilson_bounds(x, m, Z95),
    "Jeffreys": lambda x, m: jeffreys_bounds(x, m, Z95),
    "mid-p": mid_p,
    "Clopper-Pearson": clopper_pearson,
    "Agresti-Coull": agresti_coull,
}


@functools.cache
def _ends(name: str, m: int) -> Ends:
    """The interval's ends at every count ``0..m`` of ``m`` trials."""
    x = np.arange(m + 1, dtype=float)
    return INTERVALS[name](x, np.full(m + 1, float(m)))


def coverage_at(name: str, m: int, p: float) -> float:
    """Exact coverage of the interval ``name`` at ``m`` trials and rate ``p``."""
    lower, upper = _ends(name, m)
    return float(binom.pmf(np.arange(m + 1), m, p)[(lower <= p) & (p <= upper)].sum())


def rate_coverage(name: str, model: Model, k: int,
                  n: int, delta: float) -> list[float]:
    """Exact coverage over groups and samples of ``n`` rows, per rate (TPR, FPR, selection
    rate, PPV), of the population of ``bench_fairness_coverage`` (group 0's TPR lowered by
    ``delta``)."""
    cells, _, rates = population(model, k, delta)  # cells: tn, fp, fn, tp per group
    trials_share = np.stack([cells[:, 2] + cells[:, 3], cells[:, 0] + cells[:, 1],
                             cells.sum(axis=1), cells[:, 1] + cells[:, 3]])
    out = []
    for share, rate in zip(trials_share, rates, strict=True):
        held = weight = 0.0
        for q, p in zip(share, rate, strict=True):
            m = np.arange(1, n + 1)
            law = binom.pmf(m, n, q)
            keep = law > 1e-10  # the rest weighs less than 1e-7 in all
            held += sum(w * coverage_at(name, int(mi), float(p))
                        for mi, w in zip(m[keep], law[keep], strict=True))
            weight += float(law[keep].sum())
        out.append(held / weight)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deltas", type=float, nargs="+", default=[0.05, 0.10, 0.20])
    args = parser.parse_args()
    results: dict[str, dict[tuple[str, int, int, float], list[float]]] = {
        name: {} for name in INTERVALS}
    cases = [(model, k, n, d) for model in MODELS for k in (2, 3, 5, 10) for n in (200, 2000)
             for d in args.deltas]
    for name in INTERVALS:
        for model, k, n, d in cases:
            results[name][(model.name, k, n, d)] = rate_coverage(name, model, k, n, d)
    _by_cell(results, cases)
    _summary(results)
    _dichotomy()


def _by_cell(results: dict[str, dict], cases: list) -> None:
    print(f"### Exact coverage, TPR / FPR / selection / PPV (base rate {PI}; delta "
          + ", ".join(f"{d:.2f}" for d in sorted({c[3] for c in cases})) + " pooled: the lowest "
          "and highest over them)\n")
    print("| model | K | n | " + " | ".join(INTERVALS) + " |")
    print("|---|---|---|" + "---|" * len(INTERVALS))
    for model, k, n in dict.fromkeys((c[0].name, c[1], c[2]) for c in cases):
        row = []
        for name in INTERVALS:
            values = np.array([v for key, v in results[name].items() if key[:3] == (model, k, n)])
            low, high = values.min(axis=0), values.max(axis=0)
            row.append(" / ".join(_mark(lo, hi) for lo, hi in zip(low, high, strict=True)))
        print(f"| {model} | {k} | {n:,} | " + " | ".join(row) + " |")


def _mark(low: float, high: float) -> str:
    text = f"{100 * low:.1f}" if round(100 * low, 1) == round(100 * high, 1) \
        else f"{100 * low:.1f}-{100 * high:.1f}"
    return text if low >= 0.93 and high <= 0.97 else f"**{text}**"


def _summary(results: dict[str, dict]) -> None:
    print("\n| interval | (cell, rate) pairs in 93-97 % | below | above | lowest | highest |")
    print("|---|---|---|---|---|---|")
    for name, cells in results.items():
        values = np.array(list(cells.values())).ravel()
        print(f"| {name} | {int(((values >= 0.93) & (values <= 0.97)).sum())} of {values.size} "
              f"| {int((values < 0.93).sum())} | {int((values > 0.97).sum())} "
              f"| {100 * values.min():.1f} % | {100 * values.max():.1f} % |")


def _dichotomy() -> None:
    p = float(population(MODELS[1], 10, 0.0)[2][0, 0])
    print(f"\n### At m trials and the confident model's TPR {p:.4f}: holding p at m - 1 or not\n")
    print("| m | P(X = m) | P(X >= m - 1) | " + " | ".join(INTERVALS) + " |")
    print("|---|---|---|" + "---|" * len(INTERVALS))
    for m in range(2, 13):
        row = [f"{100 * coverage_at(name, m, p):.1f}" for name in INTERVALS]
        print(f"| {m} | {100 * binom.pmf(m, m, p):.1f} | {100 * binom.sf(m - 2, m, p):.1f} | "
              + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
