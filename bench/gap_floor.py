"""Why a valid gap interval over-covers when one group stands apart (issue #38), in the normal model.

Run from the repository root::

    .venv/bin/python -m bench.gap_floor
    .venv/bin/python -m bench.gap_floor --groups 10 --samples 400000

The model: ``K`` group estimates ``x_k ~ N(mu_k, 1)`` (one standard error a unit), the gap
``max mu - min mu = t``.  A lower end that misses the gap in at most 4 % of samples must hold
that level at every configuration of rates with gap ``t``: one group apart (``K - 1`` pairs at
the gap), the groups split in two (``a (K - a)`` pairs), or spread evenly.  For a test of
``gap <= t`` on a statistic, the critical value valid at all of them is the largest of their
96 % points, and then the share of one-apart samples the test rejects is the most the lower
end can miss there, unless the data tell one group apart from a split (they cannot when
``t`` is about a standard error).  Two statistics: the observed range ``max x - min x`` (what
the shipped construction's largest pair lower end is, for groups of one size) and the
likelihood-ratio statistic ``min_w sum_k dist(x_k, [w, w + t])**2``.

The upper end, for an interval that holds its point (the observed range), can miss only in
samples whose observed range lies below the true gap: the last column.  So the coverage at
one group apart is at least ``1 - reject - min(0.02, range below)`` for these statistics.
The bench's cells in these units: moderate model, TPR with about 60 positives a group (ten
groups at n = 2,000): gaps 0.05, 0.10, 0.20 are 0.93, 1.85 and 3.7 standard errors; five
groups (120 positives): 1.3, 2.6, 5.2.  Prints a markdown table.
"""

from __future__ import annotations

import argparse

import numpy as np

LEVEL = 0.04  # the lower end's miss share (gap_intervals.LOWER_SHARE x 5 %)


def configurations(k: int, t: float) -> dict[str, np.ndarray]:
    """Group means at gap ``t``: the split of ``a`` groups at 0 and ``K - a`` at ``t``
    (``a = 1`` is one group apart), and an even spread."""
    out = {f"split {a}/{k - a}": np.r_[np.zeros(a), np.full(k - a, t)] for a in range(1, k // 2 + 1)}
    out["even"] = np.linspace(0.0, t, k)
    return out


def window_distance(x: np.ndarray, t: float) -> np.ndarray:
    """``min_w sum_k dist(x_k, [w, w + t])**2`` per row, over a grid of 201 positions between
    ``min x - t`` and ``max x``, where the minimum lies (a value a grid step above it at most)."""
    low, high = x.min(axis=1) - t, x.max(axis=1)
    best = np.full(x.shape[0], np.inf)
    for share in np.linspace(0.0, 1.0, 201):
        w = (low + (high - low) * share)[:, None]
        d = np.maximum(w - x, 0.0) + np.maximum(x - w - t, 0.0)
        best = np.minimum(best, (d * d).sum(axis=1))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[3, 5, 10])
    parser.add_argument("--gaps", type=float, nargs="+", default=[0.5, 0.93, 1.3, 1.85, 2.6, 3.7])
    parser.add_argument("--samples", type=int, default=100_000)
    args = parser.parse_args()
    rng = np.random.default_rng(20261207)
    print("| K | gap (SE) | statistic | least favourable | one apart rejected (the lower end's "
          "miss) | range below the gap | coverage at least |")
    print("|---|---|---|---|---|---|---|")
    for k in args.groups:
        for t in args.gaps:
            noise = rng.standard_normal((args.samples, k))
            draws = {name: noise + mu for name, mu in configurations(k, t).items()}
            one = draws[f"split 1/{k - 1}"]
            below = float((np.ptp(one, axis=1) < t).mean())
            for label, statistic in (("range", lambda x, t=t: np.ptp(x, axis=1)),
                                     ("likelihood ratio", lambda x, t=t: window_distance(x, t))):
                values = {name: statistic(x) for name, x in draws.items()}
                points = {name: float(np.quantile(v, 1.0 - LEVEL)) for name, v in values.items()}
                worst = max(points, key=points.__getitem__)
                rejected = float((values[f"split 1/{k - 1}"] > points[worst]).mean())
                floor = 1.0 - rejected - min(0.02, below)
                print(f"| {k} | {t:g} | {label} | {worst} | {rejected:.1%} | {below:.2%} | "
                      f"{floor:.1%} |", flush=True)


if __name__ == "__main__":
    main()
