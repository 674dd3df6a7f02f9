"""Estimated performance and data quality (#24): cost per 1M-row interval and interval coverage.

    .venv/bin/python -m bench.bench_estimation                 # both tables
    .venv/bin/python -m bench.bench_estimation --skip-coverage # the timing table only

Timing: one interval of ``--rows`` rows (default 1M). Binary: isotonic calibrator fitted on a
200k-row reference, then ``estimate_binary`` (confusion, four metrics with intervals, expected
ROC AUC). Multiclass: 3 classes. Regression: the nanny error model (``fit_nanny_model``: additive
splines of ``|e|`` and ``e ** 2``) fitted on a 200k-row reference with the quality frame's 5
numeric and 2 string features, then ``estimate_regression`` with them. Quality: ``check_quality``
on those 5 numeric float64 columns and 2 string columns (object dtype, 20 categories, as
``to_pandas`` gives them) with planted problems (missing values, an unseen category), then
``decide_quality``. Best of ``--repeats``.

Coverage: the simulation of ``tests/drift/test_performance_estimation_sim.py`` (truth
``P(y | x) = sigmoid(2x)``, model ``sigmoid(1.2x + 0.4)``, intervals with ``x ~ N(mu, sd)``,
``mu`` in [-1, 1], ``sd`` in [0.5, 1.5]): the share of intervals whose realised metric lies in
the 95% interval, per metric, for two reference sizes and three seeds. Regression: the
simulation of ``tests/drift/test_nanny_estimation.py`` (error ``0.5 x2 + (0.3 + 0.5 |x1|) eps``,
the model predicts ``x1``; both features shifted per interval), 50,000 reference rows, three
seeds: coverage and mean width of the MAE and RMSE intervals.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
from modelgate.drift.performance_estimation import (
    BINARY_METRICS,
    estimate_binary,
    estimate_multiclass,
    fit_isotonic,
    fit_multiclass,
)
from modelgate.drift.quality import QualityPolicy, check_quality, decide_quality, infer_schema
from modelgate.drift.regression_estimation import estimate_regression, fit_nanny_model
from sklearn.metrics import roc_auc_score


def _best(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Best wall-clock and best CPU seconds (single-threaded numpy: on a shared machine the CPU
    time is what the step costs, the wall time what it took there)."""
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _frame(rng: np.random.Generator, n: int, shift: float) -> pd.DataFrame:
    cats = np.array([f"c{i:02d}" for i in range(20)], dtype=object)
    cols = {f"x{i}": rng.normal(shift, 1.0, n) for i in range(5)}
    cols.update({f"k{i}": cats[rng.integers(0, 20, n)] for i in range(2)})
    return pd.DataFrame(cols)


