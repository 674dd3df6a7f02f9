"""Benchmark: attribution drift's split-null threshold on exact SHAP values (issue #40 point 5).

The drift DAG's sizes: a reference profile of ``N_REF`` = 100 explained rows and live
intervals of ``M`` = 50 (``modelgate.pipelines.drift.joint``). Exact values, two models:

* linear: a logistic model ``z = x @ w`` on 5 standard normal features with weights
  (3, 1, 0.6, 0.4, 0.25); exact interventional SHAP in log-odds ``w_j (x_j - mean_bg x_j)``;
* trees: scikit-learn gradient boosting (100 trees, depth 3) on the same features, values by
  ``shap.TreeExplainer(model, data=background, feature_perturbation="interventional")``
  (exact, margin space). Its "feature stops being used" case retrains without feature k.

A pool of ``POOL`` rows is explained once per model; every trial draws a fresh reference
(``N_REF`` rows, its split null rebuilt) and a fresh live interval (``M`` rows) from it.

* even: a linear model on ten uniform(-1, 1) features with equal weights: each holds a
  tenth of the attribution and |SHAP| varies little between rows, the case where the old
  rule's absolute 0.1 floor set the threshold (the issue's "0.112 against 0.100").

Rows: false-alarm rate on stable data (live drawn from the same population), and for each
feature k the model stops using (live values of k set to its background mean for the linear
model, so its SHAP is exactly 0; a retrained tree model without k) the detection rate and
the median distance / threshold, under the split null (99 %) and the old rule
``max(0.1, 1.8 * size-adjusted half-split mean)``.

Run from the repository root: ``.venv/bin/python -m bench.bench_attribution_null``
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from modelgate.drift.attribution import attribution_drift, build_attribution_reference

N_REF, M, POOL, TRIALS = 100, 50, 3000, 200
WEIGHTS = np.array([3.0, 1.0, 0.6, 0.4, 0.25])
N_EVEN = 10  # the third scenario: ten equally weighted uniform features


def _old_threshold(ref: object, m: int) -> float:
    h1, h2 = ref.half_sizes  # type: ignore[attr-defined]
    n = ref.n  # type: ignore[attr-defined]
    base = ref.baseline * math.sqrt((1 / n + 1 / m) / (1 / h1 + 1 / h2))  # type: ignore[attr-defined]
    return max(0.1, 1.8 * base)


def _linear_pools(rng: np.random.Generator) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    x = rng.normal(size=(POOL, len(WEIGHTS)))
    bg_mean = rng.normal(size=(100, len(WEIGHTS))).mean(axis=0)
    stable = WEIGHTS * (x - bg_mean)
    dropped = {}
    for k in range(len(WEIGHTS)):
        v = stable.copy()
        v[:, k] = 0.0  # x_k held at the background mean: w_k (x_k - mean) = 0
        dropped[k] = v
    return stable, dropped


def _even_pools(rng: np.random.Generator) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    # ten equal weights on uniform(-1, 1) features: each holds a tenth of the attribution and
    # |SHAP| varies little from row to row, so the old rule's 0.1 floor sets its threshold
    stable = rng.uniform(-1, 1, size=(POOL, N_EVEN)) - rng.uniform(-1, 1, size=(100, N_EVEN)).mean(axis=0)
    dropped = stable.copy()
    dropped[:, 0] = 0.0
    return stable, {0: dropped}


def _tree_pools(rng: np.random.Generator) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    import shap
    from sklearn.ensemble import GradientBoostingClassifier

    x = rng.normal(size=(POOL + 1000, len(WEIGHTS)))
    y = (rng.random(len(x)) < 1 / (1 + np.exp(-(x @ WEIGHTS)))).astype(int)
    train, pool, bg = x[:1000], x[1000:], x[rng.choice(1000, 100, replace=False)]

    def values(cols: list[int]) -> np.ndarray:
        model = GradientBoostingClassifier(n_estimators=100, max_depth=3, random_state=0)
        model.fit(train[:, cols], y[:1000])
        ex = shap.TreeExplainer(model, data=bg[:, cols], feature_perturbation="interventional")
        out = np.zeros((len(pool), len(WEIGHTS)))
        out[:, cols] = np.asarray(ex.shap_values(pool[:, cols], check_additivity=False))
        return out

    every = list(range(len(WEIGHTS)))
    return values(every), {k: values([j for j in every if j != k]) for k in every}


def _trial(rng: np.random.Generator, stable: np.ndarray, live_pool: np.ndarray,
           seed: int) -> tuple[float, float, float]:
    ref_rows = rng.choice(len(stable), N_REF, replace=False)
    names = [f"x{j}" for j in range(stable.shape[1])]
    ref = build_attribution_reference(stable[ref_rows], features=names, seed=seed)
    live = live_pool[rng.choice(np.setdiff1d(np.arange(len(stable)), ref_rows), M, replace=False)]
    r = attribution_drift(ref, live)
    return float(r.distance or 0.0), float(r.threshold or 0.0), _old_threshold(ref, M)


def _scenario(name: str, make: Callable[[np.random.Generator], tuple[np.ndarray, dict[int, np.ndarray]]]
              ) -> None:
    rng = np.random.default_rng(40)
    t0 = time.perf_counter()
    stable, dropped = make(rng)
    print(f"\n### {name} (pool explained in {time.perf_counter() - t0:.1f} s)")
    print("| live | new rule: flagged | median distance / threshold | old rule: flagged "
          "| median distance / threshold |")
    print("|---|---|---|---|---|")
    cases = [("stable (same population)", stable)] + [(f"model stops using x{k}", v)
                                                      for k, v in dropped.items()]
    for label, pool in cases:
        out = np.array([_trial(rng, stable, pool, seed) for seed in range(TRIALS)])
        new, old = out[:, 0] / out[:, 1], out[:, 0] / out[:, 2]
        print(f"| {label} | {np.mean(new > 1):.3f} | {np.median(new):.2f} | {np.mean(old > 1):.3f} "
              f"| {np.median(old):.2f} |")


def main() -> None:
    print(f"n_ref={N_REF}, m={M}, trials={TRIALS}, pool={POOL}; split null 99 %, 400 splits x 5 sizes")
    _scenario("linear logistic model, exact values (log-odds)", _linear_pools)
    _scenario("linear model, ten equally weighted uniform features (a tenth each)", _even_pools)
    _scenario("gradient-boosted trees, exact interventional TreeSHAP (margin)", _tree_pools)


if __name__ == "__main__":
    main()
