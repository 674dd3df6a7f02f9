"""How many current values a per-feature drift verdict needs: false alarms vs power by size.

For each current-sample size ``m`` the drift core's own verdict rule
(:mod:`modelgate.drift.data_drift`, default thresholds: ``max(floor, 1.8 x size-adjusted
baseline, q_null(m))`` with the size-aware null at its 0.99 quantile) is applied to seeded
samples drawn from the reference's distribution (no shift: every alarm is false) and from a
modestly shifted one (power). Reference: 5,000 values, fixed per distribution; ``--reps``
current samples per size and shift.

- numeric, normalised W1 (the default statistic) and binned JS (``numeric_statistic=
  "js_divergence"``): normal and exponential data, shift = 0.5 reference standard deviations
  added to every value;
- categorical, JS: 5 levels with probabilities (0.4, 0.25, 0.15, 0.12, 0.08), shift = 0.15 of
  the mass moved from the first level to the last.

Prints one markdown table (alarm rate per size, statistic and shift), then, per statistic, the
smallest size where false alarms stay at or under 10 % *and* the modest shift is found at least
half the time (on both distributions for a numeric statistic). The defaults the drift pipeline
uses (``DriftThresholds.minimum``) follow it: 50 for W1 (its bar is met from 40) and categorical
JS, 100 for binned JS (bench/RESULTS.md says why categorical JS keeps 50).

    .venv/bin/python -m bench.bench_drift_min_rows            # about half a minute on one core
    .venv/bin/python -m bench.bench_drift_min_rows --reps 2000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from modelgate.drift.data_drift import DriftThresholds, categorical_drift_from_counts, numeric_drift
from modelgate.drift.reference import build_categorical_reference_from_counts, build_numeric_reference

SIZES = (1, 2, 5, 10, 20, 30, 40, 50, 75, 100, 150, 200)
LEVELS = ("a", "b", "c", "d", "e")
PROBS = np.array([0.4, 0.25, 0.15, 0.12, 0.08])
SHIFTED = PROBS + np.array([-0.15, 0, 0, 0, 0.15])


def _numeric_rates(draw: str, rng: np.random.Generator, reps: int) -> dict[tuple[str, float, int], float]:
    def sample(n: int) -> np.ndarray:
        return rng.normal(0.0, 1.0, n) if draw == "normal" else rng.exponential(1.0, n)

    reference = build_numeric_reference(sample(5000), name="x")
    shift = 0.5 * float(np.std(reference.values))
    out = {}
    for stat in ("wasserstein_normalised", "js_divergence"):
        t = DriftThresholds(numeric_statistic=stat, min_values=1)
        for delta in (0.0, shift):
            for m in SIZES:
                alarms = sum(numeric_drift(reference, sample(m) + delta, thresholds=t).verdict == "drift"
                             for _ in range(reps))
                out[(f"{draw} {'W1' if stat.startswith('w') else 'JS'}", 0.0 if delta == 0 else 0.5, m)] = \
                    alarms / reps
    return out


def _categorical_rates(rng: np.random.Generator, reps: int) -> dict[tuple[str, float, int], float]:
    counts = dict(zip(LEVELS, (int(c) for c in rng.multinomial(5000, PROBS)), strict=True))
    reference = build_categorical_reference_from_counts(counts, name="c")
    t = DriftThresholds(min_values=1)
    out = {}
    for label, probs in (("0", PROBS), ("0.15", SHIFTED)):
        for m in SIZES:
            alarms = 0
            for _ in range(reps):
                drawn = rng.multinomial(m, probs)
                current = {k: int(c) for k, c in zip(LEVELS, drawn, strict=True) if c}
                alarms += categorical_drift_from_counts(reference, current, thresholds=t).verdict == "drift"
            out[("categorical JS", float(label), m)] = alarms / reps
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="samples per size and shift")
    parser.add_argument("--seed", type=int, default=20261205)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    rates = {**_numeric_rates("normal", rng, args.reps), **_numeric_rates("exponential", rng, args.reps),
             **_categorical_rates(rng, args.reps)}
    series = sorted({(k[0], k[1]) for k in rates}, key=lambda s: (s[1], s[0]))
    print("| statistic | shift | " + " | ".join(f"m={m}" for m in SIZES) + " |")
    print("|---|---|" + "---|" * len(SIZES))
    for name, shift in series:
        cells = " | ".join(f"{100 * rates[(name, shift, m)]:.1f}" for m in SIZES)
        print(f"| {name} | {'none (false alarms)' if shift == 0 else 'modest'} | {cells} |")
    groups = {"W1 (numeric)": ("normal W1", "exponential W1"),
              "binned JS (numeric)": ("normal JS", "exponential JS"),
              "categorical JS": ("categorical JS",)}
    for label, names in groups.items():
        ok = [m for m in SIZES
              if all(rates[(n, 0.0, m)] <= 0.10 and rates[(n, 0.5 if "categorical" not in n else 0.15, m)]
                     >= 0.5 for n in names)]
        print(f"{label}: smallest size with <= 10 % false alarms and >= 50 % power: "
              f"{ok[0] if ok else 'none'}")
    print(f"{args.reps} reps, {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