def timing(rows: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    x_ref = rng.normal(size=200_000)
    calibrator = fit_isotonic(_sigmoid(1.2 * x_ref + 0.4), (rng.uniform(size=x_ref.size) <
                                                            _sigmoid(2 * x_ref)).astype(int))
    scores = _sigmoid(1.2 * rng.normal(0.3, 1.0, rows) + 0.4)
    logits = rng.normal(size=(200_000, 3))
    prob_ref = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y3 = (rng.uniform(size=(200_000, 1)) > np.cumsum(prob_ref, axis=1)).sum(axis=1)
    multi = fit_multiclass(prob_ref, y3, ("a", "b", "c"))
    prob_cur = rng.dirichlet(np.ones(3), size=rows)
    ref, cur = _frame(rng, 200_000, 0.0), _frame(rng, rows, 0.2)
    pred_ref = ref["x0"].to_numpy() + 0.5 * ref["x1"].to_numpy()
    pred_cur = cur["x0"].to_numpy() + 0.5 * cur["x1"].to_numpy()
    cur.loc[: rows // 100, "x0"] = np.nan
    cur.loc[: rows // 200, "k0"] = "new"
    kinds = {c: ("numeric" if c.startswith("x") else "categorical") for c in ref.columns}
    categorical = [c for c, k in kinds.items() if k == "categorical"]
    y_ref = pred_ref + (0.5 + 0.3 * np.abs(ref["x2"].to_numpy())) * rng.normal(size=pred_ref.size)

    def fit_nanny() -> object:
        return fit_nanny_model(ref, pred_ref, y_ref, categorical=categorical)

    nanny = fit_nanny()
    schema = infer_schema({c: ref[c] for c in kinds}, kinds)
    columns = {c: cur[c] for c in kinds}

    def quality() -> object:
        return decide_quality(check_quality(schema, columns, n_rows=rows), QualityPolicy())

    cases = [
        ("binary estimate (fit: 200k-row reference)", lambda: estimate_binary(calibrator, scores,
                                                                              threshold=0.5)),
        ("multiclass estimate, 3 classes", lambda: estimate_multiclass(multi, prob_cur)),
        ("regression estimate, nanny model on 5 numeric + 2 string features",
         lambda: estimate_regression(nanny, pred_cur, features=cur)),
        ("quality, 5 numeric + 2 string columns", quality),
        ("fit isotonic calibrator, 200k reference rows",
         lambda: fit_isotonic(scores[:200_000], (scores[:200_000] > 0.5).astype(int))),
        ("fit nanny model, 200k reference rows", fit_nanny),
    ]
    print(f"| step ({rows:,} rows) | wall s (best of {repeats}) | CPU s (best of {repeats}) |\n"
          "|---|---|---|")
    best = {}
    for name, fn in cases:
        best[name.split()[0].rstrip(",")] = wall, cpu = _best(fn, repeats)
        print(f"| {name} | {wall:.3f} | {cpu:.3f} |")
    for task in ("binary", "regression"):
        print(f"| {task} estimate + quality | {best[task][0] + best['quality'][0]:.3f} | "
              f"{best[task][1] + best['quality'][1]:.3f} |")


def _draw(rng: np.random.Generator, n: int, mu: float, sd: float) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(mu, sd, size=n)
    return _sigmoid(1.2 * x + 0.4), (rng.uniform(size=n) < _sigmoid(2 * x)).astype(int)


def _realised(y: np.ndarray, s: np.ndarray) -> dict[str, float]:
    yhat = s >= 0.5
    tp, fp = np.sum(yhat & (y == 1)), np.sum(yhat & (y == 0))
    fn = np.sum(~yhat & (y == 1))
    return {"roc_auc": roc_auc_score(y, s), "accuracy": float(np.mean(yhat == (y == 1))),
            "precision": tp / (tp + fp), "recall": tp / (tp + fn), "f1": 2 * tp / (2 * tp + fp + fn)}


def coverage(n_intervals: int, n_rows: int) -> None:
    print(f"\n| reference rows | seed | {' | '.join(BINARY_METRICS)} |\n|---|---|" + "---|" * 5)
    for n_ref in (50_000, 200_000):
        for seed in (11, 21, 31):
            rng = np.random.default_rng(seed)
            cal = fit_isotonic(*_draw(rng, n_ref, 0.0, 1.0))
            hits = dict.fromkeys(BINARY_METRICS, 0)
            for mu, sd in zip(rng.uniform(-1, 1, n_intervals), rng.uniform(0.5, 1.5, n_intervals),
                              strict=True):
                s, y = _draw(rng, n_rows, mu, sd)
                realised = _realised(y, s)
                for m in estimate_binary(cal, s, threshold=0.5).metrics:
                    hits[m.metric] += m.lower <= realised[m.metric] <= m.upper
            print(f"| {n_ref:,} | {seed} | "
                  + " | ".join(f"{hits[m] / n_intervals:.3f}" for m in BINARY_METRICS) + " |")


def _draw_regression(rng: np.random.Generator, n: int, mu1: float, sd1: float, mu2: float,
                     sd2: float) -> tuple[pd.DataFrame, np.ndarray]:
    """Features and the model's error (it predicts ``x1`` of ``y = x1 + 0.5 x2 + noise``)."""
    x1, x2 = rng.normal(mu1, sd1, n), rng.normal(mu2, sd2, n)
    return pd.DataFrame({"x1": x1, "x2": x2}), 0.5 * x2 + (0.3 + 0.5 * np.abs(x1)) * rng.normal(size=n)


def regression_coverage(n_intervals: int, n_rows: int) -> None:
    print("\n| reference rows | seed | mae covered | mae width | rmse covered | rmse width |\n"
          "|---|---|---|---|---|---|")
    for seed in (11, 21, 31):
        rng = np.random.default_rng(seed)
        ref, err_ref = _draw_regression(rng, 50_000, 0, 1, 0, 1)
        model = fit_nanny_model(ref, ref["x1"], ref["x1"] + err_ref)
        hits, widths = {"mae": 0, "rmse": 0}, {"mae": 0.0, "rmse": 0.0}
        for _ in range(n_intervals):
            mu, sd = rng.uniform(-1, 1, 2), rng.uniform(0.5, 1.5, 2)
            cur, err = _draw_regression(rng, n_rows, mu[0], sd[0], mu[1], sd[1])
            est = estimate_regression(model, cur["x1"], features=cur)
            for m, real in (("mae", np.mean(np.abs(err))), ("rmse", np.sqrt(np.mean(err ** 2)))):
                lower, upper = getattr(est, f"{m}_lower"), getattr(est, f"{m}_upper")
                hits[m] += lower <= real <= upper
                widths[m] += (upper - lower) / n_intervals
        print(f"| 50,000 | {seed} | {hits['mae'] / n_intervals:.3f} | {widths['mae']:.4f} | "
              f"{hits['rmse'] / n_intervals:.3f} | {widths['rmse']:.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--intervals", type=int, default=200)
    parser.add_argument("--interval-rows", type=int, default=5000)
    parser.add_argument("--skip-coverage", action="store_true")
    args = parser.parse_args()
    timing(args.rows, args.repeats)
    if not args.skip_coverage:
        coverage(args.intervals, args.interval_rows)
        regression_coverage(args.intervals, args.interval_rows)


if __name__ == "__main__":
    main()
