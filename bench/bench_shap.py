"""Benchmark: batched permutation SHAP (modelgate.reports.explanation) vs shap's explainers.

One ONNX model (scikit-learn MLP pipeline on 6 numeric + 3 categorical raw columns,
converted with skl2onnx, scored by onnxruntime), one background of 100 rows, one budget
of 10 antithetic permutations per row:

* ours: ``explain(..., algorithm="permutation", n_permutations=10)``
* ours_2x: the same with 20 pairs
* ours_exact: ``explain(..., algorithm="exact")``, all ``2**9`` coalitions (what ``auto`` picks
  for this 9-feature model)
* shap.PermutationExplainer with ``max_evals = 10 * (2 * M + 1)`` (its 10 permutations)
* shap.KernelExplainer with ``nsamples`` equal to the same ``max_evals``

shap needs numeric input, so it gets a wrapper that turns a 2-D float array (categories
as integer codes) into the DataFrame the ONNX model takes; that wrapper's cost counts for
shap, as it would for a user. Additivity error is ``|base + sum(values) - f(x)|`` with
``f(x)`` scored independently.

Two scenarios: the data as generated (6 continuous numeric columns, so almost every masked
input is distinct), and the same rows with the numeric columns rounded to -1, 0 or 1, where
many masked inputs repeat and ours scores each distinct input once (shap's PermutationExplainer
is left out there: it takes several seconds and does not change between scenarios). Ours and
KernelExplainer runs are interleaved so that both see the same load on a shared CPU.

After the tables, "time to accuracy" compares seconds per explained row at equal-or-lower max
abs error against exact Shapley values than KernelExplainer reaches at its budget.

Run from the repository root: ``.venv/bin/python -m bench.bench_shap``
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import shap
from modelgate.reports.explanation import explain
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType, StringTensorType
from sklearn.compose import ColumnTransformer
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from modelgate.onnx.artifact import package, verify
from modelgate.onnx.scoring import SessionSettings, open_session

NUMERIC = [f"x{i}" for i in range(6)]
CATEGORICAL = {
    "colour": ["red", "green", "blue"],
    "size": ["S", "M", "L", "XL"],
    "kind": list("abcde"),
}
FEATURES = NUMERIC + list(CATEGORICAL)
N_BACKGROUND = 100
N_PERMUTATIONS = 10
ROWS = {"ours": 50, "ours_2x": 50, "ours_exact": 50, "shap_permutation": 20,
        "shap_kernel": 20, "shap_kernel_scorer": 20}
#: Timed runs per explainer, interleaved; best and median are reported (the CPU is shared).
REPEATS = {"ours": 7, "ours_2x": 7, "ours_exact": 7, "shap_permutation": 1,
           "shap_kernel": 7, "shap_kernel_scorer": 7}


def make_data(rng: np.random.Generator, n: int) -> pd.DataFrame:
    frame = pd.DataFrame(rng.normal(size=(n, len(NUMERIC))), columns=NUMERIC)
    for col, levels in CATEGORICAL.items():
        frame[col] = pd.Series(rng.choice(np.array(levels, dtype=object), size=n), dtype=object)
    return frame


def build_model(
    rng: np.random.Generator,
) -> tuple[Callable[[pd.DataFrame], np.ndarray], Callable[[pd.DataFrame], np.ndarray]]:
    """The model twice: a plain session fed strings (what a shap user writes), and
    modelgate's scorer on the same ONNX bytes, packaged and verified as the DAG does."""
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

    return predict, modelgate_scorer(onx.SerializeToString(), out)


