"""Candidate critical values for a fairness gap's interval, side by side on the same samples.

Run from the repository root::

    .venv/bin/python -m bench.gap_candidates --simulations 300

One family of group rates (a TPR gap): ``n`` rows, label base rate 0.3, ``K`` groups with
equal chances; every group's TPR is ``base`` (0.773 moderate, 0.977 confident) except group
0's, lowered by ``delta``, so the true gap is ``delta``.  Each sample's per-group counts go
through :func:`modelgate.fairness.gap_intervals.gap_interval` (Newcombe's pair intervals) at
the critical values each candidate picks; the interval is then widened to hold its point, as
the reports do.  Candidates (``alpha_l`` / ``alpha_u``: the ends' one-sided error shares):

* ``tukey``: lower end at Tukey's simultaneous value (``1 - alpha_l``), upper end at the
  one-pair point (the construction before issue #38's second round, with 5 % / 2.5 %);
* ``selected``: step two alone, the lower end's value from the pairs within ``slack``
  standard errors of the gap (:func:`~modelgate.fairness.gap_intervals.selected_critical_value`),
  no Tukey step; upper at the one-pair point;
* ``fitted``: ``selected`` plus an upper end calibrated on the fitted rates: the
  ``alpha_u`` point of ``max (T_ij - slack_ij)``, each pair's estimated slack plugged in (a
  parametric bootstrap under the fitted rates);
* ``two-step``: the shipped construction
  (:func:`~modelgate.fairness.gap_intervals.gap_interval_of_families`).

Prints, per cell, the breach rate (lower end above 0.03) at ``delta = 0`` and the coverage
(truth below / above) otherwise.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from modelgate.fairness import gap_intervals as gi
from scipy.special import ndtri


def _ends(method: str, x: np.ndarray, n: np.ndarray, alpha_l: float, alpha_u: float,
          slack: float) -> tuple[float, float]:
    z_up = float(ndtri(1 - alpha_u))
    if method == "two-step":
        saved = gi.LOWER_SHARE, gi.UPPER_SHARE
        gi.LOWER_SHARE, gi.UPPER_SHARE = alpha_l / 0.05, alpha_u / 0.05
        try:
            return gi.gap_interval_of_families([x], [n], 0.95)
        finally:
            gi.LOWER_SHARE, gi.UPPER_SHARE = saved
    if method == "tukey":
        z_low = gi.pairwise_critical_value(x.size, 1 - alpha_l)
    else:
        z_low = gi.selected_critical_value([x], [n], alpha_l, slack)
    if method == "fitted":
        z_up = max(_fitted_upper(x, n, alpha_u), 0.0)
    lo, hi = gi.gap_interval(x, n, z_low, z_up)
    return float(lo), float(hi)


def _fitted_upper(x: np.ndarray, n: np.ndarray, tail: float) -> float:
    """``-q_tail max_ij (T_ij - slack_ij)`` with the estimated slacks (pseudo-random draws)."""
    z2 = 1.959963984540054 ** 2
    q = (x + z2 / 2) / (n + z2)
    se = np.sqrt(q * (1 - q) / (n + z2))
    p = x / n
    i, j = np.nonzero(~np.eye(x.size, dtype=bool))
    s = np.hypot(se[i], se[j])
    slack = ((p[i] - p[j]).max() - (p[i] - p[j])) / s
    e = np.random.default_rng(0).standard_normal((4096, x.size)) * se
    return float(-np.quantile(((e[:, i] - e[:, j]) / s - slack).max(axis=1), tail))


def run(method: str, k: int, n_rows: int, base: float, delta: float, simulations: int,
        alpha_l: float, alpha_u: float, slack: float) -> tuple[float, float, float]:
    """Shares of samples with the truth below, above the interval, and a breach (> 0.03)."""
    rng = np.random.default_rng([k, n_rows, round(delta * 100), round(base * 1000)])
    rates = np.full(k, base)
    rates[0] -= delta
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
        lo, hi = min(lo, point), max(hi, point)
        tally += (truth < lo, truth > hi, lo > 0.03)
        used += 1
    return tuple(tally / max(used, 1))  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--simulations", type=int, default=300)
    parser.add_argument("--methods", nargs="+", default=["tukey", "selected", "fitted", "two-step"])
    parser.add_argument("--alpha-lower", type=float, default=0.04)
    parser.add_argument("--alpha-upper", type=float, default=0.02)
    parser.add_argument("--slack", type=float, default=gi.SELECTION_SLACK)
    args = parser.parse_args()
    for method in args.methods:
        start = time.perf_counter()
        print(f"\n### {method} (alpha lower {args.alpha_lower}, upper {args.alpha_upper}, "
              f"slack {args.slack}), {args.simulations} samples per cell\n")
        print("| model | n | K | breach at 0 | cover 0.05 (below/above) | cover 0.10 | cover 0.20 |")
        print("|---|---|---|---|---|---|---|")
        for name, base in (("moderate", 0.773), ("confident", 0.977)):
            for n_rows in (200, 2000):
                for k in (2, 3, 5, 10):
                    cells = []
                    for delta in (0.0, 0.05, 0.10, 0.20):
                        below, above, breach = run(method, k, n_rows, base, delta,
                                                   args.simulations, args.alpha_lower,
                                                   args.alpha_upper, args.slack)
                        cells.append(f"{breach:.1%}" if delta == 0 else
                                     f"{1 - below - above:.1%} ({below:.1%}/{above:.1%})")
                    print(f"| {name} | {n_rows:,} | {k} | " + " | ".join(cells) + " |", flush=True)
        print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
