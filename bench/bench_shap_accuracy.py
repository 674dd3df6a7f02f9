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
``coverage`` is the share of values within the interval the report draws (t quantile with
``pairs - 1`` degrees of freedom times the standard error) of the exact value and
``se/rmse`` the root-mean-square reported standard error over the real RMSE (1 is honest).
Then the time of exact values where the issue met them: M = 8, 12, 14 with 40 rows against
40 background rows, and the algorithm ``auto`` picks there.

Coverage of the standard errors (``--part coverage``, issue #38): at 10 pairs, the share of
values within 3 reported standard errors (target 98.5%) and within the interval the report
draws (the t quantile with 9 degrees of freedom, 2.262 SE; target 94%), against exact values:

* LightGBM classifiers (200 trees, 15 leaves) on M = 16, 24, 37 features, explained in raw
  log-odds (``output="value"`` on the booster's raw score); exact interventional values from
  ``shap.TreeExplainer(feature_perturbation="interventional")`` over the same background (at
  M = 16 checked against our enumeration on two rows: ``tree oracle vs enumeration``);
* the M = 16 MLP above and an 8-feature model of step functions (the lumpy credits of
  trees), exact by enumeration.

10 rows x 20 background rows x 20 seeds per model. Each candidate standard error is computed
from the same raw jackknife (``permutation_values(..., prior_df=0)``); ``shipped`` is
:func:`modelgate.reports.explain_errors.pooled_standard_errors`, what ``explain`` reports
(tests/reports/test_explain_errors.py checks that equality).

Run from the repository root: ``.venv/bin/python -m bench.bench_shap_accuracy``
(``--part accuracy`` or ``--part coverage`` for one half; coverage takes about a minute).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable

import numpy as np
import onnxruntime as ort
import pandas as pd
import shap
from modelgate.reports.explain_errors import interval_quantile, pooled_standard_errors
from modelgate.reports.explain_estimators import exact_values, permutation_values
from modelgate.reports.explain_masking import MaskedEvaluator
from modelgate.reports.explanation import choose_algorithm, explain
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
        ours, se, theirs_p, theirs_k = [], [], [], []
        fed: list[int] = []

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
                q = interval_quantile(pairs)  # the interval the report draws
                row["coverage"] = float(np.mean(np.abs(ours_a - reference) <= q * se_a))
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


def lightgbm_model(m: int, seed: int = 0) -> Model:
    import lightgbm

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3000, m))
    z = (x[:, 0] * x[:, 1] - x[:, 2] + np.sin(2 * x[:, 3]) + x[:, 4] * x[:, 5] * x[:, 6]
         + (x[:, 7:] > 0.5).sum(1) / 4 + x[:, 7:].sum(1) / 8)
    y = (rng.random(len(x)) < 1 / (1 + np.exp(-z))).astype(int)
    clf = lightgbm.LGBMClassifier(n_estimators=200, num_leaves=15, verbose=-1, random_state=0,
                                  n_jobs=1).fit(x, y)

    def model(a: np.ndarray) -> np.ndarray:
        return np.asarray(clf.predict(np.asarray(a, dtype=np.float64), raw_score=True))

    model.booster = clf  # type: ignore[attr-defined]
    return model


def step_model(a: np.ndarray) -> np.ndarray:
    steps = (a[:, 0] > 0) * (a[:, 1] > 0.5) + (a[:, 2] > 0) * (a[:, 3] < 0) * (a[:, 4] > -0.5)
    return steps + 0.5 * (a[:, 5] > 0) * a[:, 6] + 0.3 * a[:, 7] + 0.2 * a[:, 0] * a[:, 5]


COVERAGE_MODELS = ("lightgbm-16", "lightgbm-24", "lightgbm-37", "mlp-16", "steps-8")
COVERAGE_PAIRS, COVERAGE_SEEDS = 10, range(20)


