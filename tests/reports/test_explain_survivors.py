"""Cases for the mutation survivors of ``reports/explanation.py`` (its full session; the partial
one's are in test_explain_options.py). Oracles: closed-form SHAP values of linear log-odds
models (``SHAP_i = w_i (x_i - mean_background(x_i))``), brute force over every coalition,
and hand-worked sets and counts."""

from __future__ import annotations

import dataclasses
import inspect
import re

import numpy as np
import pandas as pd
import pytest
from modelgate.reports.explanation import (
    AdditivityError,
    Explanation,
    ExplanationBudget,
    choose_algorithm,
    explain,
    explain_class,
    importance_standard_errors,
)
from modelgate.reports.explanation import _check_additivity as check_additivity

BG = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})


def _linear(frame: pd.DataFrame) -> np.ndarray:
    # in log-odds a + 2 b, so with output="logit" SHAP = (1 (a - 0.5), 2 (b - 0.5))
    return 1.0 / (1.0 + np.exp(-(frame["a"] + 2.0 * frame["b"]).to_numpy()))


def _spelled(*parts: str) -> str:
    """An option name built at run time, so it is equal to, but not the same object as, the
    literal in the module (kills ``==`` made ``is``)."""
    return "".join(parts)


# ------------------------------------------------------------------ choose_algorithm


def test_permutation_asked_for_at_run_time_is_permutation_even_where_exact_fits() -> None:
    # 2**3 * 10 * 10 = 800 evaluations: "auto" would be exact, "permutation" is obeyed
    assert choose_algorithm(3, 10, 10, algorithm=_spelled("permu", "tation")) == "permutation"
    rows = pd.DataFrame({"a": [1.0], "b": [1.0], "c": [0.0]})
    bg = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0], "c": [1.0, 0.0]})
    ex = explain(_linear, rows, bg, features=["a", "b", "c"], output="logit",
                 algorithm=_spelled("permu", "tation"), n_permutations=2)
    assert ex.algorithm == "permutation" and ex.budget.n_permutations == 2
    # additive model: every ordering gives the closed form (c has weight 0)
    np.testing.assert_allclose(ex.values, [[0.5, 1.0, 0.0]], atol=1e-12)


def test_exact_asked_for_at_run_time_is_refused_past_the_budget() -> None:
    # 2**14 * 100 * 50 = 81,920,000 > 2**25 evaluations, and 14 > 10 features
    with pytest.raises(ValueError, match="algorithm='exact' with 14 features needs 81920000"):
        choose_algorithm(14, 100, 50, algorithm=_spelled("ex", "act"))


def test_the_documented_defaults() -> None:
    params = inspect.signature(explain).parameters
    assert params["seed"].default == 0
    assert params["algorithm"].default == "auto"
    assert params["output"].default == "probability"
    assert params["n_permutations"].default == 10
    assert params["background_size"].default == 100
    assert params["max_rows"].default == 50
    assert params["exact_budget"].default == 2**25 == 33_554_432


# ------------------------------------------------------------------ n_permutations


def test_one_permutation_pair_is_enough_when_the_values_are_exact() -> None:
    # n_permutations only matters to the permutation estimator; exact values ignore it
    rows = pd.DataFrame({"a": [1.0], "b": [0.0]})
    for algorithm in ("exact", "auto"):
        ex = explain(_linear, rows, BG, features=["a", "b"], output="logit", algorithm=algorithm,
                     n_permutations=1)
        assert ex.algorithm == "exact" and ex.budget.n_permutations == 0
        np.testing.assert_allclose(ex.values, [[0.5, -1.0]], atol=1e-12)


def test_two_features_estimated_by_permutation_need_two_pairs() -> None:
    with pytest.raises(ValueError, match="n_permutations must be >= 2 for the permutation"):
        explain(_linear, BG, BG, features=["a", "b"], algorithm="permutation", n_permutations=1)
    # with two pairs the estimate runs (and is reported) as the permutation estimator; with
    # two features every ordering covers both coalitions, so it equals the closed form
    ex = explain(_linear, BG, BG, features=["a", "b"], algorithm="permutation", n_permutations=2,
                 output="logit")
    assert ex.algorithm == "permutation" and ex.budget.n_permutations == 2
    np.testing.assert_allclose(ex.values, [[-0.5, -1.0], [0.5, 1.0]], atol=1e-12)


# ------------------------------------------------------------------ inputs


