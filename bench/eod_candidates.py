"""Candidate intervals for the equalized-odds difference, side by side on the same simulated sets.

Run from the repository root::

    .venv/bin/python -m bench.eod_candidates --scenario moderate --n 200 --simulations 1000

The population and the two groups are those of :mod:`bench.bench_coverage`; each set is
summarised as its ``(groups, 4)`` confusion-count table and resampled by a multinomial
draw of that table, as :func:`modelgate.fairness.metrics.fairness_report_from_table`
does (this script's own generator and gap code, numpy and scipy only).  The gap
``max(|tpr_a - tpr_b|, |fpr_a - fpr_b|)`` is a maximum of absolute values, so its
estimate is biased upwards when the true gaps are small next to their noise; the
candidates differ in how they deal with that bias.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.stats import norm

from bench.bench_coverage import P_B, PI, SCENARIOS, Scenario, _true_eod

Z = float(norm.ppf(0.975))


def _gaps(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signed TPR and FPR differences (group a minus b) of count tables ``(..., 2, 4)``."""
    tn, fp, fn, tp = (t[..., i].astype(float) for i in range(4))
    with np.errstate(all="ignore"):
        tpr, fpr = tp / (tp + fn), fp / (fp + tn)
    return tpr[..., 0] - tpr[..., 1], fpr[..., 0] - fpr[..., 1]


def _abs_interval(lo: float, hi: float) -> tuple[float, float]:
    """The interval of ``|D|`` implied by one of ``D``."""
    if lo > 0:
        return lo, hi
    if hi < 0:
        return -hi, -lo
    return 0.0, max(-lo, hi)


def _one(sc: Scenario, n: int, rng: np.random.Generator, resamples: int) -> dict:
    y = (rng.random(n) < PI).astype(np.int64)
    b = rng.random(n) < P_B
    x = rng.normal(sc.d * y + np.where(b, sc.shift_b, 0.0), 1.0)
    pred = (x >= -sc.beta0 / sc.beta).astype(np.int64)
    cell = b.astype(np.int64) * 4 + 2 * y + pred
    counts = np.bincount(cell, minlength=8).reshape(2, 4)
    draws = rng.multinomial(n, counts.ravel() / n, size=resamples).reshape(resamples, 2, 4)
    (dt, df), (bt, bf) = _gaps(counts), _gaps(draws)
    point = max(abs(dt), abs(df))
    boot = np.maximum(np.abs(bt), np.abs(bf))
    boot = boot[np.isfinite(boot)]
    out = {}
    q_lo, q_hi = np.quantile(boot, [0.025, 0.975])
    out["percentile"] = (q_lo, q_hi)
    out["basic (clipped to [0, 1])"] = (max(2 * point - q_hi, 0.0), min(2 * point - q_lo, 1.0))
    share = (np.sum(boot < point) + 0.5 * np.sum(boot == point)) / boot.size
    z0 = norm.ppf(np.clip(share, 0.5 / boot.size, 1 - 0.5 / boot.size))
    out["bias-corrected percentile"] = tuple(np.quantile(boot, norm.cdf([2 * z0 - Z, 2 * z0 + Z])))
    # bias-shifted percentile: move the replicates by their mean bias
    shift = boot.mean() - point
    out["percentile minus bootstrap bias"] = (max(q_lo - shift, 0.0), min(q_hi - shift, 1.0))
    out["percentile, lower end minus bootstrap bias"] = (max(q_lo - max(shift, 0.0), 0.0), q_hi)
    for level, tag in ((0.95, "95 %"), (0.975, "97.5 % each")):
        a = (1 - level) / 2
        ends = []
        for bd in (bt, bf):
            bd = bd[np.isfinite(bd)]
            lo, hi = np.quantile(bd, [a, 1 - a])
            ends.append(_abs_interval(lo, hi))
        out[f"max of |signed gap| percentile intervals ({tag})"] = (
            max(ends[0][0], ends[1][0]), max(ends[0][1], ends[1][1]))
    out["point"] = (point, point)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="moderate", choices=sorted(SCENARIOS))
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--simulations", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sc = SCENARIOS[args.scenario]
    truth = _true_eod(sc)
    rng = np.random.default_rng([args.seed, args.n])
    rows: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.simulations):
        for k, ends in _one(sc, args.n, rng, args.resamples).items():
            rows.setdefault(k, []).append(ends)
    points = np.array(rows.pop("point"))[:, 0]
    print(f"{args.scenario}, n = {args.n}, {args.simulations} sets, {args.resamples} resamples, "
          f"true EOD {truth:.4f}, mean estimate {points.mean():.4f}")
    print("| method | coverage | below | above | median width | point outside |")
    print("|---|---:|---:|---:|---:|---:|")
    for k, ends in rows.items():
        lo, hi = np.array(ends).T
        below, above = np.mean(truth < lo), np.mean(truth > hi)
        outside = np.mean((points < lo) | (points > hi))
        print(f"| {k} | {100 * (1 - below - above):.1f} % | {100 * below:.1f} % "
              f"| {100 * above:.1f} % | {np.median(hi - lo):.4g} | {100 * outside:.1f} % |")


if __name__ == "__main__":
    main()
