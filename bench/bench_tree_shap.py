"""Benchmark: exact interventional TreeSHAP read from the ONNX graph (issue #40).

The issue's case: a LightGBM binary classifier (200 trees, 31 leaves) on 37 numeric
features, converted with onnxmltools (one ``[N, 37]`` float input), 20 rows explained
against a background of 100 rows. Side by side:

* ours: :func:`modelgate.reports.onnx_trees.read_tree_ensemble` +
  :func:`modelgate.reports.tree_shap.interventional_tree_shap` (exact, margin space), timed
  with and without reading the graph;
* shap: ``shap.TreeExplainer(model, data=background, feature_perturbation="interventional")``
  on the ORIGINAL LightGBM model (exact, margin space; the oracle);
* permutation: :func:`modelgate.reports.explanation.explain` with ``algorithm="permutation"``
  (10 antithetic pairs, what ``auto`` picks at 37 features) on the ONNX Runtime session, in
  ``output="logit"`` (log-odds averaged over the background: the same quantity as the
  margin-space values, so its error against the exact values is measured directly).

Rows: max abs difference from shap's values, additivity ``|base + sum - margin|``, seconds
(best and median of the repeats; the CPU is shared). Then the same for a 500-tree
random forest and a multiclass LightGBM to show the cost grows with leaves, not features.

Run from the repository root: ``.venv/bin/python -m bench.bench_tree_shap``
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
import pandas as pd
from modelgate.reports.explanation import explain
from modelgate.reports.onnx_trees import read_tree_ensemble
from modelgate.reports.tree_shap import interventional_tree_shap

N_FEATURES = 37
N_ROWS, N_BACKGROUND = 20, 100
REPEATS = 5
NAMES = [f"x{i}" for i in range(N_FEATURES)]


def _data(rng: np.random.Generator, n: int = 4000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    signal = x[:, 0] - x[:, 1] * x[:, 2] + 0.5 * x[:, 3:8].sum(axis=1) + rng.normal(size=n)
    return x, (signal > 0).astype(int), np.digitize(signal, [-1.0, 1.0])


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    times, out = [], None
    for _ in range(REPEATS):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, min(times), float(np.median(times))


def _shap(model: Any, rows: np.ndarray, background: np.ndarray) -> Callable[[], np.ndarray]:
    import shap

    def run() -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            explainer = shap.TreeExplainer(model, data=background,
                                           feature_perturbation="interventional", model_output="raw")
            values = np.asarray(explainer.shap_values(rows, check_additivity=False))
        return values if values.ndim == 2 else np.moveaxis(values, 0, -1) if values.shape[0] != len(
            rows) else values
    return run


def case(label: str, model: Any, onnx_bytes: bytes, x: np.ndarray, column: int | None) -> None:
    rows, background = x[:N_ROWS], x[1000:1000 + N_BACKGROUND]
    trees = read_tree_ensemble(onnx_bytes, NAMES, input_tensor="input")
    ours, best, median = _timed(lambda: interventional_tree_shap(trees, rows, background))
    _, best_all, median_all = _timed(lambda: interventional_tree_shap(
        read_tree_ensemble(onnx_bytes, NAMES, input_tensor="input"), rows, background))
    expected, shap_best, shap_median = _timed(_shap(model, rows, background))
    values = ours.values @ trees.columns.T
    values = values[:, :, column] if column is not None else values
    expected = expected[:, :, column] if expected.ndim == 3 and column is not None else expected
    gap = float(np.abs(ours.base_values + ours.values.sum(axis=1) - ours.scores).max())
    leaves = int((trees.feature < 0).sum())
    print(f"\n{label}: {len(trees.roots)} trees, {leaves} leaves, {N_FEATURES} features, "
          f"{N_ROWS} rows x {N_BACKGROUND} background")
    print("| method | seconds best | seconds median | max abs diff vs shap | additivity |")
    print("|---|---:|---:|---:|---:|")
    print(f"| ours (trees already read) | {best:.3f} | {median:.3f} | "
          f"{np.abs(values - expected).max():.1e} | {gap:.1e} |")
    print(f"| ours (reading the graph too) | {best_all:.3f} | {median_all:.3f} | | |")
    print(f"| shap.TreeExplainer on the original model | {shap_best:.3f} | {shap_median:.3f} | 0 | |")


def permutation_case(onnx_bytes: bytes, model: Any, x: np.ndarray) -> None:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(onnx_bytes, options, providers=["CPUExecutionProvider"])

    def proba(frame: pd.DataFrame) -> np.ndarray:
        return session.run(None, {"input": frame.to_numpy(dtype=np.float32)})[1][:, 1]

    frame = pd.DataFrame(x, columns=NAMES)
    rows, background = frame.iloc[:N_ROWS], frame.iloc[1000:1000 + N_BACKGROUND]
    start = time.perf_counter()
    est = explain(proba, rows, background, features=NAMES, algorithm="permutation", output="logit")
    seconds = time.perf_counter() - start
    exact = _shap(model, x[:N_ROWS], x[1000:1000 + N_BACKGROUND])()
    err = np.abs(est.values - exact)
    print(f"| permutation estimate (10 pairs, {est.budget.evaluations_per_row} coalitions/row), "
          f"log-odds | {seconds:.3f} | (one run) | {err.max():.1e} (median {np.median(err):.1e}) | |")
    covered = float((err <= 1.96 * est.standard_errors + 1e-12).mean())
    print(f"\npermutation: share of values within 1.96 standard errors of the exact value: {covered:.3f}")


def main() -> None:
    import lightgbm
    from onnxmltools import convert_lightgbm
    from onnxmltools.convert.common.data_types import FloatTensorType
    from skl2onnx import to_onnx
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(40)
    x, y2, y3 = _data(rng)
    types = [("input", FloatTensorType([None, N_FEATURES]))]
    lgb = lightgbm.LGBMClassifier(n_estimators=200, num_leaves=31, verbose=-1, n_jobs=1).fit(x, y2)
    lgb_onnx = convert_lightgbm(lgb, initial_types=types, zipmap=False).SerializeToString()
    case("LightGBM binary (the issue's case)", lgb, lgb_onnx, x, 1)
    permutation_case(lgb_onnx, lgb, x)
    lgb3 = lightgbm.LGBMClassifier(n_estimators=100, num_leaves=31, verbose=-1, n_jobs=1).fit(x, y3)
    case("LightGBM 3-class", lgb3, convert_lightgbm(lgb3, initial_types=types, zipmap=False)
         .SerializeToString(), x, 2)
    forest = RandomForestClassifier(200, max_depth=8, n_jobs=1, random_state=0).fit(x, y2)
    from skl2onnx.common.data_types import FloatTensorType as SklFloat

    forest_onnx = to_onnx(forest, options={"zipmap": False},
                          initial_types=[("input", SklFloat([None, N_FEATURES]))])
    case("RandomForest binary (probability space)", forest, forest_onnx.SerializeToString(), x, 1)


if __name__ == "__main__":
    main()