def modelgate_scorer(onnx_bytes: bytes, output: str) -> Callable[[pd.DataFrame], np.ndarray]:
    """``ModelScorer.predict_proba`` of the model, packaged and verified like a candidate."""
    opset = next(o.version for o in onnx.load_from_string(onnx_bytes).opset_import if o.domain == "")
    features = [{"name": c, "kind": "numeric"} for c in NUMERIC]
    features += [{"name": c, "kind": "categorical"} for c in CATEGORICAL]
    manifest = {
        "format_version": 1, "name": "bench-shap", "version": "1", "opset": opset,
        "features": features, "label": {"column": "y", "positive": 1},
        "output": {"name": output, "positive_index": 1}, "threshold": 0.5,
        "sensitive_features": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "model.onnx").write_bytes(onnx_bytes)
        (Path(tmp) / "manifest.json").write_text(json.dumps(manifest))
        archive = package(Path(tmp) / "model.onnx", Path(tmp) / "manifest.json", tmp)
        scorer = open_session(verify(archive), SessionSettings(provider="cpu"))
    return scorer.predict_proba


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


def run_ours(
    predict: Callable[[pd.DataFrame], np.ndarray],
    rows: pd.DataFrame,
    bg: pd.DataFrame,
    algorithm: Literal["permutation", "exact"] = "permutation",
    n_permutations: int = N_PERMUTATIONS,
) -> tuple[float, np.ndarray, np.ndarray, list[int]]:
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
        algorithm=algorithm,
        n_permutations=n_permutations,
        seed=0,
    )
    dt = time.perf_counter() - t0
    return dt, ex.values, ex.base_values, calls


def run_shap_permutation(
    predict: Callable[[pd.DataFrame], np.ndarray], rows: pd.DataFrame, bg: pd.DataFrame, max_evals: int
) -> tuple[float, np.ndarray, np.ndarray, list[int]]:
    calls: list[int] = []
    masker = shap.maskers.Independent(encode(bg), max_samples=N_BACKGROUND)
    explainer = shap.explainers.Permutation(numeric_wrapper(predict, calls), masker, seed=0)
    t0 = time.perf_counter()
    res = explainer(encode(rows), max_evals=max_evals, silent=True)
    dt = time.perf_counter() - t0
    return dt, res.values, np.asarray(res.base_values), calls


def run_shap_kernel(
    predict: Callable[[pd.DataFrame], np.ndarray], rows: pd.DataFrame, bg: pd.DataFrame, nsamples: int
) -> tuple[float, np.ndarray, np.ndarray, list[int]]:
    calls: list[int] = []
    explainer = shap.KernelExplainer(numeric_wrapper(predict, calls), encode(bg))
    t0 = time.perf_counter()
    values = explainer.shap_values(encode(rows), nsamples=nsamples, silent=True)
    dt = time.perf_counter() - t0
    base = np.full(len(rows), float(np.asarray(explainer.expected_value).ravel()[0]))
    return dt, np.asarray(values), base, calls


def low_cardinality(frame: pd.DataFrame) -> pd.DataFrame:
    """The numeric columns rounded to -1, 0 or 1 (as counts or ratings would be)."""
    out = frame.copy()
    out[NUMERIC] = np.round(out[NUMERIC].clip(-1.0, 1.0)) + 0.0  # + 0.0: no -0.0
    return out


def run_scenario(predict, scorer, pool, bg, names: tuple[str, ...]) -> dict[str, tuple]:
    """Time the explainers in ``names`` on ``pool`` against ``bg``; one result row each."""
    m = len(FEATURES)
    max_evals = N_PERMUTATIONS * (2 * m + 1)
    n_check = min(ROWS[n] for n in names)
    # reference: exact Shapley values (all 2**9 coalitions; checked against shap's
    # ExactExplainer in tests/reports/test_explain.py) for the rows every explainer covers
    exact = explain(predict, pool.iloc[:n_check], bg, features=FEATURES, algorithm="exact").values
    runners = {
        "ours": lambda rows: run_ours(scorer, rows, bg),
        "ours_2x": lambda rows: run_ours(scorer, rows, bg, "permutation", 2 * N_PERMUTATIONS),
        "ours_exact": lambda rows: run_ours(scorer, rows, bg, "exact"),
        "shap_permutation": lambda rows: run_shap_permutation(predict, rows, bg, max_evals),
        "shap_kernel": lambda rows: run_shap_kernel(predict, rows, bg, max_evals),
        "shap_kernel_scorer": lambda rows: run_shap_kernel(scorer, rows, bg, max_evals),
    }
    runs: dict[str, list] = {n: [] for n in names}
    for i in range(max(REPEATS[n] for n in names)):  # interleaved: all see the same load
        for name in names:
            if i < REPEATS[name]:
                runs[name].append(runners[name](pool.iloc[: ROWS[name]]))
    results = {}
    for name in names:
        rows = pool.iloc[: ROWS[name]]
        times = sorted(r[0] for r in runs[name])
        _, values, base, calls = runs[name][0]
        gap = np.abs(base + values.sum(axis=1) - predict(rows)).max()
        err = np.abs(values[:n_check] - exact).max()
        per_row = sum(calls) / len(rows)
        results[name] = (len(rows), times[0], float(np.median(times)), gap, err, per_row)
    return results


