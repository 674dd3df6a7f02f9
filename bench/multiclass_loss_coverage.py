"""Coverage of the multiclass log loss interval: row percentile (before the cells), cell
percentile (the cells' multinomial draw) and the studentized interval from the cells' moments,
on the same seeded sets (issue #42 item 1, issue #38 item 2).

The populations: the 3-class one of ``bench/coverage_families.py`` (moderate, confident) and a
10-class one (unit-variance normals around ``radius`` times each axis of R^10, equal priors).
The true log loss and accuracy are means over ``--truth-rows`` rows of the population (seed
12345, in 1M-row slices), so the truth's own noise is a twentieth of a 50,000-row set's.

Run: ``nice -n 10 .venv/bin/python -m bench.multiclass_loss_coverage --classes 3 --sizes
200,2000,50000 --simulations 400``
"""

from __future__ import annotations

import argparse
import json
from functools import cache

import numpy as np
from modelgate.evaluation.multiclass_cells import resampled_counts, value_cells

from bench.coverage_families import RADIUS, _multiclass_rows
from modelgate.intervals import bootstrap_counts, percentile_interval, studentized_interval

RADIUS_10 = {"moderate": 1.6, "confident": 3.6}
_EPS = np.finfo(np.float64).eps


def rows(classes: int, scenario: str, n: int, rng: np.random.Generator
         ) -> tuple[np.ndarray, np.ndarray]:
    if classes == 3:
        return _multiclass_rows(RADIUS[scenario], n, rng)
    r = RADIUS_10[scenario]
    y = rng.integers(0, classes, size=n)
    x = rng.normal(size=(n, classes))
    x[np.arange(n), y] += r
    logits = r * x
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return y, p / p.sum(axis=1, keepdims=True)


def losses(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    return -np.log(np.clip(p[np.arange(len(y)), y], _EPS, 1 - _EPS))


@cache
def truth(classes: int, scenario: str, total: int) -> tuple[float, float]:
    rng = np.random.default_rng(12345)
    loss = hit = 0.0
    for _ in range(total // 1_000_000):
        y, p = rows(classes, scenario, 1_000_000, rng)
        loss += losses(y, p).sum()
        hit += (p.argmax(axis=1) == y).sum()
    return loss / total, hit / total


def one_set(y: np.ndarray, p: np.ndarray, resamples: int, seed: int) -> dict[str, tuple[float, float]]:
    x = losses(y, p)
    n = len(x)
    row = np.concatenate([w @ x for w in bootstrap_counts(n, n_bootstrap=resamples, seed=seed)]) / n
    table, means = value_cells(x)
    squares = np.bincount(table.cell, weights=x * x) / table.counts
    drawn = [(w @ means / n, w @ squares / n)
             for w in resampled_counts(table, n_bootstrap=resamples, seed=seed)]
    m1 = np.concatenate([d[0] for d in drawn])
    m2 = np.concatenate([d[1] for d in drawn])
    se_star = np.sqrt(np.maximum(m2 - m1 * m1, 0.0) / n)
    point = float(x.mean())
    se = float(x.std() / np.sqrt(n))
    return {"row percentile": percentile_interval(row, 0.95),
            "cell percentile": percentile_interval(m1, 0.95),
            "cell studentized": studentized_interval(point, se, m1, se_star, 0.95, lower_limit=0.0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--scenarios", default="moderate,confident")
    parser.add_argument("--sizes", default="200,2000,50000")
    parser.add_argument("--simulations", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--truth-rows", type=int, default=20_000_000)
    args = parser.parse_args()
    for scenario in args.scenarios.split(","):
        true_loss, true_accuracy = truth(args.classes, scenario, args.truth_rows)
        for n in (int(s) for s in args.sizes.split(",")):
            rng = np.random.default_rng(1000 + n)
            hits: dict[str, int] = {}
            for s in range(args.simulations):
                y, p = rows(args.classes, scenario, n, rng)
                for name, (lo, hi) in one_set(y, p, args.resamples, seed=s).items():
                    hits[name] = hits.get(name, 0) + int(lo <= true_loss <= hi)
            print(json.dumps({"classes": args.classes, "scenario": scenario, "n": n,
                              "sets": args.simulations, "true_log_loss": round(true_loss, 5),
                              "true_accuracy": round(true_accuracy, 5),
                              **{k: round(100 * v / args.simulations, 1) for k, v in hits.items()}}),
                  flush=True)


if __name__ == "__main__":
    main()