def coverage_values(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact values, and the estimates and raw jackknife SEs of every seed."""
    kind, m = name.split("-")[0], int(name.split("-")[1])
    model = {"lightgbm": lambda: lightgbm_model(m), "mlp": lambda: build_model(m),
             "steps": lambda: step_model}[kind]()
    rng = np.random.default_rng(200 + m)
    rows, bg = rng.normal(size=(N_ROWS, m)), rng.normal(size=(N_BACKGROUND, m))
    names = tuple(f"x{i}" for i in range(m))
    ev = MaskedEvaluator(lambda f: model(f[list(names)].to_numpy()), names, list(rows.T),
                         list(bg.T), "value", 10**6)
    if kind == "lightgbm":
        tree = shap.TreeExplainer(model.booster, data=bg,  # type: ignore[attr-defined]
                                  feature_perturbation="interventional", model_output="raw")
        exact = np.asarray(tree.shap_values(rows, check_additivity=False))
        if m == 16:  # two rows by enumeration: 2**16 x 2 x 20 booster rows, about 20 s
            two = MaskedEvaluator(ev.predict, names, list(rows[:2].T), list(bg.T), "value", 10**6)
            gap = np.abs(exact[:2] - exact_values(two, 2, m).values).max()
            print(f"{name}: tree oracle vs enumeration (2 rows), max abs difference {gap:.1e}",
                  flush=True)
    else:
        exact = exact_values(ev, N_ROWS, m).values
    runs = [permutation_values(ev, N_ROWS, m, COVERAGE_PAIRS, np.random.default_rng(seed),
                               prior_df=0.0) for seed in COVERAGE_SEEDS]
    return exact, np.stack([r.values for r in runs]), np.stack([r.standard_errors for r in runs])


def candidate_errors(raw: np.ndarray) -> dict[str, np.ndarray]:
    """Candidate standard errors from the raw jackknife of each seed (seeds, rows, features)."""
    var, df = raw**2, COVERAGE_PAIRS - 1
    row, feature = var.mean(axis=2, keepdims=True), var.mean(axis=1, keepdims=True)

    def shrunk(prior: np.ndarray, d0: float) -> np.ndarray:
        return np.sqrt((df * var + d0 * prior) / (df + d0))

    return {"jackknife alone": raw,
            "floor 0.25 x row mean": np.sqrt(np.maximum(var, 0.25 * row)),
            "row mean, d0 4": shrunk(row, 4), "feature mean, d0 4": shrunk(feature, 4),
            "average, d0 4": shrunk((row + feature) / 2, 4),
            "shipped (average, d0 9)": np.stack([pooled_standard_errors(r, COVERAGE_PAIRS)
                                                 for r in raw]),
            "larger, d0 9": shrunk(np.maximum(row, feature), 9)}


def coverage() -> None:
    q = interval_quantile(COVERAGE_PAIRS)
    table: dict[str, list[tuple[float, float, float]]] = {}
    for name in COVERAGE_MODELS:
        start = time.perf_counter()
        exact, values, raw = coverage_values(name)
        err = np.abs(values - exact)
        rmse = float(np.sqrt(np.mean(err**2)))
        print(f"{name}: RMSE {rmse:.5f}, max error {err.max():.4f}, "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        for label, se in candidate_errors(raw).items():
            z = np.where(err < 1e-12, 0.0, err / np.maximum(se, 1e-300))
            table.setdefault(label, []).append((float(np.mean(z <= 3)), float(np.mean(z <= q)),
                                                float(np.sqrt(np.mean(se**2))) / rmse))
    print(f"\n| standard error | {' | '.join(COVERAGE_MODELS)} | lowest |")
    print(f"|---|{'---|' * (len(COVERAGE_MODELS) + 1)}")
    for label, cells in table.items():
        shown = [f"{a:.3f} / {b:.3f} ({c:.2f})" for a, b, c in cells]
        low = f"{min(a for a, _, _ in cells):.3f} / {min(b for _, b, _ in cells):.3f}"
        print(f"| {label} | {' | '.join(shown)} | {low} |")
    print(f"\ncells: within 3 SE / within the drawn interval (+/- {q:.3f} SE) (RMS SE / RMSE)")


def accuracy_tables() -> None:
    rows = [r for m in FEATURE_COUNTS for r in accuracy(m)]
    print("\n| M | E (coalitions/row) | explainer | RMSE | max abs error | spent "
          "| coverage of the t interval "
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("all", "accuracy", "coverage"), default="all")
    part = parser.parse_args().part
    if part in ("all", "coverage"):
        coverage()
    if part in ("all", "accuracy"):
        accuracy_tables()


if __name__ == "__main__":
    main()
