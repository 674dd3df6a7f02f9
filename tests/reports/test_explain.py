"""SHAP values of ``explain`` on a real scikit-learn pipeline (skl2onnx, onnxruntime) against
sklearn's output, Shapley's definition, shap's explainers (e2e tier) and the logistic closed
form; and what is drawn from an explanation: global importance, the rows to explain, waterfalls.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import onnxruntime as ort
import pandas as pd
import pytest
import shap
from modelgate.reports.explanation import (
    Explanation,
    explain,
    global_importance,
    select_rows,
)
from modelgate.reports.waterfall import waterfall_png
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType, StringTensorType
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from support.explain_toy import Predict
from support.shapley_oracle import brute_force_shapley

CATEGORIES = ("red", "green", "<script>", 'say "hi"')
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _make_data(rng: np.random.Generator, n: int, numeric: tuple[str, ...]) -> pd.DataFrame:
    data: dict[str, object] = {f: rng.normal(size=n) for f in numeric}
    data["colour"] = rng.choice(np.array(CATEGORIES, dtype=object), size=n)
    return pd.DataFrame(data)


def _fit_onnx(numeric: tuple[str, ...], seed: int) -> tuple[Predict, Pipeline, pd.DataFrame]:
    """Fit StandardScaler+OneHot+LogisticRegression, convert to ONNX, return a predict."""
    rng = np.random.default_rng(seed)
    frame = _make_data(rng, 300, numeric)
    logit = frame[list(numeric)].to_numpy() @ rng.normal(size=len(numeric))
    logit += frame["colour"].map(dict(zip(CATEGORIES, (1.0, -1.0, 0.5, 0.0), strict=True)))
    y = (rng.random(300) < 1 / (1 + np.exp(-logit))).astype(int)
    pre = ColumnTransformer(
        [("num", StandardScaler(), list(numeric)), ("cat", OneHotEncoder(), ["colour"])]
    )
    clf = LogisticRegression(C=10.0)
    pipe = Pipeline([("pre", pre), ("clf", clf)]).fit(frame, y)
    types = [(f, FloatTensorType([None, 1])) for f in numeric]
    types.append(("colour", StringTensorType([None, 1])))
    onx = convert_sklearn(pipe, initial_types=types, options={id(clf): {"zipmap": False}})
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    out_name = sess.get_outputs()[1].name

    def predict(df: pd.DataFrame) -> np.ndarray:
        feeds = {f: df[f].to_numpy(dtype=np.float32).reshape(-1, 1) for f in numeric}
        feeds["colour"] = df["colour"].to_numpy(dtype=object).reshape(-1, 1)
        return sess.run([out_name], feeds)[0][:, 1].astype(np.float64)

    return predict, pipe, frame


def _batch_invariant(predict: Predict) -> Predict:
    """Pad every batch to a multiple of 64 rows.

    ONNX Runtime's float32 kernels round the SIMD tail of a batch differently (about 1e-7),
    so one row scored in batches of different sizes differs slightly. Padding makes the
    scores batch-invariant, so our one-call batching and shap's per-row calls see
    identical numbers and the algorithms can be compared to 1e-10.
    """

    def padded(df: pd.DataFrame) -> np.ndarray:
        n = len(df)
        pad = (-n) % 64
        if pad:
            df = pd.concat([df, df.iloc[[0] * pad]], ignore_index=True)
        return predict(df)[:n]

    return padded


def _to_logit(predict: Predict) -> Predict:
    def logit(df: pd.DataFrame) -> np.ndarray:
        p = predict(df)
        return np.log(p) - np.log1p(-p)

    return logit


def _shap_model(predict: Predict, columns: list[str]) -> Callable[[np.ndarray], np.ndarray]:
    """shap needs numeric input: colour travels as an integer code, decoded here."""
    cats = np.array(CATEGORIES, dtype=object)

    def model(x: np.ndarray) -> np.ndarray:
        df = pd.DataFrame({c: x[:, j] for j, c in enumerate(columns)})
        df["colour"] = pd.Series(cats[x[:, columns.index("colour")].astype(int)], dtype=object)
        return predict(df)

    return model


def _encode(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    out = frame[columns].copy()
    out["colour"] = out["colour"].map({c: i for i, c in enumerate(CATEGORIES)})
    return out.to_numpy(dtype=np.float64)


@pytest.fixture(scope="module")
def model3() -> tuple[Predict, Pipeline, pd.DataFrame]:
    predict, pipe, frame = _fit_onnx(("a", "b"), seed=1)
    return _batch_invariant(predict), pipe, frame


@pytest.fixture(scope="module")
def model2() -> tuple[Predict, Pipeline, pd.DataFrame]:
    predict, pipe, frame = _fit_onnx(("a",), seed=2)
    return _batch_invariant(predict), pipe, frame


FEATURES3 = ["a", "b", "colour"]


@pytest.mark.parametrize("output", ["probability", "logit"])
@pytest.mark.parametrize("algorithm", ["permutation", "exact"])
def test_additive_and_output_matches_sklearn(model3, algorithm, output) -> None:
    predict, pipe, frame = model3
    ex = explain(
        predict,
        frame.iloc[:30],
        frame.iloc[100:160],
        features=FEATURES3,
        algorithm=algorithm,
        n_permutations=3,
        output=output,
    )
    p = pipe.predict_proba(frame.iloc[:30])[:, 1]
    expected = p if output == "probability" else np.log(p / (1 - p))
    np.testing.assert_allclose(ex.model_output, expected, atol=1e-5)
    gap = ex.base_values + ex.values.sum(axis=1) - ex.model_output
    assert np.abs(gap).max() <= 1e-6
    assert ex.algorithm == algorithm and ex.output == output
    assert ex.values.shape == (30, 3) and ex.values.dtype == np.float64
    assert ex.standard_errors.shape == (30, 3) and np.all(ex.standard_errors >= 0)
    assert (algorithm == "exact") == (not ex.standard_errors.any())


def _shap_exact(predict: Predict, rows: pd.DataFrame, bg: pd.DataFrame, cols: list[str]) -> np.ndarray:
    masker = shap.maskers.Independent(_encode(bg, cols), max_samples=len(bg))
    return shap.explainers.Exact(_shap_model(predict, cols), masker)(_encode(rows, cols)).values


def _shap_permutation(predict: Predict, rows: pd.DataFrame, bg: pd.DataFrame, cols: list[str]) -> np.ndarray:
    masker = shap.maskers.Independent(_encode(bg, cols), max_samples=len(bg))
    model = _shap_model(predict, cols)
    return shap.explainers.Permutation(model, masker, seed=3)(_encode(rows, cols), max_evals=5).values


# Shapley's definition in the fast tier, shap's explainers in the e2e tier (numba compiles)
ORACLES = [pytest.param(brute_force_shapley, id="definition"),
           pytest.param(_shap_exact, id="shap-exact", marks=pytest.mark.e2e)]


@pytest.mark.parametrize("oracle", ORACLES)
@pytest.mark.parametrize("output", ["probability", "logit"])
def test_exact_equals_the_oracle(model3, output, oracle) -> None:
    predict, _, frame = model3
    rows, bg = frame.iloc[:8], frame.iloc[100:140]
    ours = explain(predict, rows, bg, features=FEATURES3, algorithm="exact", output=output)
    target = predict if output == "probability" else _to_logit(predict)
    theirs = oracle(target, rows, bg, FEATURES3)
    np.testing.assert_allclose(ours.values, theirs, rtol=0, atol=1e-10)
    # the base value is the mean model output over the background
    np.testing.assert_allclose(ours.base_values, target(bg).mean(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("oracle", [*ORACLES, pytest.param(_shap_permutation, id="shap-permutation",
                                                           marks=pytest.mark.e2e)])
def test_permutation_two_features_equals_the_oracle(model2, oracle) -> None:
    # with two features one antithetic pair covers both orderings: the estimate is exact,
    # and every pair agrees, so the standard error is 0
    predict, _, frame = model2
    cols = ["a", "colour"]
    rows, bg = frame.iloc[:6], frame.iloc[50:90]
    ours = explain(predict, rows, bg, features=cols, algorithm="permutation", n_permutations=2)
    np.testing.assert_allclose(ours.standard_errors, 0.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.values, oracle(predict, rows, bg, cols), rtol=0, atol=1e-10)


def test_permutation_converges_to_exact(model3) -> None:
    predict, _, frame = model3
    rows, bg = frame.iloc[:5], frame.iloc[100:130]
    exact = explain(predict, rows, bg, features=FEATURES3, algorithm="exact").values
    errors = [
        np.abs(
            explain(
                predict,
                rows,
                bg,
                features=FEATURES3,
                algorithm="permutation",
                n_permutations=n,
                seed=7,
            ).values
            - exact
        ).max()
        for n in (2, 300)
    ]
    assert errors[1] < errors[0]
    assert errors[1] < 0.05 * np.abs(exact).max()


@pytest.mark.parametrize("algorithm", ["permutation", "exact"])
def test_logit_space_matches_logistic_regression_closed_form(model3, algorithm) -> None:
    # logit(f(x)) = b + sum_j w_j (x_j - mu_j) / s_j + w_colour(x); with an independent
    # masker each feature's SHAP value is its term minus the term's background mean
    predict, pipe, frame = model3
    rows, bg = frame.iloc[:20], frame.iloc[150:250]
    ex = explain(
        predict, rows, bg, features=FEATURES3, algorithm=algorithm, n_permutations=2, output="logit"
    )
    scaler = pipe.named_steps["pre"].named_transformers_["num"]
    onehot = pipe.named_steps["pre"].named_transformers_["cat"]
    coef = pipe.named_steps["clf"].coef_[0]
    w_num = coef[:2] / scaler.scale_
    w_cat = dict(zip(onehot.categories_[0], coef[2:], strict=True))
    expected = np.column_stack(
        [
            w_num[0] * (rows["a"] - bg["a"].mean()),
            w_num[1] * (rows["b"] - bg["b"].mean()),
            rows["colour"].map(w_cat) - bg["colour"].map(w_cat).mean(),
        ]
    )
    np.testing.assert_allclose(ex.values, expected, atol=2e-5)
    # additive in log-odds: every ordering credits the same, so no sampling error
    np.testing.assert_allclose(ex.standard_errors, 0.0, atol=1e-5)


def test_categorical_is_one_feature_and_zero_when_background_agrees(model3) -> None:
    predict, _, frame = model3
    bg = frame.iloc[100:140].assign(colour="<script>")
    rows = frame.iloc[:5].assign(colour="<script>")
    ex = explain(predict, rows, bg, features=FEATURES3, algorithm="exact")
    assert ex.features == ("a", "b", "colour")
    assert ex.values.shape == (5, 3)
    np.testing.assert_array_equal(ex.values[:, 2], 0.0)
    assert list(ex.feature_values[:, 2]) == ["<script>"] * 5


def test_chunking_does_not_change_values(model3) -> None:
    predict, _, frame = model3
    calls: list[int] = []

    def counting(df: pd.DataFrame) -> np.ndarray:
        calls.append(len(df))
        return predict(df)

    args = (counting, frame.iloc[:10], frame.iloc[100:150])
    big = explain(*args, features=FEATURES3, algorithm="permutation", n_permutations=4)
    n_big = len(calls)
    small = explain(
        *args, features=FEATURES3, algorithm="permutation", n_permutations=4, max_batch_rows=500
    )
    assert n_big == 3  # background, rows, one chunk of coalitions
    assert len(calls) - n_big > 3 and max(calls[n_big:]) <= 500
    np.testing.assert_array_equal(big.values, small.values)


def _hand_explanation(values: list[list[float]], raw: list[list[object]]) -> Explanation:
    v = np.array(values, dtype=np.float64)
    from modelgate.reports.explanation import ExplanationBudget

    return Explanation(
        features=tuple(f"f{i}" for i in range(v.shape[1])),
        values=v,
        base_values=np.full(len(v), 0.25),
        model_output=0.25 + v.sum(axis=1),
        feature_values=np.array(raw, dtype=object),
        output="probability",
        algorithm="exact",
        budget=ExplanationBudget(4, 0, 10, 50),
        standard_errors=np.zeros_like(v),
    )


def test_global_importance_hand_worked() -> None:
    ex = _hand_explanation([[1.0, -3.0, 0.5], [-1.0, 1.0, -0.5]], [[0, 0, 0], [0, 0, 0]])
    assert global_importance(ex) == (("f1", 2.0), ("f0", 1.0), ("f2", 0.5))


def test_select_rows_hand_worked() -> None:
    scores = [0.95, 0.10, 0.70, 0.05, 0.40, 0.80, 0.30, 0.60]
    y_true = [0, 1, 1, 0, 1, 0, 0, 1]
    y_pred = [1, 0, 1, 0, 0, 1, 0, 1]
    sel = select_rows(scores, y_true, y_pred, n_each=2, n_random=0)
    # highest: 0, 5; lowest: 3, 1; false positives (pred 1, true 0): 0, 5;
    # false negatives (pred 0, true 1), lowest first: 1, 4
    assert sel.indices.tolist() == [0, 5, 3, 1, 4]
    assert sel.reasons == (
        ("highest_score", "false_positive"),
        ("highest_score", "false_positive"),
        ("lowest_score",),
        ("lowest_score", "false_negative"),
        ("false_negative",),
    )


def test_select_rows_random_is_seeded_and_disjoint() -> None:
    rng = np.random.default_rng(11)
    scores = rng.random(40)
    y_true = rng.integers(0, 2, 40)
    y_pred = (scores > 0.5).astype(int)
    a = select_rows(scores, y_true, y_pred, n_random=5, seed=4)
    b = select_rows(scores, y_true, y_pred, n_random=5, seed=4)
    assert a.indices.tolist() == b.indices.tolist()
    assert len(set(a.indices.tolist())) == len(a.indices)
    assert sum(r == ("random",) for r in a.reasons) == 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([0.1, 0.2], [0, 1], [0]), r"y_pred must have shape \(2,\)"),
        (([0.1, 0.2], [0, 2], [0, 1]), "y_true must hold only 0 and 1"),
        (([0.1, np.nan], [0, 1], [0, 1]), "finite"),
    ],
    ids=["length", "labels", "nan"],
)
def test_select_rows_validation(args, message) -> None:
    with pytest.raises(ValueError, match=message):
        select_rows(*args)


ODD = ["<script>alert(1)</script>", "say \"hi\" & 'bye'", "$x^2$ costs $5", "two\nlines", "é" * 60]


def test_waterfall_png_small_deterministic_and_safe_with_odd_strings() -> None:
    raw = [[ODD[i % len(ODD)] if i % 2 else float(i) for i in range(14)]]
    values = [[(-1) ** i * 0.01 * (i + 1) for i in range(14)]]
    ex = _hand_explanation(values, raw)
    png = waterfall_png(ex, 0, title='<b>$title$ "quoted"</b>')
    assert png.startswith(PNG_MAGIC)
    assert len(png) < 100_000
    assert waterfall_png(ex, 0, title='<b>$title$ "quoted"</b>') == png
    assert waterfall_png(ex, -1, max_display=3).startswith(PNG_MAGIC)


def test_waterfall_png_from_onnx_explanation(model3) -> None:
    predict, _, frame = model3
    ex = explain(predict, frame.iloc[:3], frame.iloc[100:130], features=FEATURES3)
    png = waterfall_png(ex, 2)
    assert png.startswith(PNG_MAGIC) and len(png) < 100_000
    with pytest.raises(ValueError, match=r"row_index must be in \[-3, 3\); got 3"):
        waterfall_png(ex, 3)
    assert math.isfinite(float(ex.model_output[2]))
