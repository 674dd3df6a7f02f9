"""Candidate lower ends for a fairness gap's interval, side by side on the same samples.

Run from the repository root::

    .venv/bin/python -m bench.gap_candidates --simulations 300
    .venv/bin/python -m bench.gap_candidates --methods shipped --slack 0 --split half

One family of group rates (a TPR gap): ``n`` rows, label base rate 0.3, ``K`` groups with
equal chances; every group's TPR is ``base`` (0.773 moderate, 0.977 confident) except group
0's, lowered by ``delta``, so the true gap is ``delta``.  Each sample's per-group counts go
through each candidate; the interval is then widened to hold its point, as the reports do.
Candidates (``alpha_l`` / ``alpha_u``: the ends' one-sided error shares):

* ``shipped``: :func:`modelgate.fairness.gap_lower_end.lower_end`, the test inversion with a
  parametric bootstrap at the rates fitted under each hypothesis, the groups within
  ``--slack`` standard errors of an edge of the window put on it (the module's
  ``EDGE_SLACK`` unless given); upper end the one-pair point;
* ``two-step``: the previous construction, kept here for comparison: the lower end 0 unless
  Tukey's simultaneous pair intervals leave 0, else the farthest Newcombe pair interval at the
  ``1 - alpha_l`` point of the largest standardised difference over the pairs within
  ``--slack`` standard errors (2.5) of the gap (normal errors, quasi-random draws);
* ``tukey``: lower end at Tukey's simultaneous value (``1 - alpha_l``), upper end at the
  one-pair point (the construction before issue #38's second round, with 5 % / 2.5 %);
* ``selected``: ``two-step``'s step two alone, no Tukey step;
* ``fitted``: ``selected`` plus an upper end calibrated on the fitted rates: the
  ``alpha_u`` point of ``max (T_ij - slack_ij)``, each pair's estimated slack plugged in (a
  parametric bootstrap under the fitted rates);
* ``jeffreys``: ``two-step`` with the groups' equal-tailed Jeffreys intervals in the pair
  intervals instead of Wilson's (each tail closer to its share at a handful of counts);
* ``pooled-step-one``: ``two-step`` with step one a calibrated test: the lower end leaves 0
  only when the mid-p value of the largest pooled-variance pair statistic
  ``|p_i - p_j| / sqrt(p (1 - p) (1/n_i + 1/n_j))`` is at most ``alpha_l``, its null law from
  2,048 binomial draws of the groups at the pooled rate ``p`` (a parametric bootstrap of the
  hypothesis of equal rates, exact in the counts' discreteness);
* ``calibrated``: ``two-step`` with Tukey's value replaced by the critical value at which the
  pair intervals of the first 1,024 of those draws leave 0 in ``alpha_l`` of them (bisection),
  step two's value capped by it: the step-one size calibrated for the pair intervals
  themselves (a tenth of a second per gap for ten groups);
* ``union``: the shipped test inverted with a second statistic, the largest one-vs-rest lower
  end, its law also drawn at a one-apart fit (:mod:`bench.gap_union`);
* ``upper``: the shipped lower end with an upper end by test inversion of ``gap >= t`` on
  the range at a handful of least-favourable configurations (:mod:`bench.gap_upper`), not
  widened to hold the point;
* ``joint-upper``: that upper end with the union's lower end, its two critical values chosen
  together on the draws of both fits (:func:`bench.gap_union.joint_union_lower_end`) to reject
  the one-apart fit's draws most often;
* ``balanced-upper``: ``joint-upper`` with the critical values chosen to make the smaller of
  the two fits' rejection shares as large as it can be;
* ``one-pair``: every pair's lower end at the one-pair point ``Phi^-1(1 - alpha_l)``, no
  allowance for the number of pairs (what the lower end would need to miss as often as
  ``alpha_l`` with ten groups of a handful of positives; not valid at a gap of 0).

``--split half`` lowers half of the groups instead of group 0 alone: the configuration with
the most pairs at the gap, where a lower end calibrated on fewer pairs would miss too often.

Prints, per cell, the breach rate (lower end above 0.03) at ``delta = 0`` and the coverage
(truth below / above) otherwise.
"""

from __future__ import annotations

import argparse
import time
from functools import lru_cache

import numpy as np
from modelgate.fairness import gap_intervals as gi
from modelgate.fairness import gap_lower_end as gle
from modelgate.fairness import score_intervals as si
from scipy.special import betaincinv, ndtr, ndtri
from scipy.stats import binom, qmc, studentized_range

