"""Properties of ``explain`` on a toy model with interactions (additive, blind to row order, equal
to Shapley's definition and to shap's Exact explainer), its budgets and algorithm choice, and the
checks of its inputs and of additivity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import shap
from hypothesis import given, settings
from hypothesis import strategies as st
from modelgate.reports.explanation import AdditivityError, _check_additivity, explain
from support.explain_toy import TOY
from support.explain_toy import toy_frame as _toy_frame
from support.explain_toy import toy_predict as _toy_predict
from support.shapley_oracle import brute_force_shapley


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
