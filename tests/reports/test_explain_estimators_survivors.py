"""Cases for the mutation survivors of ``reports/explain_estimators.py``, calling its two
estimators directly on a :class:`MaskedEvaluator`.

Oracles, written here and never through the module:
- exact values: the Shapley formula over every coalition, ``v(S)`` the mean over the
  background of the model with the features of ``S`` taken from the row;
- the permutation estimator: the documented estimator written out in plain loops, on the
  orderings its own ``np.random.default_rng(seed)`` draws (each with its reverse); the first
  and last positions exact, the middle positions' mean credit (all credits for a feature
  never in a middle position), the gap to ``f(x) - E[f]`` shared equally, and the jackknife
  over pairs for the standard error;
- hand-counted coalition numbers for ``permutation_evaluations``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from modelgate.reports.explain_errors import PRIOR_DF
from modelgate.reports.explain_estimators import (
    Estimate,
    exact_values,
    permutation_evaluations,
    permutation_values,
)
from modelgate.reports.explain_masking import MaskedEvaluator

WEIGHTS = np.array([0.7, -1.3, 0.4, 2.1, -0.6, 1.1, -0.9])


def _model(frame: pd.DataFrame) -> np.ndarray:
    """A regression output with interactions of every order (the tanh of a sum), so different
    orderings credit a feature differently."""
    x = frame.to_numpy(dtype=np.float64)
    m = x.shape[1]
    out = x @ WEIGHTS[:m] + np.tanh(x.sum(axis=1)) * 2.0
    if m > 1:
        out += 1.5 * x[:, 0] * x[:, 1]
    if m > 2:
        out -= x[:, 0] * x[:, 2] ** 2
    return out


def _data(m: int, n_rows: int, n_bg: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n_rows, m)), rng.normal(size=(n_bg, m))


def _evaluator(rows: np.ndarray, bg: np.ndarray, model=_model) -> MaskedEvaluator:
    m = rows.shape[1]
    names = tuple(f"x{j}" for j in range(m))
    return MaskedEvaluator(model, names, [rows[:, j].copy() for j in range(m)],
                           [bg[:, j].copy() for j in range(m)], "value", 10_000)


class _Coalitions:
    """v(S) of one row: the mean over the background rows of the model with the features of
    S from the row and the others from the background row (memoised)."""

    def __init__(self, row: np.ndarray, bg: np.ndarray, model=_model) -> None:
        self.row, self.bg, self.model, self.memo = row, bg, model, {}

    def __call__(self, present) -> float:
        key = frozenset(int(j) for j in present)
        if key not in self.memo:
            masked = self.bg.copy()
            for j in key:
                masked[:, j] = self.row[j]
            names = [f"x{j}" for j in range(self.bg.shape[1])]
            self.memo[key] = float(self.model(pd.DataFrame(masked, columns=names)).mean())
        return self.memo[key]


def _brute_force_shapley(rows: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """phi_i = sum over S not holding i of |S|! (M - |S| - 1)! / M! (v(S + i) - v(S))."""
    n, m = rows.shape
    out = np.zeros((n, m))
    for r in range(n):
        v = _Coalitions(rows[r], bg)
        for i in range(m):
            others = [j for j in range(m) if j != i]
            for size in range(m):
                w = math.factorial(size) * math.factorial(m - size - 1) / math.factorial(m)
                for s in itertools.combinations(others, size):
                    out[r, i] += w * (v(set(s) | {i}) - v(set(s)))
    return out


def _stratified_by_hand(v: _Coalitions, m: int, orders: list[np.ndarray]) -> np.ndarray:
    """The documented estimate of one row from the given orderings."""
    empty, full = v(()), v(range(m))
    middle: list[list[float]] = [[] for _ in range(m)]
    every: list[list[float]] = [[] for _ in range(m)]
    for order in orders:
        for k in range(m):
            gain = v(order[: k + 1]) - v(order[:k])
            every[order[k]].append(gain)
            if 0 < k < m - 1:
                middle[order[k]].append(gain)
    est = np.zeros(m)
    for j in range(m):
        first = v({j}) - empty
        last = full - v(set(range(m)) - {j})
        mid = np.mean(middle[j]) if middle[j] else np.mean(every[j])
        est[j] = (first + last) / m + (m - 2) / m * mid
    return est + (full - empty - est.sum()) / m


def _reference_permutation(rows: np.ndarray, bg: np.ndarray, n_pairs: int, seed: int,
                           model=_model) -> tuple[np.ndarray, np.ndarray]:
    """Values and jackknife standard errors (leave one antithetic pair out,
    se^2 = (P - 1) / P * sum_p (theta_-p - mean theta_-.)^2), orderings drawn here, then
    pooled as reports/explain_errors.py documents."""
    n, m = rows.shape
    forward = np.random.default_rng(seed).permuted(np.tile(np.arange(m), (n, n_pairs, 1)),
                                                   axis=2)
    values, errors = np.zeros((n, m)), np.zeros((n, m))
    for r in range(n):
        v = _Coalitions(rows[r], bg, model)
        pairs = [[forward[r, p], forward[r, p][::-1]] for p in range(n_pairs)]
        values[r] = _stratified_by_hand(v, m, [o for pair in pairs for o in pair])
        loo = np.array([
            _stratified_by_hand(v, m, [o for q, pair in enumerate(pairs) if q != p for o in pair])
            for p in range(n_pairs)
        ])
        spread = ((loo - loo.mean(axis=0)) ** 2).sum(axis=0)
        errors[r] = (n_pairs - 1) / n_pairs * spread  # the jackknife variance
    # shrunk towards the average of its row's and its feature's mean variance, PRIOR_DF weight
    prior = np.array([[(errors[r].mean() + errors[:, j].mean()) / 2 for j in range(m)]
                      for r in range(n)])
    return values, np.sqrt(((n_pairs - 1) * errors + PRIOR_DF * prior) / (n_pairs - 1 + PRIOR_DF))


def _endpoints(rows: np.ndarray, bg: np.ndarray) -> tuple[float, np.ndarray]:
    names = [f"x{j}" for j in range(rows.shape[1])]
    return (float(_model(pd.DataFrame(bg, columns=names)).mean()),
            _model(pd.DataFrame(rows, columns=names)))


# ------------------------------------------------------------------ exact_values


@pytest.mark.parametrize(("m", "n_rows"), [(1, 3), (2, 3), (3, 1), (3, 4), (4, 2), (5, 3)],
                         ids=["m1", "m2", "m3_one_row", "m3", "m4", "m5"])
def test_exact_values_equal_the_shapley_formula(m: int, n_rows: int) -> None:
    rows, bg = _data(m, n_rows, 3, seed=10 + m)
    est = exact_values(_evaluator(rows, bg), n_rows, m)
    np.testing.assert_allclose(est.values, _brute_force_shapley(rows, bg), rtol=0, atol=1e-12)
    assert est.values.shape == est.standard_errors.shape == (n_rows, m)
    np.testing.assert_array_equal(est.standard_errors, 0.0)
    base, full = _endpoints(rows, bg)
    np.testing.assert_allclose(est.base_values, np.full(n_rows, base), rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.model_output, full, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ permutation_values


@pytest.mark.parametrize(("m", "n_rows", "n_pairs", "seed"),
                         [(2, 2, 2, 0), (3, 3, 2, 1), (3, 2, 3, 7), (4, 3, 3, 2), (5, 2, 2, 3),
                          (6, 2, 4, 4)],
                         ids=["m2", "m3_two_pairs", "m3_three_pairs", "m4", "m5", "m6"])
def test_permutation_values_and_errors_equal_the_documented_estimator(
        m: int, n_rows: int, n_pairs: int, seed: int) -> None:
    """At M = 3 a feature's middle position is also the middle of the reverse ordering, so at
    most P features are ever in the middle: the others take the mean of all their credits,
    over 2 P orderings (2 P - 2 left in the jackknife). Seed 7 leaves a feature out of the
    middle in all three pairs, where 2 P = 6 differs from 2 + P and 2 ** P."""
    rows, bg = _data(m, n_rows, 3, seed=20 + m)
    est = permutation_values(_evaluator(rows, bg), n_rows, m, n_pairs, np.random.default_rng(seed))
    values, errors = _reference_permutation(rows, bg, n_pairs, seed)
    np.testing.assert_allclose(est.values, values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.standard_errors, errors, rtol=0, atol=1e-12)
    base, full = _endpoints(rows, bg)
    np.testing.assert_allclose(est.base_values, np.full(n_rows, base), rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.model_output, full, rtol=0, atol=1e-12)
    if m > 2:
        assert errors.max() > 1e-3  # the orderings matter for this model


# ------------------------------------------------------------------ permutation_evaluations


@pytest.mark.parametrize(("m", "n_pairs", "expected"),
                         [(1, 3, 2), (2, 5, 4), (3, 10, 8), (4, 2, 14), (4, 3, 16), (5, 1, 16),
                          (5, 7, 32), (6, 3, 32), (7, 3, 40), (12, 10, 206)],
                         ids=str)
def test_permutation_evaluations_by_hand(m: int, n_pairs: int, expected: int) -> None:
    """min(2**M, 2 P (M - 3) + 2 M + 2), counted by hand: e.g. M = 7, P = 3: 24 + 16 = 40."""
    assert permutation_evaluations(m, n_pairs) == expected


def test_permutation_values_warn_of_nothing() -> None:
    """Ordinary inputs raise no numpy RuntimeWarning (the module hides the 0 / 0 of features
    never in a middle position with ``errstate``; nothing else divides by zero)."""
    rows, bg = _data(4, 2, 3, seed=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = permutation_values(_evaluator(rows, bg), 2, 4, 2, np.random.default_rng(3))
    values, _ = _reference_permutation(rows, bg, 2, 3)
    np.testing.assert_allclose(est.values, values, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ end strata


def _product(frame: pd.DataFrame) -> np.ndarray:
    x = frame.to_numpy(dtype=np.float64)
    return x[:, 0] * (x[:, 1] + x[:, 2] ** 2) + x[:, 1] * x[:, 2]


def test_a_row_whose_output_is_zero() -> None:
    """f(x) = 0 exactly on the second row (x0 = 0, x1 x2 = 0): its values are finite and
    those of the estimator written out (the end strata use f(x), never divide by it)."""
    rows = np.array([[0.5, 1.5, -2.0], [0.0, -1.0, 0.0]])
    bg = np.array([[1.0, 2.0, 0.5], [-0.5, 1.0, 1.0], [2.0, -1.0, 0.0]])
    est = permutation_values(_evaluator(rows, bg, _product), 2, 3, 2, np.random.default_rng(0))
    assert est.model_output[1] == 0.0
    values, errors = _reference_permutation(rows, bg, 2, 0, _product)
    np.testing.assert_allclose(est.values, values, rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.standard_errors, errors, rtol=0, atol=1e-12)


def test_outputs_near_the_largest_float() -> None:
    """A constant model at 1e308 (one background row, so its mean is 1e308 too): every
    feature is a null player, so every Shapley value and standard error is 0 (the end strata
    difference outputs; they never add two of them)."""
    def constant(frame: pd.DataFrame) -> np.ndarray:
        return np.full(len(frame), 1e308)

    rows, bg = _data(4, 2, 1, seed=5)
    est = permutation_values(_evaluator(rows, bg, constant), 2, 4, 3, np.random.default_rng(1))
    np.testing.assert_array_equal(est.values, 0.0)
    np.testing.assert_array_equal(est.standard_errors, 0.0)


# ------------------------------------------------------------------ the record


def test_estimate_is_a_frozen_slotted_record_compared_by_identity() -> None:
    rows, bg = _data(2, 2, 3, seed=6)
    est = exact_values(_evaluator(rows, bg), 2, 2)
    assert [f.name for f in dataclasses.fields(Estimate)] == [
        "values", "standard_errors", "base_values", "model_output"]
    assert not hasattr(est, "__dict__") and "__slots__" in Estimate.__dict__
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.values = est.values  # type: ignore[misc]
    # arrays inside: equality and hash by identity (a field-wise == of arrays has no truth value)
    again = exact_values(_evaluator(rows, bg), 2, 2)
    assert est == est and est != again and hash(est) == hash(est)