from bench.gap_union import joint_union_lower_end, union_lower_end
from bench.gap_upper import inverted_upper_end

NULL_DRAWS = 2048
# candidates whose upper end may lie below the (upward-biased) observed range: not widened
UNWIDENED_UPPER = ("upper", "joint-upper", "balanced-upper")
SELECTION_SLACK = 2.5  # the previous construction's step-two selection, standard errors


def _ends(method: str, x: np.ndarray, n: np.ndarray, alpha_l: float, alpha_u: float,
          slack: float) -> tuple[float, float]:
    z_up = float(ndtri(1 - alpha_u))
    if method == "jeffreys":
        saved = si.wilson_bounds
        si.wilson_bounds = jeffreys_bounds  # the pair intervals' one-group interval
        try:
            return _two_step(x, n, alpha_l, alpha_u, slack)
        finally:
            si.wilson_bounds = saved
    if method == "two-step":
        return _two_step(x, n, alpha_l, alpha_u, slack)
    if method == "shipped":
        saved_slack = gle.EDGE_SLACK
        gle.EDGE_SLACK = slack
        try:
            lower = gle.lower_end([(x, n)], alpha_l)
        finally:
            gle.EDGE_SLACK = saved_slack
        return lower, float(gi.gap_interval(x, n, z_up, z_up)[1])
    if method == "union":
        return union_lower_end(x, n, alpha_l), float(gi.gap_interval(x, n, z_up, z_up)[1])
    if method == "upper":
        return gle.lower_end([(x, n)], alpha_l), inverted_upper_end(x, n, alpha_u)
    if method in ("joint-upper", "balanced-upper"):
        return (joint_union_lower_end(x, n, alpha_l, method == "balanced-upper"),
                inverted_upper_end(x, n, alpha_u))
    if method == "pooled-step-one":
        hi = float(gi.gap_interval(x, n, _tukey_value(x.size, 1 - alpha_l), z_up)[1])
        if _pooled_mid_p(x, n) > alpha_l:
            return 0.0, hi
        z_low = _selected_value(x, n, alpha_l, slack)
        return float(gi.gap_interval(x, n, z_low, z_up)[0]), hi
    if method == "calibrated":
        z_one = _calibrated_value(x, n, alpha_l)
        lo, hi = gi.gap_interval(x, n, z_one, z_up)
        if lo <= 0:
            return 0.0, float(hi)
        z_low = min(_selected_value(x, n, alpha_l, slack), z_one)
        return float(gi.gap_interval(x, n, z_low, z_up)[0]), float(hi)
    if method == "one-pair":
        lo, hi = gi.gap_interval(x, n, float(ndtri(1 - alpha_l)), z_up)
        return float(lo), float(hi)
    if method == "tukey":
        z_low = _tukey_value(x.size, 1 - alpha_l)
    else:
        z_low = _selected_value(x, n, alpha_l, slack)
    if method == "fitted":
        z_up = max(_fitted_upper(x, n, alpha_u), 0.0)
    lo, hi = gi.gap_interval(x, n, z_low, z_up)
    return float(lo), float(hi)


