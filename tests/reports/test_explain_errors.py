"""Standard errors of permutation SHAP that allow for their own noise (issue #38).

Oracles: the standard error of a mean of hand-built pair estimates (numpy's sample standard
deviation, which the jackknife of a mean equals), the shrinkage formula written out here,
``scipy.stats.t.ppf``, and Shapley values by brute force over every coalition.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from modelgate.reports.explain_errors import (
    PRIOR_DF,
    interval_quantile,
    interval_words,
    pooled_standard_errors,
)
from modelgate.reports.explain_estimators import permutation_values
from modelgate.reports.explain_masking import MaskedEvaluator
from modelgate.reports.explanation import explain


def test_a_value_whose_pairs_agree_keeps_a_share_of_the_pooled_variance() -> None:
    # per-pair estimates of 2 rows x 3 features over 6 pairs; row 0's first feature: all agree
    row0 = np.array([[0.25, 0.11, -0.30], [0.25, 0.15, -0.10], [0.25, 0.09, -0.25],
                     [0.25, 0.13, -0.05], [0.25, 0.10, -0.20], [0.25, 0.14, -0.40]])
    row1 = row0 * np.array([1.0, -2.0, 0.5]) + np.linspace(0.0, 0.05, 6)[:, None]
    p = len(row0)
    raw = np.array([r.std(axis=0, ddof=1) / math.sqrt(p) for r in (row0, row1)])  # SE of a mean
    assert raw[0, 0] == 0.0
    got = pooled_standard_errors(raw, p)
    var = raw**2
    by_hand = [[math.sqrt(((p - 1) * var[r, j] + PRIOR_DF * (var[r].mean() + var[:, j].mean()) / 2)
                          / (p - 1 + PRIOR_DF)) for j in range(3)] for r in range(2)]
    np.testing.assert_allclose(got, by_hand, rtol=1e-12)
    assert got[0, 0] >= math.sqrt(PRIOR_DF / (p - 1 + PRIOR_DF) * var[0].mean() / 2) > 0.005
    np.testing.assert_allclose(np.mean(got**2), np.mean(var), rtol=1e-12)  # no variance added
    np.testing.assert_array_equal(pooled_standard_errors(raw, p, prior_df=0.0), raw)
    np.testing.assert_array_equal(pooled_standard_errors(np.zeros((2, 3)), p), 0.0)  # exact


def test_the_estimator_reports_the_pooled_jackknife() -> None:
    def predict(frame: pd.DataFrame) -> np.ndarray:
        return (frame["x0"] + frame["x1"] * frame["x2"] * frame["x3"]).to_numpy()

    names = ("x0", "x1", "x2", "x3")
    x = np.array([[1.0, 2.0, -1.0, 1.5], [0.0, 1.0, 1.0, -2.0]])
    bg = np.array([[0.0, 0.5, 1.0, -1.0], [0.5, -1.0, 0.0, 1.0]])
    ev = MaskedEvaluator(predict, names, list(x.T), list(bg.T), "value", 1000)
    raw = permutation_values(ev, 2, 4, 5, np.random.default_rng(3), prior_df=0.0)
    est = permutation_values(ev, 2, 4, 5, np.random.default_rng(3))
    np.testing.assert_array_equal(est.values, raw.values)
    assert not np.array_equal(est.standard_errors, raw.standard_errors)
    np.testing.assert_allclose(est.standard_errors, pooled_standard_errors(raw.standard_errors, 5),
                               rtol=1e-12)


@pytest.mark.parametrize("pairs", [2, 3, 10, 30, 100], ids=str)
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99], ids=str)
def test_interval_quantile_is_students_t(pairs: int, level: float) -> None:
    expected = scipy.stats.t.ppf(1 - (1 - level) / 2, df=pairs - 1)
    assert interval_quantile(pairs, level) == pytest.approx(expected, rel=1e-12)


def test_interval_words_and_bad_input() -> None:
    assert "± 2.26 SE (9 degrees of freedom: 10 antithetic pairs)" in interval_words(10)
    with pytest.raises(ValueError, match="n_permutations must be an integer >= 2; got 1"):
        interval_quantile(1)
    with pytest.raises(ValueError, match="level must be in"):
        interval_quantile(10, 1.0)
    with pytest.raises(ValueError, match="prior_df must be a finite number >= 0"):
        pooled_standard_errors(np.zeros((1, 2)), 10, prior_df=-1.0)
    with pytest.raises(ValueError, match="finite and >= 0"):
        pooled_standard_errors(np.array([[0.1, np.nan]]), 10)
    with pytest.raises(ValueError, match=r"jackknife must be 2-D \(rows, features\); got shape \(3,\)"):
        pooled_standard_errors(np.zeros(3), 10)


def _brute_force(predict, x: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """phi_i = sum over S not holding i of |S|! (M-|S|-1)! / M! (v(S + i) - v(S))."""
    m = x.shape[1]
    subsets = list(itertools.product([False, True], repeat=m))
    names = [f"x{i}" for i in range(m)]
    out = np.zeros(x.shape)
    for r in range(len(x)):
        masked = np.concatenate([np.where(np.array(s), x[r], bg) for s in subsets])
        v = predict(pd.DataFrame(masked, columns=names)).reshape(len(subsets), len(bg)).mean(1)
        value = dict(zip(subsets, v, strict=True))
        for s in subsets:
            for i in (i for i in range(m) if not s[i]):
                w = math.factorial(sum(s)) * math.factorial(m - sum(s) - 1) / math.factorial(m)
                out[r, i] += w * (value[s[:i] + (True,) + s[i + 1:]] - value[s])
    return out


def test_coverage_against_brute_force_on_a_tree_like_model() -> None:
    """8 features with step-function interactions (the lumpy credits of trees) forced to the
    permutation estimate at 10 pairs over 40 seeds: at least 98.5% of values within 3 SE and
    94% within the drawn t interval."""
    names = [f"x{i}" for i in range(8)]

    def predict(frame: pd.DataFrame) -> np.ndarray:
        x = frame[names].to_numpy()
        steps = (x[:, 0] > 0) * (x[:, 1] > 0.5) + (x[:, 2] > 0) * (x[:, 3] < 0) * (x[:, 4] > -0.5)
        return steps + 0.5 * (x[:, 5] > 0) * x[:, 6] + 0.3 * x[:, 7] + 0.2 * x[:, 0] * x[:, 5]

    rng = np.random.default_rng(38)
    x, bg = rng.normal(size=(4, 8)), rng.normal(size=(8, 8))
    exact = _brute_force(predict, x, bg)
    rows, background = pd.DataFrame(x, columns=names), pd.DataFrame(bg, columns=names)
    z = []
    for seed in range(40):
        est = explain(predict, rows, background, features=names, algorithm="permutation",
                      n_permutations=10, seed=seed, output="value")
        err = est.values - exact
        z.append(np.where(np.abs(err) < 1e-12, 0.0, np.abs(err) / np.maximum(est.standard_errors,
                                                                                1e-300)))
    z = np.concatenate(z).ravel()
    assert np.mean(z <= 3) >= 0.985
    assert np.mean(z <= interval_quantile(10)) >= 0.94