def print_table(title: str, results: dict[str, tuple]) -> None:
    m = len(FEATURES)
    print(
        f"### {title}\n\nM = {m} features, background = {N_BACKGROUND}, permutations = "
        f"{N_PERMUTATIONS}, shap max_evals / nsamples = {N_PERMUTATIONS * (2 * m + 1)}\n"
    )
    print(
        "| explainer | rows | seconds (best) | rows/s (best) | ours speed-up (best) "
        "| ours speed-up (median) | max additivity error | max abs error vs exact "
        f"(first {min(ROWS[n] for n in results)} rows) | model rows per explained row |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    ours_best = results["ours"][0] / results["ours"][1]
    ours_median = results["ours"][0] / results["ours"][2]
    for name, (n, best, median, gap, err, per_row) in results.items():
        print(
            f"| {name} | {n} | {best:.3f} | {n / best:.1f} | {ours_best * best / n:.1f}x "
            f"| {ours_median * median / n:.1f}x | {gap:.1e} | {err:.4f} | {per_row:,.0f} |"
        )
    print()


def print_time_to_accuracy(results: dict[str, tuple]) -> None:
    """Seconds per explained row each of ours needs to be at least as accurate as KernelExplainer."""
    _, best, median, _, target, _ = results["shap_kernel"]
    per_row = {n: (r[1] / r[0], r[2] / r[0], r[4]) for n, r in results.items()}
    kernel_best, kernel_median = per_row["shap_kernel"][:2]
    print(f"Time to accuracy: KernelExplainer (nsamples {N_PERMUTATIONS * (2 * len(FEATURES) + 1)}) "
          f"reaches max abs error {target:.4f} in {1000 * kernel_best:.2f} ms per row (best).\n")
    print("| ours | max abs error vs exact | <= KernelExplainer's? | ms per row (best) "
          "| speed-up at equal-or-lower error (best / median) |")
    print("|---|---|---|---|---|")
    for name in ("ours", "ours_2x", "ours_exact"):
        if name not in per_row:
            continue
        b, m, err = per_row[name]
        ok = err <= target
        speed = f"{kernel_best / b:.1f}x / {kernel_median / m:.1f}x" if ok else "-"
        print(f"| {name} | {err:.4f} | {'yes' if ok else 'no'} | {1000 * b:.2f} | {speed} |")
    print()


def main() -> None:
    rng = np.random.default_rng(0)
    predict, scorer = build_model(rng)
    bg = make_data(rng, N_BACKGROUND)
    pool = make_data(rng, max(ROWS.values()))
    gap = np.abs(predict(pool) - scorer(pool)).max()  # also warms both sessions up
    print(f"plain session vs modelgate scorer on {len(pool)} rows: max |difference| {gap:.1e}\n")
    every = ("ours", "ours_2x", "ours_exact", "shap_permutation", "shap_kernel",
             "shap_kernel_scorer")
    continuous = run_scenario(predict, scorer, pool, bg, every)
    print_table("Continuous numeric columns", continuous)
    print_time_to_accuracy(continuous)
    low = run_scenario(predict, scorer, low_cardinality(pool), low_cardinality(bg),
                       ("ours", "shap_kernel", "shap_kernel_scorer"))
    print_table("Numeric columns rounded to -1, 0, 1 (many repeated masked inputs)", low)


if __name__ == "__main__":
    main()