def jeffreys_bounds(successes: np.ndarray, trials: np.ndarray, z: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed Jeffreys interval (Beta(x + 1/2, n - x + 1/2) quantiles at Phi(-z), Phi(z);
    0 at x = 0, 1 at x = n; Brown, Cai and DasGupta 2001)."""
    x, n = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    tail = float(ndtr(-z))
    with np.errstate(invalid="ignore", divide="ignore"):
        a, b = x + 0.5, np.maximum(n - x, 0.0) + 0.5
        lower = np.where(x <= 0, 0.0, betaincinv(a, b, tail))
        upper = np.where(x >= n, 1.0, betaincinv(a, b, 1.0 - tail))
    return np.minimum(lower, x / np.maximum(n, 1)), np.maximum(upper, x / np.maximum(n, 1))


def _pooled_statistic(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The largest pooled-variance pair statistic of each row of ``x`` (0 at a pooled rate of
    0 or 1)."""
    i, j = np.triu_indices(n.size, 1)
    rate, pooled = x / n, x.sum(axis=-1) / n.sum()
    largest = (np.abs(rate[..., i] - rate[..., j]) / np.sqrt(1 / n[i] + 1 / n[j])).max(axis=-1)
    spread = pooled * (1 - pooled)
    return np.where(spread > 0, largest / np.sqrt(np.where(spread > 0, spread, 1.0)), 0.0)


@lru_cache(maxsize=16)
def _uniforms(groups: int) -> np.ndarray:
    return np.random.default_rng(20261205).random((NULL_DRAWS, groups))


def _null_counts(x: np.ndarray, n: np.ndarray) -> np.ndarray | None:
    """The fixed uniforms through each group's binomial distribution function at the pooled
    rate, ``(NULL_DRAWS, K)``; None at a pooled rate of 0 or 1."""
    pooled = x.sum() / n.sum()
    if pooled <= 0 or pooled >= 1:
        return None
    trials = n.astype(np.int64)
    cdf = binom.cdf(np.arange(trials.max() + 1)[None, :], trials[:, None], pooled)
    u = _uniforms(n.size)
    draws = np.column_stack([np.searchsorted(cdf[g, :trials[g] + 1], u[:, g])
                             for g in range(n.size)]).astype(float)
    return np.minimum(draws, n)


def _calibrated_value(x: np.ndarray, n: np.ndarray, tail: float) -> float:
    """The critical value at which the pair intervals of the null draws leave 0 in ``tail`` of
    them (1,024 draws, bisection to 0.01); Tukey's where every rate is 0 or 1."""
    draws = _null_counts(x, n)
    if draws is None:
        return _tukey_value(n.size, 1 - tail)
    draws = draws[:1024]
    trials = np.broadcast_to(n, draws.shape)
    low, high = 1.0, 5.0
    while high - low > 0.01:
        mid = (low + high) / 2
        share = float((gi.gap_interval(draws, trials, mid, mid)[0] > 0).mean())
        low, high = (mid, high) if share > tail else (low, mid)
    return high


def _pooled_mid_p(x: np.ndarray, n: np.ndarray) -> float:
    """Mid-p value of the largest pooled pair statistic under equal rates at the pooled rate,
    from fixed uniforms through each group's binomial distribution function."""
    draws = _null_counts(x, n)
    if draws is None:
        return 1.0
    null, observed = _pooled_statistic(draws, n), _pooled_statistic(x, n)
    tie = np.isclose(null, observed, rtol=1e-9, atol=0.0)
    return float(((null > observed) & ~tie).mean() + 0.5 * tie.mean())


def _ordered_pairs(x: np.ndarray, n: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each group's Agresti-Coull standard error (z = 1.96) and, over the ordered pairs
    ``(i, j)``, the rate difference ``p_i - p_j`` and its standard error."""
    z2 = 1.959963984540054 ** 2
    q = (x + z2 / 2) / (n + z2)
    se = np.sqrt(q * (1 - q) / (n + z2))
    p = x / n
    i, j = np.nonzero(~np.eye(x.size, dtype=bool))
    return se, p[i] - p[j], i, j, np.hypot(se[i], se[j])


def _fitted_upper(x: np.ndarray, n: np.ndarray, tail: float) -> float:
    """``-q_tail max_ij (T_ij - slack_ij)`` with the estimated slacks (pseudo-random draws)."""
    se, d, i, j, s = _ordered_pairs(x, n)
    slack = (d.max() - d) / s
    e = np.random.default_rng(0).standard_normal((4096, x.size)) * se
    return float(-np.quantile(((e[:, i] - e[:, j]) / s - slack).max(axis=1), tail))


def _tukey_value(groups: int, level: float) -> float:
    """Tukey's critical value for all pairwise differences of ``groups`` normal estimates,
    ``q(level; groups, inf) / sqrt(2)`` (the previous construction's step one)."""
    if groups == 2:
        return float(ndtri(0.5 + level / 2))
    return float(studentized_range.ppf(level, groups, np.inf) / np.sqrt(2.0))


@lru_cache(maxsize=64)
def _normal_draws(dimension: int) -> np.ndarray:
    points = qmc.Sobol(dimension, scramble=True, seed=20261205).random_base2(12)
    return ndtri(points)


def _selected_value(x: np.ndarray, n: np.ndarray, tail: float, slack: float) -> float:
    """The ``1 - tail`` point of the largest standardised difference over the ordered pairs
    within ``slack`` standard errors of the largest (Agresti-Coull errors, 4,096 quasi-random
    normal draws): the previous construction's step two."""
    se, d, i, j, s = _ordered_pairs(x, n)
    keep = (s > 0) & (d.max() - d <= slack * s)
    i, j, s = i[keep], j[keep], s[keep]
    if i.size <= 1:
        return float(ndtri(1 - tail))
    e = _normal_draws(x.size) * se
    return float(np.quantile(((e[:, i] - e[:, j]) / s).max(axis=1), 1 - tail))


def _two_step(x: np.ndarray, n: np.ndarray, alpha_l: float, alpha_u: float, slack: float
              ) -> tuple[float, float]:
    """The previous construction (one family): the lower end 0 unless Tukey's pair intervals
    leave 0, else the farthest pair interval at the selected pairs' critical value."""
    z_up = float(ndtri(1 - alpha_u))
    lo, hi = gi.gap_interval(x, n, _tukey_value(x.size, 1 - alpha_l), z_up)
    if lo <= 0:
        return 0.0, float(hi)
    return float(gi.gap_interval(x, n, _selected_value(x, n, alpha_l, slack), z_up)[0]), float(hi)


def run(method: str, k: int, n_rows: int, base: float, delta: float, simulations: int,
        alpha_l: float, alpha_u: float, slack: float, lowered: int = 1
        ) -> tuple[float, float, float]:
    """Shares of samples with the truth below, above the interval, and a breach (> 0.03);
    the first ``lowered`` groups' rates are ``delta`` below the others'."""
    rng = np.random.default_rng([k, n_rows, round(delta * 100), round(base * 1000)])
    rates = np.full(k, base)
    rates[:lowered] -= delta
    truth = float(np.ptp(rates))
    tally = np.zeros(3)
    used = 0
    for positives in rng.binomial(n_rows, 0.3, size=simulations):
        trials = rng.multinomial(positives, np.full(k, 1 / k))
        x = rng.binomial(trials, rates)
        keep = trials > 0
        if keep.sum() < 2:
            continue
        x, trials = x[keep].astype(float), trials[keep].astype(float)
        lo, hi = _ends(method, x, trials, alpha_l, alpha_u, slack)
        point = float(np.ptp(x / trials))
        lo, hi = min(lo, point), (hi if method in UNWIDENED_UPPER else max(hi, point))
        tally += (truth < lo, truth > hi, lo > 0.03)
        used += 1
    below, above, breach = (float(v) for v in tally / max(used, 1))
    return below, above, breach


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--simulations", type=int, default=300)
    parser.add_argument("--methods", nargs="+", default=["tukey", "selected", "fitted", "two-step"])
    parser.add_argument("--alpha-lower", type=float, default=0.04)
    parser.add_argument("--alpha-upper", type=float, default=0.02)
    parser.add_argument("--slack", type=float, default=None,
                        help="standard errors: the previous step two's selection slack (2.5), "
                             "or the shipped lower end's edge slack (its EDGE_SLACK)")
    parser.add_argument("--split", choices=("one", "half"), default="one",
                        help="lower group 0's rate, or the first half's")
    parser.add_argument("--cells", nargs="+", default=None,
                        help="only these cells, e.g. moderate/200/10 confident/2000/2")
    args = parser.parse_args()
    for method in args.methods:
        slack = args.slack if args.slack is not None else (
            gle.EDGE_SLACK if method == "shipped" else SELECTION_SLACK)
        start = time.perf_counter()
        # the union's and the inverted upper end's lower ends use the shipped fit's own slack
        uses_slack = method not in ("tukey", "one-pair", "union", *UNWIDENED_UPPER)
        print(f"\n### {method} (alpha lower {args.alpha_lower}, upper {args.alpha_upper}, "
              + (f"slack {slack}, " if uses_slack else "")
              + f"{args.split} lowered), {args.simulations} samples per cell\n")
        print("| model | n | K | breach at 0 | cover 0.05 (below/above) | cover 0.10 | cover 0.20 |")
        print("|---|---|---|---|---|---|---|")
        for name, base in (("moderate", 0.773), ("confident", 0.977)):
            for n_rows in (200, 2000):
                for k in (2, 3, 5, 10):
                    if args.cells and f"{name}/{n_rows}/{k}" not in args.cells:
                        continue
                    cells = []
                    for delta in (0.0, 0.05, 0.10, 0.20):
                        below, above, breach = run(method, k, n_rows, base, delta,
                                                   args.simulations, args.alpha_lower,
                                                   args.alpha_upper, slack,
                                                   k // 2 if args.split == "half" else 1)
                        cells.append(f"{breach:.1%}" if delta == 0 else
                                     f"{1 - below - above:.1%} ({below:.1%}/{above:.1%})")
                    print(f"| {name} | {n_rows:,} | {k} | " + " | ".join(cells) + " |", flush=True)
        print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
