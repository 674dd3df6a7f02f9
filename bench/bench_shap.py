"""Benchmark: batched permutation SHAP (modelgate.reports.explain) vs shap's explainers.

One ONNX model (scikit-learn MLP pipeline on 6 numeric + 3 categorical raw columns,
converted with skl2onnx, scored by onnxruntime), one background of 100 rows, one budget
of 10 antithetic permutations per row:

* ours: ``explain(..., algorithm="permutation", n_permutations=10)``
* shap.PermutationExplainer with ``max_evals = 10 * (2 * M + 1)`` (its 10 permutations)
* shap.KernelExplainer with ``nsamples`` equal to the same ``max_evals``

shap needs numeric input, so it gets a wrapper that turns a 2-D float array (categories
as integer codes) into the DataFrame the ONNX model takes; that wrapper's cost counts for
shap, as it would for a user. Additivity error is ``|base + sum(values) - f(x)|`` with
``f(x)`` scored independently.

Run from the repository root: ``.venv/bin/python -m bench.bench_shap``
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import onnxruntime as ort
import pandas as pd
import shap
from modelgate.reports.explain import explain
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType, StringTensorType
from sklearn.compose import ColumnTransformer
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

NUMERIC = [f"x{i}" for i in range(6)]
CATEGORICAL = {
    "colour": ["red", "green", "blue"],
    "size": ["S", "M", "L", "XL"],
    "kind": list("abcde"),
}
FEATURES = NUMERIC + list(CATEGORICAL)
N_BACKGROUND = 100
N_PERMUTATIONS = 10
ROWS = {"ours": 50, "shap_permutation": 20, "shap_kernel": 20}
#: Timed runs per explainer; the fastest counts (the CPU is shared with other work).
REPEATS = {"ours": 5, "shap_permutation": 1, "shap_kernel": 5}


def make_data(rng: np.random.Generator, n: int) -> pd.DataFrame:
    frame = pd.DataFrame(rng.normal(size=(n, len(NUMERIC))), columns=NUMERIC)
    for col, levels in CATEGORICAL.items():
        frame[col] = pd.Series(rng.choice(np.array(levels, dtype=object), size=n), dtype=object)
    return frame


def build_model(
    rng: np.random.Generator,
) -> tuple[Callable[[pd.DataFrame], np.ndarray], pd.DataFrame]:
    frame = make_data(rng, 2000)
    z = frame["x0"] * frame["x1"] - frame["x2"] + np.sin(frame["x3"]) + (frame["colour"] == "red")
    y = (rng.random(len(frame)) < 1 / (1 + np.exp(-z))).astype(int)
    pre = ColumnTransformer(
        [("num", StandardScaler(), NUMERIC), ("cat", OneHotEncoder(), list(CATEGORICAL))]
    )
    clf = MLPClassifier(
        hidden_layer_sizes=(32, 16), max_iter=300, early_stopping=True, random_state=0
    )
    pipe = Pipeline([("pre", pre), ("clf", clf)]).fit(frame, y)
    types = [(c, FloatTensorType([None, 1])) for c in NUMERIC]
    types += [(c, StringTensorType([None, 1])) for c in CATEGORICAL]
    onx = convert_sklearn(pipe, initial_types=types, options={id(clf): {"zipmap": False}})
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    out = sess.get_outputs()[1].name

    def predict(df: pd.DataFrame) -> np.ndarray:
        feeds = {c: df[c].to_numpy(dtype=np.float32).reshape(-1, 1) for c in NUMERIC}
        feeds |= {c: df[c].to_numpy(dtype=object).reshape(-1, 1) for c in CATEGORICAL}
        return sess.run([out], feeds)[0][:, 1].astype(np.float64)

    return predict, frame


def encode(frame: pd.DataFrame) -> np.ndarray:
    out = frame[FEATURES].copy()
    for col, levels in CATEGORICAL.items():
        out[col] = out[col].map({v: i for i, v in enumerate(levels)})
    return out.to_numpy(dtype=np.float64)


def numeric_wrapper(predict: Callable[[pd.DataFrame], np.ndarray], counter: list[int]):
    """What a shap user writes: 2-D numeric array -> DataFrame for the ONNX model."""
    levels = {c: np.array(v, dtype=object) for c, v in CATEGORICAL.items()}

    def f(x: np.ndarray) -> np.ndarray:
        counter.append(len(x))
        df = pd.DataFrame(x[:, : len(NUMERIC)], columns=NUMERIC)
        for j, col in enumerate(CATEGORICAL, start=len(NUMERIC)):
            df[col] = pd.Series(levels[col][x[:, j].astype(int)], dtype=object)
        return predict(df)

    return f


def run_ours(predict, rows, bg):
    calls: list[int] = []

    def counted(df: pd.DataFrame) -> np.ndarray:
        calls.append(len(df))
        return predict(df)

    t0 = time.perf_counter()
    ex = explain(
        counted,
        rows,
        bg,
        features=FEATURES,
        algorithm="permutation",
        n_permutations=N_PERMUTATIONS,
        seed=0,
    )
    dt = time.perf_counter() - t0
    return dt, ex.values, ex.base_values, calls


def run_shap_permutation(predict, rows, bg, max_evals):
    calls: list[int] = []
    masker = shap.maskers.Independent(encode(bg), max_samples=N_BACKGROUND)
    explainer = shap.explainers.Permutation(numeric_wrapper(predict, calls), masker, seed=0)
    t0 = time.perf_counter()
    res = explainer(encode(rows), max_evals=max_evals, silent=True)
    dt = time.perf_counter() - t0
    return dt, res.values, np.asarray(res.base_values), calls


def run_shap_kernel(predict, rows, bg, nsamples):
    calls: list[int] = []
    explainer = shap.KernelExplainer(numeric_wrapper(predict, calls), encode(bg))
    t0 = time.perf_counter()
    values = explainer.shap_values(encode(rows), nsamples=nsamples, silent=True)
    dt = time.perf_counter() - t0
    base = np.full(len(rows), float(np.asarray(explainer.expected_value).ravel()[0]))
    return dt, np.asarray(values), base, calls


def main() -> None:
    rng = np.random.default_rng(0)
    predict, _ = build_model(rng)
    bg = make_data(rng, N_BACKGROUND)
    pool = make_data(rng, max(ROWS.values()))
    m = len(FEATURES)
    max_evals = N_PERMUTATIONS * (2 * m + 1)
    predict(pool.iloc[:5])  # warm-up
    n_check = min(ROWS.values())
    # reference: exact Shapley values (all 2**9 coalitions; checked against shap's
    # ExactExplainer in tests/reports/test_explain.py) for the rows every explainer covers
    exact = explain(predict, pool.iloc[:n_check], bg, features=FEATURES, algorithm="exact").values
    results = {}
    for name, runner, arg in (
        ("ours", run_ours, None),
        ("shap_permutation", run_shap_permutation, max_evals),
        ("shap_kernel", run_shap_kernel, max_evals),
    ):
        rows = pool.iloc[: ROWS[name]]
        args = (predict, rows, bg) if arg is None else (predict, rows, bg, arg)
        runs = [runner(*args) for _ in range(REPEATS[name])]
        dt = min(r[0] for r in runs)
        _, values, base, calls = runs[0]
        gap = np.abs(base + values.sum(axis=1) - predict(rows)).max()
        err = np.abs(values[:n_check] - exact).max()
        per_row = sum(calls) / len(rows)
        results[name] = (len(rows), dt, len(rows) / dt, gap, err, per_row)
    ours_rate = results["ours"][2]
    print(
        f"M = {m} features, background = {N_BACKGROUND}, permutations = {N_PERMUTATIONS}, "
        f"shap max_evals / nsamples = {max_evals}\n"
    )
    print(
        "| explainer | rows | seconds | rows/s | ours speed-up | max additivity error "
        f"| max abs error vs exact (first {n_check} rows) | model rows per explained row |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, (n, dt, rate, gap, err, per_row) in results.items():
        print(
            f"| {name} | {n} | {dt:.2f} | {rate:.2f} | {ours_rate / rate:.1f}x | {gap:.1e} "
            f"| {err:.4f} | {per_row:,.0f} |"
        )


if __name__ == "__main__":
    main()
