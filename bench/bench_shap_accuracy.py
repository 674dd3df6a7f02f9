"""Benchmark: how far SHAP estimates are from exact values at equal model evaluations.

Models: scikit-learn MLPs (32, 16) on M = 12, 14, 16 numeric features with interactions,
converted with skl2onnx and scored by ONNX Runtime (one intra-op thread). Per model, 10
explained rows against a background of 20 rows (shap's ``maskers.Independent`` with all of
them, and our masker: the same value function).

* exact: ``explain(..., algorithm="exact")``, all ``2**M`` coalitions; the reference.
* ours: ``explain(..., algorithm="permutation", n_permutations=P)``, whose budget is at most
  ``E = 2 P (M - 3) + 2 M + 2`` coalitions per row (``budget.evaluations_per_row``; repeated
  coalitions are evaluated once, so it spends fewer: ``spent`` counts the distinct
  coalitions it really sent to the model, from the rows ``predict`` received).
* shap_permutation: ``shap.explainers.Permutation`` with ``max_evals = E`` (it spends
  ``2 M + 1`` per antithetic pair).
* shap_kernel: ``shap.KernelExplainer`` with ``nsamples = E`` and ``l1_reg=False`` (the plain
  Kernel SHAP regression; its default may drop features by AIC when samples are scarce).

Each estimate is drawn with 10 seeds; errors are over all rows x features x seeds. For ours,
``coverage`` is the share of values within 1.96 standard errors of the exact value and
``se/rmse`` the root-mean-square reported standard error over the real RMSE (1 is honest).
Then the time of exact values where the issue met them: M = 8, 12, 14 with 40 rows against
40 background rows, and the algorithm ``auto`` picks there.

Run from the repository root: ``.venv/bin/python -m bench.bench_shap_accuracy``
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import numpy as np
import onnxruntime as ort
import pandas as pd
import shap
from modelgate.reports.explain import choose_algorithm, explain
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier

FEATURE_COUNTS = (12, 14, 16)
PAIRS = (10, 30)
SEEDS = range(10)
N_ROWS, N_BACKGROUND = 10, 20

Model = Callable[[np.ndarray], np.ndarray]


def build_model(m: int, seed: int = 0) -> Model:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2000, m)).astype(np.float32)
    z = x[:, 0] * x[:, 1] - x[:, 2] + np.sin(2 * x[:, 3]) + x[:, 4] * x[:, 5] * x[:, 6] + x[:, 7:].sum(1) / 4
    y = (rng.random(len(x)) < 1 / (1 + np.exp(-z))).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = MLPClassifier(hidden_layer_sizes=(32, 16), max_iter=300, random_state=0).fit(x, y)
    onx = convert_sklearn(clf, initial_types=[("x", FloatTensorType([None, m]))],
                          options={id(clf): {"zipmap": False}})
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    sess = ort.InferenceSession(onx.SerializeToString(), options, providers=["CPUExecutionProvider"])
    out = sess.get_outputs()[1].name

    def model(a: np.ndarray) -> np.ndarray:
        return sess.run([out], {"x": np.asarray(a, dtype=np.float32)})[0][:, 1].astype(np.float64)

    return model


def frame_predict(model: Model, names: list[str]) -> Callable[[pd.DataFrame], np.ndarray]:
    return lambda frame: model(frame[names].to_numpy(dtype=np.float32))


def errors(est: np.ndarray, exact: np.ndarray) -> tuple[float, float]:
    diff = est - exact
    return float(np.sqrt(np.mean(diff**2))), float(np.abs(diff).max())


def accuracy(m: int) -> list[dict[str, object]]:
    model = build_model(m)
    names = [f"x{i}" for i in range(m)]
    rng = np.random.default_rng(100 + m)
    rows = pd.DataFrame(rng.normal(size=(N_ROWS, m)), columns=names)
    bg = pd.DataFrame(rng.normal(size=(N_BACKGROUND, m)), columns=names)
    predict = frame_predict(model, names)
    start = time.perf_counter()
    exact = explain(predict, rows, bg, features=names, algorithm="exact", exact_budget=2**40).values
    print(f"M={m}: exact values of {N_ROWS} rows x {N_BACKGROUND} background: "
          f"{time.perf_counter() - start:.1f} s ({2**m * N_ROWS * N_BACKGROUND:,} model evaluations)",
          flush=True)
    out = []
    for pairs in PAIRS:
        ours, se, theirs_p, theirs_k, fed = [], [], [], [], []

        def counted(frame: pd.DataFrame, fed: list[int] = fed) -> np.ndarray:
            fed.append(len(frame))
            return predict(frame)

        for seed in SEEDS:
            est = explain(counted, rows, bg, features=names, algorithm="permutation",
                          n_permutations=pairs, seed=seed)
            evals = est.budget.evaluations_per_row
            ours.append(est.values)
            se.append(est.standard_errors)
            masker = shap.maskers.Independent(bg.to_numpy(), max_samples=N_BACKGROUND)
            perm = shap.explainers.Permutation(model, masker, seed=seed)
            theirs_p.append(perm(rows.to_numpy(), max_evals=evals, silent=True).values)
            np.random.seed(seed)  # KernelExplainer draws from numpy's global generator
            kernel = shap.KernelExplainer(model, bg.to_numpy())
            theirs_k.append(np.asarray(kernel.shap_values(rows.to_numpy(), nsamples=evals,
                                                          l1_reg=False, silent=True)))
        reference = np.stack([exact] * len(SEEDS))
        ours_a, se_a = np.stack(ours), np.stack(se)
        rmse_ours, _ = errors(ours_a, reference)
        for name, values in (("ours", ours_a), ("shap_permutation", np.stack(theirs_p)),
                             ("shap_kernel", np.stack(theirs_k))):
            rmse, worst = errors(values, reference)
            row: dict[str, object] = {"M": m, "E": evals, "explainer": name, "rmse": rmse, "max": worst}
            if name == "ours":
                # continuous features: every masked input is distinct, so model rows / background
                # rows counts coalitions; the endpoints' rows (background, explained) count 2
                row["spent"] = (sum(fed) / len(SEEDS) - N_BACKGROUND - N_ROWS) / (N_BACKGROUND * N_ROWS) + 2
                row["coverage"] = float(np.mean(np.abs(ours_a - reference) <= 1.96 * se_a))
                row["se/rmse"] = float(np.sqrt(np.mean(se_a**2)) / rmse_ours)
            out.append(row)
            print(row, flush=True)
    return out


def exact_time(m: int, n: int = 40) -> dict[str, object]:
    model = build_model(m)
    names = [f"x{i}" for i in range(m)]
    rng = np.random.default_rng(m)
    data = pd.DataFrame(rng.normal(size=(n, m)), columns=names)
    start = time.perf_counter()
    ex = explain(frame_predict(model, names), data, data, features=names, max_rows=n,
                 background_size=n)
    row = {"M": m, "rows": n, "background": n, "auto": ex.algorithm,
           "evaluations": 2**m * n * n, "seconds": round(time.perf_counter() - start, 2),
           "auto_at_pipeline_block": choose_algorithm(m, 100, 10)}
    print(row, flush=True)
    return row


def main() -> None:
    rows = [r for m in FEATURE_COUNTS for r in accuracy(m)]
    print("\n| M | E (coalitions/row) | explainer | RMSE | max abs error | spent | coverage of +/-1.96 SE "
          "| RMS SE / RMSE |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        cov = f"{r['coverage']:.3f}" if "coverage" in r else ""
        ratio = f"{r['se/rmse']:.2f}" if "se/rmse" in r else ""
        spent = f"{r['spent']:.0f}" if "spent" in r else ""
        print(f"| {r['M']} | {r['E']} | {r['explainer']} | {r['rmse']:.5f} | {r['max']:.4f} | {spent} "
              f"| {cov} | {ratio} |")
    print("\n| M | rows x background | auto picks | model evaluations | seconds |")
    print("|---|---|---|---|---|")
    for m in (8, 12, 14):
        t = exact_time(m)
        print(f"| {t['M']} | 40 x 40 | {t['auto']} | {t['evaluations']:,} | {t['seconds']} |")


if __name__ == "__main__":
    main()
