"""Options of ``reports/explanation.py`` at and just past their limits, on a two-feature toy model
whose exact SHAP values are known in closed form (the module's mutation survivors,
tests/MUTATION.md)."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest
from modelgate.reports.explanation import explain, explain_class

BG = pd.DataFrame({"a": [0.0, 1.0], "b": [0.0, 1.0]})


def _linear(frame: pd.DataFrame) -> np.ndarray:
    # in log-odds a + 2 b, so with output="logit" SHAP_i = w_i (x_i - mean_background(x_i))
    return 1.0 / (1.0 + np.exp(-(frame["a"] + 2.0 * frame["b"]).to_numpy()))


def test_exactly_max_rows_rows_are_accepted() -> None:
    rows = pd.DataFrame({"a": [1.0, 0.0, 1.0], "b": [1.0, 1.0, 0.0]})
    ex = explain(_linear, rows, BG, features=["a", "b"], output="logit", max_rows=3)
    # w = (1, 2), background means 0.5: (1 * 0.5, 2 * 0.5), (1 * -0.5, 2 * 0.5), (0.5, -1)
    np.testing.assert_allclose(ex.values, [[0.5, 1.0], [-0.5, 1.0], [0.5, -1.0]], atol=1e-9)


@pytest.mark.parametrize("name", ["n_permutations", "background_size", "max_rows",
                                  "max_batch_rows", "exact_budget"])
@pytest.mark.parametrize("value", [True, 2.5, 3.0, "3"])
def test_integer_options_refuse_bools_floats_and_strings(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"{name} must be an integer >= 1"):
        explain(_linear, BG, BG, features=["a", "b"], **{name: value})  # type: ignore[arg-type]


def test_the_default_batch_is_100_000_model_rows() -> None:
    assert inspect.signature(explain).parameters["max_batch_rows"].default == 100_000


def _three_classes(frame: pd.DataFrame) -> np.ndarray:
    z = np.exp(np.column_stack([frame["a"], frame["b"], 0.0 * frame["a"]]))
    return z / z.sum(axis=1, keepdims=True)


def test_explain_class_takes_class_0_and_refuses_a_negative_class() -> None:
    ex, explained = explain_class(_three_classes, BG.iloc[[1]], BG, features=["a", "b"],
                                  class_index=0)
    assert explained.tolist() == [0]
    # the explained output is class 0's probability e / (e + e + 1) at a = b = 1
    assert ex.model_output[0] == pytest.approx(np.e / (2 * np.e + 1), abs=1e-12)
    with pytest.raises(ValueError, match="class_index must be in 0..2; got -1"):
        explain_class(_three_classes, BG.iloc[[1]], BG, features=["a", "b"], class_index=-1)


def test_the_explanation_s_arrays_are_read_only() -> None:
    ex = explain(_linear, BG, BG, features=["a", "b"], output="logit")
    for name in ("values", "base_values", "model_output", "feature_values", "standard_errors"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(ex, name)[0] = 0


def test_up_to_10_features_are_exact_whatever_the_budget() -> None:
    from modelgate.reports.explanation import choose_algorithm

    # 2**3 * 1000 * 50 = 400,000 evaluations, far above a budget of 1: exact all the same
    assert choose_algorithm(3, 1000, 50, exact_budget=1) == "exact"


def test_one_feature_needs_no_permutation_pairs() -> None:
    # one feature: every ordering is the same, so exact, even with one pair asked for
    ex = explain(lambda f: 1.0 / (1.0 + np.exp(-f["a"].to_numpy())), BG, BG, features=["a"],
                 algorithm="permutation", n_permutations=1, output="logit")
    assert ex.algorithm == "exact"


def test_explain_class_refuses_a_class_past_the_last() -> None:
    with pytest.raises(ValueError, match="class_index must be in 0..2; got 4"):
        explain_class(_three_classes, BG.iloc[[1]], BG, features=["a", "b"], class_index=4)


@pytest.mark.parametrize("algorithm", ["shapley", "Exact", None])
def test_choose_algorithm_refuses_an_unknown_name(algorithm: object) -> None:
    # a bug, fixed: choose_algorithm took any name, and for a model too large for exact values
    # an unknown one came back "permutation"
    from modelgate.reports.explanation import choose_algorithm

    for size in ((3, 10, 10), (14, 100, 50)):
        with pytest.raises(ValueError) as caught:
            choose_algorithm(*size, algorithm=algorithm)  # type: ignore[arg-type]
        assert str(caught.value) == ("algorithm must be one of ('permutation', 'exact', 'auto'); "
                                     f"got {algorithm!r}")


@pytest.mark.parametrize("algorithm", ["exact", "permutation"])
def test_a_feature_whose_values_are_all_tuples_reaches_predict_as_tuples(algorithm) -> None:
    # pandas makes an index of tuples a MultiIndex unless told not to; the masker's
    # categories must stay the tuples themselves
    bg = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0],
                       "c": pd.Series([(1, 2), (3, 4), (1, 2), (5, 6)], dtype=object)})

    def predict(frame: pd.DataFrame) -> np.ndarray:
        assert all(isinstance(v, tuple) for v in frame["c"])
        return frame["x"].to_numpy(float) + np.array([a + b for a, b in frame["c"]], float)

    ex = explain(predict, bg.iloc[:2], bg, features=["x", "c"], output="value",
                 algorithm=algorithm)
    # additive: SHAP_x = x - mean(x) = x - 1.5, SHAP_c = a + b - mean(a + b) = a + b - 6
    np.testing.assert_allclose(ex.values, [[-1.5, -3.0], [-0.5, 1.0]], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ex.base_values, [7.5, 7.5], rtol=0, atol=1e-12)


def test_a_long_double_feature_is_explained_and_keeps_its_signed_zeros() -> None:
    # numpy's long double (16 bytes, part of them padding on x86) has no integer type of its
    # size to compare bits with; -0.0 and 0.0 must still be two inputs (the model below tells
    # them apart through the sign), and the values reach predict as long doubles
    bg = pd.DataFrame({"x": np.array([-0.0, 0.0, 1.0, 2.0], dtype=np.longdouble),
                       "z": [0.0, 1.0, 2.0, 3.0]})

    def predict(frame: pd.DataFrame) -> np.ndarray:
        assert frame["x"].dtype == np.longdouble
        x = frame["x"].to_numpy()
        return np.where(np.signbit(x), 10.0, x.astype(np.float64)) + frame["z"].to_numpy()

    ex = explain(predict, bg.iloc[:2], bg, features=["x", "z"], output="value", algorithm="exact")
    # additive: SHAP_x = g(x) - mean(g) with g(-0) = 10, g(0) = 0, g(1) = 1, g(2) = 2: mean g
    # = 13 / 4; SHAP_z = z - 1.5
    np.testing.assert_allclose(ex.values, [[10.0 - 3.25, -1.5], [0.0 - 3.25, -0.5]], rtol=0, atol=1e-12)
