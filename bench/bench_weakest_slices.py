"""Benchmark: the weakest-slice search's false discoveries and its power to find a planted slice (#43).

Run from the repository root::

    nice -n 10 .venv/bin/python -m bench.bench_weakest_slices               # the RESULTS.md table
    .venv/bin/python -m bench.bench_weakest_slices --runs 50

Population: five categorical columns drawn uniformly and independently, with 3, 4, 5, 6 and 8
values; label ``y ~ Bernoulli(0.4)``; the model right on a row with probability 0.85 (score
``0.8`` on the right label, ``0.2`` on the other, plus noise), threshold 0.5.  The search
(:func:`modelgate.evaluation.weakest_slices.find_weakest_slices`, single columns and all ten
pairs: about 230 candidate slices of at least 100 rows, 4 metrics each, BH at 0.05) runs on
``n`` rows.

*Null*: nothing planted: every discovery is false; reported is the share of runs with any
(the family-wise error, equal to the false-discovery rate when nothing is true).

*Planted*: on the rows with ``c0 == 0 and c1 == 0`` (1/12 of the rows) the model is right
with probability ``0.85 - drop`` instead.  A slice is *truly worse* when its share of
planted rows is higher than its complement's (computed exactly from the population: slices
that constrain ``c0 = 0`` or ``c1 = 0`` and not the other column to another value); every
other discovery is false.  Reported: the share of runs in which the planted slice is found
(any metric), in which it is ranked first, and the mean false-discovery proportion.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from modelgate.evaluation.weakest_slices import find_weakest_slices
from modelgate.fairness.disaggregate import encode_groups

SIZES = (3, 4, 5, 6, 8)
PLANTED = "c0=0 & c1=0"


def truly_worse(name: str) -> bool:
    """Whether a slice's share of planted rows exceeds its complement's (uniform columns)."""
    constraints = dict(part.split("=") for part in name.split(" & "))
    share = 1.0
    p_slice = 1.0
    for col, size in zip(("c0", "c1"), SIZES[:2], strict=True):
        share *= (1.0 if constraints[col] == "0" else 0.0) if col in constraints else 1 / size
    for col in constraints:
        p_slice /= SIZES[int(col[1])]
    planted = 1 / (SIZES[0] * SIZES[1])
    rest_share = (planted - p_slice * share) / (1 - p_slice)
    return share > rest_share + 1e-12


def one_run(seed: int, n: int, drop: float) -> tuple[bool, bool, bool, float, int, int]:
    rng = np.random.default_rng(seed)
    cols = {f"c{i}": rng.integers(0, k, n) for i, k in enumerate(SIZES)}
    y = (rng.random(n) < 0.4).astype(int)
    weak = (cols["c0"] == 0) & (cols["c1"] == 0)
    right = rng.random(n) < np.where(weak, 0.85 - drop, 0.85)
    s = np.clip(np.where(right, y, 1 - y) * 0.6 + 0.2 + rng.normal(0, 0.1, n), 0, 1)
    found = find_weakest_slices(y, s, threshold=0.5,
                                columns={k: encode_groups(v) for k, v in cols.items()})
    names = [x.name for x in found.slices]
    # with nothing planted every discovery is false
    false = len(names) if drop == 0 else sum(not truly_worse(name) for name in names)
    return (bool(names), PLANTED in names, bool(names) and names[0] == PLANTED,
            false / max(len(names), 1), found.candidates, found.tests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000, 50_000])
    parser.add_argument("--drops", type=float, nargs="+", default=[0.0, 0.1, 0.2])
    args = parser.parse_args()
    print("| rows | drop | runs | candidates | tests | any discovery | planted found | "
          "planted ranked first | mean FDP | s/run |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in args.rows:
        for drop in args.drops:
            start = time.perf_counter()
            runs = [one_run(7919 * r + n + int(100 * drop), n, drop) for r in range(args.runs)]
            took = (time.perf_counter() - start) / args.runs
            col = list(zip(*runs, strict=True))
            print(f"| {n:,} | {drop:g} | {args.runs} | {np.mean(col[4]):.0f} | {np.mean(col[5]):.0f} "
                  f"| {np.mean(col[0]):.3f} | {np.mean(col[1]):.3f} | {np.mean(col[2]):.3f} | "
                  f"{np.mean(col[3]):.3f} | {took:.2f} |", flush=True)


if __name__ == "__main__":
    main()