def test_a_one_row_background_is_accepted() -> None:
    # one background row: the base value is the model there, SHAP = w (x - b) in log-odds
    ex = explain(_linear, BG.iloc[[1]], BG.iloc[[0]], features=["a", "b"], output="logit")
    assert ex.base_values[0] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(ex.values, [[1.0, 2.0]], atol=1e-12)


def test_additivity_gap_equal_to_the_tolerance_passes() -> None:
    # binary fractions: base + sum - output = 0.5 + 0.25 - 0.0 = 0.75 exactly
    values, base = np.array([[0.25]]), np.array([0.5])
    check_additivity(values, base, np.array([0.0]), tolerance=0.75)
    with pytest.raises(AdditivityError, match="row 0 .* = 0.75, above the tolerance 0.5"):
        check_additivity(values, base, np.array([0.0]), tolerance=0.5)


# ------------------------------------------------------------------ explain_class


@pytest.mark.parametrize("class_index", [None, 0], ids=["predicted_class", "class_0"])
def test_explain_class_refuses_one_probability_per_row(class_index: int | None) -> None:
    # a binary scorer's [N] positive-class vector is not the [N, C] table asked for
    def one_column(frame: pd.DataFrame) -> np.ndarray:
        return _linear(frame)

    with pytest.raises(ValueError, match=r"predict_classes must return shape \(2, C\); got \(2,\)"):
        explain_class(one_column, BG, BG, features=["a", "b"], class_index=class_index)


@pytest.mark.parametrize("shape", [(3, 3), (1, 3), (2, 3, 1)],
                         ids=["extra_row", "missing_row", "3d"])
def test_explain_class_refuses_a_table_of_the_wrong_shape(shape: tuple[int, ...]) -> None:
    def wrong(frame: pd.DataFrame) -> np.ndarray:
        return np.full(shape, 1.0 / 3.0)

    with pytest.raises(ValueError, match=rf"predict_classes must return shape \(2, C\); got "
                                         rf"{re.escape(repr(shape))}"):
        explain_class(wrong, BG, BG, features=["a", "b"])


def _three_classes(frame: pd.DataFrame) -> np.ndarray:
    z = np.exp(np.column_stack([frame["a"], frame["b"], 0.0 * frame["a"]]))
    return z / z.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("k", [1, 2])
def test_explain_class_takes_every_class_up_to_the_last(k: int) -> None:
    ex, explained = explain_class(_three_classes, BG, BG, features=["a", "b"], class_index=k)
    assert explained.tolist() == [k, k]
    assert ex.values.shape == (2, 2) and ex.model_output.shape == (2,)
    # softmax(a, b, 0) at (0, 0) and (1, 1): 1/3 each, then (e, e, 1) / (2e + 1)
    expected = [1 / 3, (np.e if k == 1 else 1.0) / (2 * np.e + 1)]
    np.testing.assert_allclose(ex.model_output, expected, atol=1e-12)


def test_explain_class_refuses_the_class_count_itself() -> None:
    with pytest.raises(ValueError, match="class_index must be in 0..2; got 3"):
        explain_class(_three_classes, BG, BG, features=["a", "b"], class_index=3)


def test_explain_class_of_more_than_256_rows() -> None:
    """300 rows (Python caches ints only up to 256, so an identity test of the row count
    fails where equality holds): the class table is the right shape and is used."""
    rows = pd.DataFrame({"a": np.tile([0.0, 1.0], 150), "b": np.tile([1.0, 0.0], 150)})
    ex, explained = explain_class(_three_classes, rows, BG, features=["a", "b"], max_rows=300)
    # softmax(a, b, 0): (0, 1) -> class 1, (1, 0) -> class 0, each with e / (e + 2)
    assert explained.tolist() == [1, 0] * 150
    assert ex.values.shape == (300, 2) and ex.model_output.shape == (300,)
    np.testing.assert_allclose(ex.model_output, np.e / (np.e + 2), atol=1e-12)


# ------------------------------------------------------------------ records


def test_explanation_and_budget_are_frozen_slotted_records() -> None:
    ex = explain(_linear, BG.iloc[[1]], BG, features=["a", "b"], output="logit")
    assert [f.name for f in dataclasses.fields(Explanation)] == [
        "features", "values", "base_values", "model_output", "feature_values", "output",
        "algorithm", "budget", "standard_errors"]
    assert [f.name for f in dataclasses.fields(ExplanationBudget)] == [
        "evaluations_per_row", "n_permutations", "background_size", "max_rows"]
    for record in (ex, ex.budget):
        assert not hasattr(record, "__dict__")  # slots
        assert "__slots__" in type(record).__dict__
        first = dataclasses.fields(record)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, first, getattr(record, first))
    # the budget compares and hashes by value; the explanation (arrays) by identity
    assert ex.budget == ExplanationBudget(4, 0, 2, 50)
    assert hash(ex.budget) == hash(ExplanationBudget(4, 0, 2, 50))
    again = explain(_linear, BG.iloc[[1]], BG, features=["a", "b"], output="logit")
    assert ex == ex and ex != again and hash(ex) == hash(ex)


