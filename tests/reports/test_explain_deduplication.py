"""``explain`` scores each distinct masked input once; the references here score every
(coalition, background row) input with one predict call per coalition and average plainly, so a
wrong merge of two different inputs, or a wrong multiplicity, shows up."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from modelgate.reports.explanation import explain
from support.explain_toy import TOY, Predict
from support.explain_toy import toy_frame as _toy_frame
from support.explain_toy import toy_predict as _toy_predict


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
