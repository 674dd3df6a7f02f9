"""Tests for modelgate.reports.explanation and modelgate.reports.waterfall.

Expected values come from Shapley's definition written out in the tests
(``support/shapley_oracle.py``), from shap's own explainers (ExactExplainer,
PermutationExplainer; in the e2e tier, as their numba kernels take seconds to compile in each
test process) and from the closed form of a logistic regression in log-odds space; the model
is a real scikit-learn pipeline converted with skl2onnx and scored with onnxruntime.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import onnxruntime as ort
import pandas as pd
import pytest
import shap
from hypothesis import given, settings
from hypothesis import strategies as st
from modelgate.reports.explanation import (
    AdditivityError,
    Explanation,
    _check_additivity,
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
from support.shapley_oracle import brute_force_shapley

CATEGORIES = ("red", "green", "<script>", 'say "hi"')
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

Predict = Callable[[pd.DataFrame], np.ndarray]


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


def _toy_predict(df: pd.DataFrame) -> np.ndarray:
    x = df[["p", "q", "r", "s"]].to_numpy(dtype=np.float64)
    z = x[:, 0] - 2 * x[:, 1] * x[:, 2] + np.sin(x[:, 3]) + (df["k"] == "u").to_numpy()
    return 1 / (1 + np.exp(-z))


def _toy_frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    frame = pd.DataFrame(rng.normal(size=(n, 4)), columns=["p", "q", "r", "s"])
    frame["k"] = rng.choice(np.array(["u", "v", "w"], dtype=object), size=n)
    return frame


TOY = ["p", "q", "r", "s", "k"]


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_permutations=st.integers(2, 6),
    algorithm=st.sampled_from(["permutation", "exact", "auto"]),
    output=st.sampled_from(["probability", "logit"]),
)
def test_property_additive(seed, n_permutations, algorithm, output) -> None:
    rng = np.random.default_rng(seed)
    rows, bg = _toy_frame(rng, 4), _toy_frame(rng, 7)
    ex = explain(
        _toy_predict,
        rows,
        bg,
        features=TOY,
        algorithm=algorithm,
        n_permutations=n_permutations,
        seed=seed,
        output=output,
    )
    assert np.abs(ex.base_values + ex.values.sum(axis=1) - ex.model_output).max() <= 1e-9


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_property_exact_ignores_row_and_background_order(seed) -> None:
    rng = np.random.default_rng(seed)
    rows, bg = _toy_frame(rng, 5), _toy_frame(rng, 6)
    ex = explain(_toy_predict, rows, bg, features=TOY, algorithm="exact")
    order = rng.permutation(5)
    shuffled = explain(
        _toy_predict,
        rows.iloc[order],
        bg.sample(frac=1.0, random_state=1),
        features=TOY,
        algorithm="exact",
    )
    np.testing.assert_allclose(shuffled.values, ex.values[order], atol=1e-12)


def test_toy_exact_matches_the_definition_on_interactions() -> None:
    rng = np.random.default_rng(5)
    rows, bg = _toy_frame(rng, 6), _toy_frame(rng, 20)
    ex = explain(_toy_predict, rows, bg, features=TOY, algorithm="exact")
    np.testing.assert_allclose(ex.values, brute_force_shapley(_toy_predict, rows, bg, TOY), rtol=0,
                               atol=1e-12)


@pytest.mark.e2e  # shap's Exact explainer compiles its numba kernels: seconds per process
def test_toy_exact_matches_shap_exact_on_interactions() -> None:
    rng = np.random.default_rng(5)
    rows, bg = _toy_frame(rng, 6), _toy_frame(rng, 20)
    ex = explain(_toy_predict, rows, bg, features=TOY, algorithm="exact")
    codes = {"u": 0.0, "v": 1.0, "w": 2.0}
    levels = np.array(["u", "v", "w"], dtype=object)

    def model(x: np.ndarray) -> np.ndarray:
        df = pd.DataFrame(x[:, :4], columns=TOY[:4]).assign(k=levels[x[:, 4].astype(int)])
        return _toy_predict(df)

    def enc(f: pd.DataFrame) -> np.ndarray:
        return f.assign(k=f["k"].map(codes))[TOY].to_numpy(dtype=np.float64)

    masker = shap.maskers.Independent(enc(bg), max_samples=20)
    theirs = shap.explainers.Exact(model, masker)(enc(rows))
    np.testing.assert_allclose(ex.values, theirs.values, rtol=0, atol=1e-12)


def test_budget_defaults_recorded() -> None:
    rng = np.random.default_rng(0)
    rows, bg = _toy_frame(rng, 3), _toy_frame(rng, 250)
    ex = explain(_toy_predict, rows, bg, features=TOY, algorithm="permutation")
    assert ex.budget.background_size == 100
    assert ex.budget.n_permutations == 10
    # prefixes of sizes 2 .. M-2 of 20 orderings, M singletons, M complements, 2 endpoints,
    # but never more than the 2**M coalitions there are
    assert ex.budget.evaluations_per_row == min(20 * 2 + 5 + 5 + 2, 2**5)
    assert ex.budget.max_rows == 50
    auto = explain(_toy_predict, rows, bg, features=TOY)
    assert auto.algorithm == "exact" and auto.budget.evaluations_per_row == 2**5
    assert auto.budget.n_permutations == 0


@pytest.mark.parametrize(
    "m, n_background, n_rows, expected",
    [(10, 1000, 50, "exact"), (11, 100, 10, "exact"), (14, 40, 40, "exact"),
     (15, 100, 10, "exact"), (15, 100, 11, "permutation"), (16, 16, 32, "exact"),
     (16, 16, 33, "permutation"), (17, 1, 1, "permutation")],
    ids=lambda v: str(v),
)
def test_auto_is_exact_within_the_evaluation_budget(
    m: int, n_background: int, n_rows: int, expected: str
) -> None:
    """Exact for M <= 10, and for M <= 16 while 2**M x background x rows <= 2**25; by hand:
    2**15 * 100 * 10 = 32,768,000 <= 33,554,432 < 2**15 * 100 * 11; 2**16 * 16 * 32 = 2**25."""
    from modelgate.reports.explanation import choose_algorithm

    assert choose_algorithm(m, n_background, n_rows) == expected
    if expected == "permutation":
        with pytest.raises(ValueError, match="algorithm='exact' with"):
            choose_algorithm(m, n_background, n_rows, algorithm="exact")


def _bad_shape(df: pd.DataFrame) -> np.ndarray:
    return np.full((len(df), 2), 0.5)


# ------------------------------------------------------- deduplication against a plain loop
#
# explain scores each distinct masked input once. The references below score every
# (coalition, background row) input with one predict call per coalition and average
# plainly, so a wrong merge of two different inputs, or a wrong multiplicity, shows up.


def _reference_v(
    predict: Predict, row: pd.Series, bg: pd.DataFrame, present: set[str], output: str
) -> float:
    """Mean output over the background with the features in ``present`` taken from ``row``."""
    masked = bg.copy()
    for f in present:
        masked[f] = pd.Series([row[f]] * len(bg), index=bg.index, dtype=bg[f].dtype)
    p = np.asarray(predict(masked), dtype=np.float64)
    return float(np.mean(p if output == "probability" else np.log(p) - np.log1p(-p)))


def _reference_exact(predict, rows, bg, features, output) -> np.ndarray:
    m = len(features)
    out = np.zeros((len(rows), m))
    for i in range(len(rows)):
        row = rows.iloc[i]
        v = {
            frozenset(s): _reference_v(predict, row, bg, set(s), output)
            for size in range(m + 1)
            for s in itertools.combinations(features, size)
        }
        for j, f in enumerate(features):
            for s, value in v.items():
                if f not in s:
                    w = math.factorial(len(s)) * math.factorial(m - len(s) - 1) / math.factorial(m)
                    out[i, j] += w * (v[s | {f}] - value)
    return out


def _reference_permutation(predict, rows, bg, features, n_permutations, seed, output):
    # the orderings explain draws: default_rng(seed).permuted per row (the background is
    # not subsampled here, so nothing else is drawn first), each followed by its reverse;
    # then the estimate its docstring defines: (first + last) / M exactly, plus (M - 2) / M
    # times the mean credit in a middle position, the miss of f(x) - E[f(X)] shared equally
    m = len(features)
    rng = np.random.default_rng(seed)
    forward = rng.permuted(np.tile(np.arange(m), (len(rows), n_permutations, 1)), axis=2)
    orders = np.concatenate([forward, forward[:, :, ::-1]], axis=1)
    out = np.zeros((len(rows), m))
    for i in range(len(rows)):
        row = rows.iloc[i]
        empty = _reference_v(predict, row, bg, set(), output)
        full = _reference_v(predict, row, bg, set(features), output)
        middle: list[list[float]] = [[] for _ in range(m)]
        every: list[list[float]] = [[] for _ in range(m)]
        for order in orders[i]:
            prev = empty
            for k in range(m):
                now = _reference_v(predict, row, bg, {features[j] for j in order[: k + 1]}, output)
                every[order[k]].append(now - prev)
                if 0 < k < m - 1:
                    middle[order[k]].append(now - prev)
                prev = now
        for j, f in enumerate(features):
            first = _reference_v(predict, row, bg, {f}, output) - empty
            last = full - _reference_v(predict, row, bg, set(features) - {f}, output)
            mid = np.mean(middle[j]) if middle[j] else np.mean(every[j])
            out[i, j] = (first + last) / m + (m - 2) / m * mid
        out[i] += (full - empty - out[i].sum()) / m
    return out


def _dup_frame(rng: np.random.Generator, n: int, continuous: bool) -> pd.DataFrame:
    """Toy frame; unless ``continuous``, p, q and s take few values (many repeated inputs)."""
    frame = _toy_frame(rng, n)
    if not continuous:
        frame["p"] = rng.integers(0, 3, n).astype(np.float64)
        frame["q"] = rng.choice([-0.5, 0.5], n)
        frame["s"] = rng.choice([0.0, 1.0], n)
    return frame


def _counting(predict: Predict, calls: list[int]) -> Predict:
    def counted(df: pd.DataFrame) -> np.ndarray:
        calls.append(len(df))
        return predict(df)

    return counted


@pytest.mark.parametrize("output", ["probability", "logit"])
@pytest.mark.parametrize("algorithm", ["exact", "permutation"])
@pytest.mark.parametrize("continuous", [False, True], ids=["few_values", "continuous"])
def test_deduplicated_equals_plain_loop(algorithm, output, continuous) -> None:
    rng = np.random.default_rng(21)
    bg = _dup_frame(rng, 12, continuous)
    rows = _dup_frame(rng, 3, continuous)
    rows = pd.concat([rows, rows.iloc[[0]], bg.iloc[[2]]], ignore_index=True)  # repeats
    calls: list[int] = []
    ex = explain(
        _counting(_toy_predict, calls),
        rows,
        bg,
        features=TOY,
        algorithm=algorithm,
        n_permutations=2,
        seed=9,
        max_batch_rows=50,
        output=output,
    )
    if algorithm == "exact":
        expected = _reference_exact(_toy_predict, rows, bg, TOY, output)
    else:
        expected = _reference_permutation(_toy_predict, rows, bg, TOY, 2, 9, output)
    np.testing.assert_allclose(ex.values, expected, rtol=0, atol=1e-12)
    if algorithm == "exact":  # every inner coalition of every row, times the background
        every_input = len(bg) + len(rows) + len(rows) * (2 ** len(TOY) - 2) * len(bg)
        assert (sum(calls) < every_input) == (not continuous)


@pytest.mark.parametrize("dtype", [np.float64, object], ids=["float", "object"])
def test_negative_zero_is_not_merged_with_zero(dtype) -> None:
    # a model that tells -0.0 from 0.0 (np.copysign): deduplication must keep them apart
    def signed(df: pd.DataFrame) -> np.ndarray:
        z = np.copysign(1.0, df["s"].to_numpy(dtype=np.float64)) + df["t"].to_numpy(np.float64)
        return 1 / (1 + np.exp(-z))

    signs = np.array([0.0, -0.0] * 10, dtype=dtype)
    bg = pd.DataFrame({"s": signs, "t": np.zeros(20)})
    rows = pd.DataFrame({"s": np.array([0.0, -0.0], dtype=dtype), "t": [1.0, 1.0]})
    ex = explain(signed, rows, bg, features=["s", "t"], algorithm="exact")
    expected = _reference_exact(signed, rows, bg, ["s", "t"], "probability")
    np.testing.assert_allclose(ex.values, expected, rtol=0, atol=1e-12)
    assert ex.values[0, 0] > 0 > ex.values[1, 0]


@pytest.mark.parametrize(
    ("values", "as_category"),
    [
        (["red", "green", "blue"], True),
        ([3, "x", (1, 2)], True),  # mixed but distinct and hashable
        (["red", None, "blue"], False),  # missing value
        ([1, 1.0, "x"], False),  # 1 == 1.0: one category would stand for both
        (["a", ["unhashable"], "b"], False),
    ],
    ids=["strings", "mixed", "missing", "equal-not-identical", "unhashable"],
)
def test_predict_sees_categoricals_only_when_they_keep_every_value(values, as_category) -> None:
    seen: list[pd.Series] = []
    keys = {repr(v): k for k, v in enumerate(values)}

    def predict(df: pd.DataFrame) -> np.ndarray:
        seen.append(df["c"])
        z = df["x"].to_numpy() + np.array([keys[repr(v)] for v in df["c"].to_numpy(dtype=object)])
        return 1 / (1 + np.exp(-z))

    column = np.empty(6, dtype=object)
    column[:] = [values[k % 3] for k in range(6)]
    bg = pd.DataFrame({"x": np.linspace(-1, 1, 6), "c": pd.Series(column, dtype=object)})
    ex = explain(predict, bg.iloc[:2], bg, features=["x", "c"], algorithm="exact")
    assert {isinstance(s.dtype, pd.CategoricalDtype) for s in seen} == {as_category}
    assert {s.dtype == object for s in seen} == {not as_category}
    # the values predict sees are the originals either way (type included: 1 is not 1.0)
    expected = _reference_exact(predict, bg.iloc[:2], bg, ["x", "c"], "probability")
    np.testing.assert_allclose(ex.values, expected, rtol=0, atol=1e-12)


def test_deduplicated_wide_model_equals_plain_loop() -> None:
    # 64 features: masks and keys no longer fit one int64, the slower exact paths run
    names = [f"w{j}" for j in range(64)]
    weights = np.random.default_rng(3).normal(size=64)

    def wide(df: pd.DataFrame) -> np.ndarray:
        x = df[names].to_numpy(dtype=np.float64)
        return 1 / (1 + np.exp(-(x @ weights + x[:, 0] * x[:, 1])))

    rng = np.random.default_rng(4)
    pool = pd.DataFrame(rng.normal(size=(3, 64)), columns=names)
    bg = pool.iloc[[0, 1, 0, 1]].reset_index(drop=True)  # every input repeated twice
    rows = pool.iloc[[2, 2]].reset_index(drop=True)
    calls: list[int] = []
    ex = explain(
        _counting(wide, calls), rows, bg, features=names, algorithm="permutation", n_permutations=2
    )
    expected = _reference_permutation(wide, rows, bg, names, 2, 0, "probability")
    np.testing.assert_allclose(ex.values, expected, rtol=0, atol=1e-12)
    assert sum(calls) < len(bg) + len(rows) + 4 * 63 * len(rows) * len(bg)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"features": ["p", "zz", "yy"]}, r"rows is missing feature columns \['zz', 'yy'\]"),
        ({"features": []}, "features is empty"),
        ({"features": ["p", "p"]}, "repeated"),
        ({"features": TOY, "algorithm": "sampling"}, "algorithm must be one of"),
        ({"features": TOY, "output": "margin"}, "output must be one of"),
        ({"features": TOY, "n_permutations": 0}, "n_permutations must be an integer >= 1"),
        ({"features": TOY, "algorithm": "permutation", "n_permutations": 1},
         "n_permutations must be >= 2 for the permutation estimator"),
        ({"features": TOY, "algorithm": "kernel"}, "algorithm must be one of"),
        ({"features": TOY, "max_rows": 2}, "more than max_rows=2"),
        (
            {"features": TOY, "predict": _bad_shape},
            r"predict must return shape \(5,\); got \(5, 2\)",
        ),
        ({"features": TOY, "predict": lambda d: np.full(len(d), 1.5)}, r"in \[0, 1\]; got 1.5"),
        ({"features": TOY, "predict": lambda d: np.ones(len(d)), "output": "logit"}, "saturated"),
    ],
    ids=[
        "missing",
        "no-features",
        "duplicate",
        "algorithm",
        "output",
        "n-perm",
        "n-perm-se",
        "kernel-gone",
        "max-rows",
        "predict-shape",
        "predict-range",
        "logit-saturated",
    ],
)
def test_validation(kwargs, message) -> None:
    rng = np.random.default_rng(0)
    rows, bg = _toy_frame(rng, 3), _toy_frame(rng, 5)
    predict = kwargs.pop("predict", _toy_predict)
    with pytest.raises(ValueError, match=message):
        explain(predict, rows, bg, **kwargs)


def test_validation_empty_inputs() -> None:
    rng = np.random.default_rng(0)
    rows, bg = _toy_frame(rng, 3), _toy_frame(rng, 5)
    with pytest.raises(ValueError, match="rows is empty"):
        explain(_toy_predict, rows.iloc[:0], bg, features=TOY)
    with pytest.raises(ValueError, match="background is empty"):
        explain(_toy_predict, rows, bg.iloc[:0], features=TOY)
    with pytest.raises(ValueError, match=r"background is missing feature columns \['k'\]"):
        explain(_toy_predict, rows, bg.drop(columns="k"), features=TOY)


def test_additivity_error_names_worst_row() -> None:
    values = np.array([[0.1, 0.2], [0.3, 0.3], [0.0, 0.0]])
    base = np.full(3, 0.5)
    _check_additivity(values, base, np.array([0.8, 1.1, 0.5]))
    with pytest.raises(AdditivityError, match="row 1 .* 0.0100000"):
        _check_additivity(values, base, np.array([0.8, 1.09, 0.5]))
    with pytest.raises(AdditivityError, match="row 2 .* inf"):
        _check_additivity(values, base, np.array([0.8, 1.1, np.nan]))


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