# ------------------------------------------------------------------ background subsample


def test_a_larger_background_is_subsampled_without_replacement() -> None:
    """50 distinct background rows cut to 49: the base value is the mean over 49 DISTINCT
    background rows (one left out), whatever the seed draws. Drawn with replacement, 49
    draws from 50 are all distinct with probability 50! / 50**49 < 1e-18."""
    bg = pd.DataFrame({"a": np.arange(50, dtype=np.float64)})
    rows = pd.DataFrame({"a": [1000.0]})
    seen: list[np.ndarray] = []

    def identity(frame: pd.DataFrame) -> np.ndarray:
        seen.append(frame["a"].to_numpy(copy=True))
        return frame["a"].to_numpy()

    ex = explain(identity, rows, bg, features=["a"], output="value", background_size=49,
                 seed=3)
    # the background endpoint is scored on the subsample itself, one model row per draw
    bg_calls = [s for s in seen if len(s) == 49]
    assert bg_calls, "no predict call on the 49 background rows"
    drawn = bg_calls[0]
    assert len(set(drawn.tolist())) == 49 and set(drawn.tolist()) <= set(range(50))
    left_out = (set(range(50)) - set(drawn.tolist())).pop()
    assert ex.base_values[0] == pytest.approx((1225 - left_out) / 49, abs=1e-12)
    assert ex.budget.background_size == 49
    # one feature: SHAP = f(x) - base value
    assert ex.values[0, 0] == pytest.approx(1000.0 - (1225 - left_out) / 49, abs=1e-9)


def _interacting(frame: pd.DataFrame) -> np.ndarray:
    # a regression output with interactions, so different orderings credit differently
    x = frame[["p", "q", "r", "s"]].to_numpy(dtype=np.float64)
    return x[:, 0] * x[:, 1] + x[:, 2] ** 2 * x[:, 3] - x[:, 0] * x[:, 2] * x[:, 3] + x[:, 1]


def _v(row: np.ndarray, bg: np.ndarray, present: set[int]) -> float:
    """Coalition value: mean over background rows of the model with ``present`` from ``row``."""
    masked = bg.copy()
    for j in present:
        masked[:, j] = row[j]
    return float(_interacting(pd.DataFrame(masked, columns=["p", "q", "r", "s"])).mean())


def _reference_permutation(rows: np.ndarray, bg: np.ndarray, n_permutations: int,
                           seed: int) -> np.ndarray:
    """The documented estimator, written out: for each row the orderings of
    ``default_rng(seed).permuted`` (nothing else drawn first: the background is not
    subsampled), each with its reverse; the first and last positions exact; the middle
    positions' mean credit (all its credits for a feature never in the middle); the gap to
    f(x) - E[f] shared equally."""
    n, m = rows.shape
    rng = np.random.default_rng(seed)
    forward = rng.permuted(np.tile(np.arange(m), (n, n_permutations, 1)), axis=2)
    orders = np.concatenate([forward, forward[:, :, ::-1]], axis=1)
    out = np.zeros((n, m))
    for i in range(n):
        empty, full = _v(rows[i], bg, set()), _v(rows[i], bg, set(range(m)))
        middle: list[list[float]] = [[] for _ in range(m)]
        every: list[list[float]] = [[] for _ in range(m)]
        for order in orders[i]:
            for k in range(m):
                gain = (_v(rows[i], bg, set(order[: k + 1].tolist()))
                        - _v(rows[i], bg, set(order[:k].tolist())))
                every[order[k]].append(gain)
                if 0 < k < m - 1:
                    middle[order[k]].append(gain)
        for j in range(m):
            first = _v(rows[i], bg, {j}) - empty
            last = full - _v(rows[i], bg, set(range(m)) - {j})
            mid = np.mean(middle[j]) if middle[j] else np.mean(every[j])
            out[i, j] = (first + last) / m + (m - 2) / m * mid
        out[i] += (full - empty - out[i].sum()) / m
    return out


