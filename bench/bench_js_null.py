"""False alarms and power of the drift rule with and without the size-aware nulls (issue #39).

Per current-sample size ``m`` and feed, the share of intervals the drift core
(:mod:`modelgate.drift.data_drift`, ``min_values=1`` so the rule itself is measured) calls
``drift``: "new" is the default rule (thresholds at least the null's 0.99 quantile,
:mod:`modelgate.drift.js_null`, :mod:`modelgate.drift.w1_null`), "old" the same with
``null_level=None`` (``max(floor, 1.8 x size-adjusted half-split baseline)``). Each cell:
``--refs`` references (each a fresh sample of 5,000 rows from the feed, its sketch seeded
afresh) times ``--reps`` current samples.

Feeds (shift = the "modest" one, 0 = no change, where every alarm is false):

- categorical 5 levels (0.4, 0.25, 0.15, 0.12, 0.08): 0.15 of the mass moved from the first to
  the last; categorical 2 levels (0.7, 0.3): 0.1 moved; categorical 20 levels, Zipf-like
  (shares proportional to 1/rank): 0.1 moved from the first to the last five evenly;
- numeric normal and exponential, decided by binned JS (``numeric_statistic="js_divergence"``,
  10 reference quantile bins) and by normalised W1 (the default): 0.5 reference standard
  deviations added.

    nice .venv/bin/python -m bench.bench_js_null                 # 20 refs x 100 reps per cell
    nice .venv/bin/python -m bench.bench_js_null --refs 10 --reps 50
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Literal

import numpy as np
from modelgate.drift.data_drift import DriftThresholds, categorical_drift_from_counts, numeric_drift
from modelgate.drift.reference import build_categorical_reference_from_counts, build_numeric_reference

SIZES = (10, 20, 50, 100, 200, 500, 1000)
N_REF = 5000


def _zipf(k: int) -> np.ndarray:
    w = 1.0 / np.arange(1, k + 1)
    return w / w.sum()


def _moved(p: np.ndarray, mass: float, to: int) -> np.ndarray:
    q = p.copy()
    q[0] -= mass
    q[-to:] += mass / to
    return q


CATEGORICAL = {
    "categorical 5 levels": (np.array([0.4, 0.25, 0.15, 0.12, 0.08]), 0.15, 1),
    "categorical 2 levels": (np.array([0.7, 0.3]), 0.1, 1),
    "categorical 20 levels": (_zipf(20), 0.1, 5),
}
NUMERIC: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "normal": lambda rng, k: rng.normal(0.0, 1.0, k),
    "exponential": lambda rng, k: rng.exponential(1.0, k),
}
RULES = {"new": DriftThresholds(min_values=1), "old": DriftThresholds(min_values=1, null_level=None)}
STATISTICS: tuple[tuple[Literal["js_divergence", "wasserstein_normalised"], str], ...] = (
    ("js_divergence", "binned JS"), ("wasserstein_normalised", "W1"))


def _categorical(name: str, rng: np.random.Generator, refs: int, reps: int) -> dict[tuple, float]:
    probs, mass, to = CATEGORICAL[name]
    shifted = _moved(probs, mass, to)
    labels = [f"l{i}" for i in range(probs.size)]
    hits: dict[tuple, int] = {}
    for _ in range(refs):
        counts = dict(zip(labels, rng.multinomial(N_REF, probs).tolist(), strict=True))
        ref = build_categorical_reference_from_counts(counts, name="c", seed=int(rng.integers(2**31)))
        for shift, p in (("none", probs), ("modest", shifted)):
            for m in SIZES:
                for _ in range(reps):
                    cur = {k: c for k, c in zip(labels, rng.multinomial(m, p).tolist(), strict=True) if c}
                    for rule, t in RULES.items():
                        key = (name, "JS", rule, shift, m)
                        hits[key] = hits.get(key, 0) + (
                            categorical_drift_from_counts(ref, cur, thresholds=t).verdict == "drift")
    return {k: v / (refs * reps) for k, v in hits.items()}


def _numeric(name: str, rng: np.random.Generator, refs: int, reps: int) -> dict[tuple, float]:
    draw = NUMERIC[name]
    hits: dict[tuple, int] = {}
    for _ in range(refs):
        ref = build_numeric_reference(draw(rng, N_REF), name="x", seed=int(rng.integers(2**31)))
        delta = 0.5 * ref.scale
        for shift, d in (("none", 0.0), ("modest", delta)):
            for m in SIZES:
                for _ in range(reps):
                    cur = draw(rng, m) + d
                    for stat, label in STATISTICS:
                        for rule, t in RULES.items():
                            tt = DriftThresholds(min_values=1, numeric_statistic=stat,
                                                 null_level=t.null_level)
                            key = (name, label, rule, shift, m)
                            hits[key] = hits.get(key, 0) + (
                                numeric_drift(ref, cur, thresholds=tt).verdict == "drift")
    return {k: v / (refs * reps) for k, v in hits.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refs", type=int, default=20, help="references per feed")
    parser.add_argument("--reps", type=int, default=100, help="current samples per reference, size and shift")
    parser.add_argument("--seed", type=int, default=20261205)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    rates: dict[tuple, float] = {}
    for name in CATEGORICAL:
        rates |= _categorical(name, rng, args.refs, args.reps)
    for name in NUMERIC:
        rates |= _numeric(name, rng, args.refs, args.reps)
    rows = sorted({k[:4] for k in rates}, key=lambda r: (r[3] != "none", r[0], r[1], r[2] != "new"))
    print("| feed | statistic | rule | shift | " + " | ".join(f"m={m}" for m in SIZES) + " |")
    print("|---|---|---|---|" + "---|" * len(SIZES))
    for row in rows:
        cells = " | ".join(f"{100 * rates[(*row, m)]:.1f}" for m in SIZES)
        print(f"| {row[0]} | {row[1]} | {row[2]} | {'none (false alarms)' if row[3] == 'none' else 'modest'}"
              f" | {cells} |")
    worst = max(v for k, v in rates.items() if k[2] == "new" and k[3] == "none" and k[4] >= 50)
    print(f"largest false-alarm rate of the new rule at m >= 50: {100 * worst:.1f} %")
    print(f"{args.refs} references x {args.reps} samples per cell, {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