def test_a_background_of_exactly_background_size_rows_is_not_subsampled() -> None:
    """Six background rows with ``background_size=6``: used whole, so nothing is drawn for
    them and the orderings are the seed's first draws (the reference above)."""
    rng = np.random.default_rng(11)
    rows, bg = rng.normal(size=(2, 4)), rng.normal(size=(6, 4))
    frame = lambda a: pd.DataFrame(a, columns=["p", "q", "r", "s"])  # noqa: E731
    ex = explain(_interacting, frame(rows), frame(bg), features=["p", "q", "r", "s"],
                 algorithm="permutation", n_permutations=3, seed=5, background_size=6,
                 output="value")
    assert ex.budget.background_size == 6
    np.testing.assert_allclose(ex.values, _reference_permutation(rows, bg, 3, 5), atol=1e-12)
    assert ex.standard_errors.max() > 1e-3  # the orderings matter for this model


# ------------------------------------------------------------------ column types


def test_a_column_numeric_only_in_the_rows_is_passed_as_values_not_promoted() -> None:
    """Column ``a`` holds numbers in the explained rows but timestamps in the background:
    not numeric in both, so it is one non-numeric feature (values kept as they are), never
    promoted to a common numeric type (numpy has none for float and datetime). The model
    reads only ``b`` (log-odds b), so SHAP = (0, b - mean_background(b))."""
    rows = pd.DataFrame({"a": [3.0], "b": [2.0]})
    bg = pd.DataFrame({"a": pd.to_datetime(["2020-01-01", "2021-06-01"]), "b": [0.0, 1.0]})
    kinds: set[str] = set()

    def on_b(frame: pd.DataFrame) -> np.ndarray:
        kinds.add(frame["a"].dtype.kind)
        return 1.0 / (1.0 + np.exp(-frame["b"].to_numpy(dtype=np.float64)))

    ex = explain(on_b, rows, bg, features=["a", "b"], output="logit")
    np.testing.assert_allclose(ex.values, [[0.0, 1.5]], atol=1e-12)
    assert kinds and not kinds & set("biufcmM")  # a category (or object) column, not numbers
    assert ex.feature_values[0, 0] == 3.0


# ------------------------------------------------------------------ importance_standard_errors


def _hand_explanation(features: tuple[str, ...], se: list[list[float]]) -> Explanation:
    v = np.zeros((len(se), len(features)))
    return Explanation(features, v, np.zeros(len(se)), np.zeros(len(se)),
                       np.zeros((len(se), len(features)), dtype=object), "probability",
                       "permutation", ExplanationBudget(8, 2, 2, 50), np.array(se))


def test_importance_standard_errors_by_hand_and_refused_when_columns_miss() -> None:
    # sqrt(0.3**2 + 0.4**2) / 2 = 0.25, sqrt(0 + 1.2**2) / 2 = 0.6
    ex = _hand_explanation(("a", "b"), [[0.3, 0.0], [0.4, 1.2]])
    got = importance_standard_errors(ex)
    assert list(got) == ["a", "b"]
    assert got["a"] == pytest.approx(0.25, abs=1e-15) and got["b"] == pytest.approx(0.6, abs=1e-15)
    # a hand-built explanation whose standard errors cover only two of three features:
    # no error is made up for, or silently dropped from, the third
    with pytest.raises(ValueError, match="zip"):
        importance_standard_errors(_hand_explanation(("a", "b", "c"), [[0.3, 0.0], [0.4, 1.2]]))


# ------------------------------------------------------------------ call signatures


def test_data_pass_by_keyword_and_options_only_by_keyword() -> None:
    # the data (model, rows, background, sizes) by position or by name; every option by name
    ex = explain(predict=_linear, rows=BG.iloc[[1]], background=BG, features=["a", "b"],
                 output="logit")
    np.testing.assert_allclose(ex.values, [[0.5, 1.0]], atol=1e-12)
    with pytest.raises(TypeError, match="positional argument"):
        explain(_linear, BG.iloc[[1]], BG, ["a", "b"])  # type: ignore[misc]
    both, explained = explain_class(predict_classes=_three_classes, rows=BG.iloc[[1]],
                                    background=BG, features=["a", "b"], class_index=0)
    assert explained.tolist() == [0]
    assert both.model_output[0] == pytest.approx(np.e / (2 * np.e + 1), abs=1e-12)
    with pytest.raises(TypeError, match="positional argument"):
        explain_class(_three_classes, BG.iloc[[1]], BG, ["a", "b"])  # type: ignore[misc]
    assert choose_algorithm(n_features=3, n_background=10, n_rows=10) == "exact"
    with pytest.raises(TypeError, match="positional argument"):
        choose_algorithm(3, 10, 10, "permutation")  # type: ignore[misc]
