"""Survivors of mutation testing of ``drift/additive_splines.py`` (tests/MUTATION.md).

Expected values come from somewhere else than the module: a truth in the spline space (a cubic,
a line, an offset per code) that least squares recovers exactly, ``np.quantile`` for the knots,
the sandwich covariance written out with numpy, or a tiny case worked by hand.
"""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
from modelgate.drift.additive_splines import AdditiveSplineRegressor, fit_additive_splines


def test_knots_at_a_repeated_smallest_value_are_dropped() -> None:
    # 40% of the rows at the smallest value (0): the lower quantiles equal it and are no interior
    # knot (the mirror of the largest-value case in test_additive_splines.py). A knot kept at the
    # smallest value would repeat the edge knot a fifth time, an extra basis function with no span.
    rng = np.random.default_rng(12)
    v = np.r_[np.zeros(200), rng.uniform(0, 1, 300)]
    inner = np.unique(np.quantile(v, np.arange(1, 11) / 11))
    inner = inner[(inner > 0.0) & (inner < v.max())]
    assert inner.size < 10  # the case holds quantiles at the smallest value
    m = fit_additive_splines(v[:, None], (v ** 2)[:, None], ridge=0.0)
    assert m.terms[0].size == inner.size + 4 and m.terms[0].breaks.size == inner.size + 2
    grid = np.linspace(0.0, v.max(), 41)[:, None]
    assert m.predict(grid)[:, 0] == pytest.approx(grid[:, 0] ** 2, abs=1e-6)


def test_a_version_equal_to_1_of_another_integer_type_is_read() -> None:
    # The stored version is compared by value: a format_version of numpy's int64(1) (say, read
    # back from an array) is version 1, and the model unpickles and predicts as before.
    x = np.linspace(0.0, 1.0, 50)[:, None]
    m = fit_additive_splines(x, 2 * x)
    stored = AdditiveSplineRegressor(np.int64(1), m.terms, m.intercept, m.covariance)  # type: ignore[arg-type]
    again = pickle.loads(pickle.dumps(stored, protocol=5))  # noqa: S301 - our own bytes
    assert again.format_version == 1
    assert np.array_equal(again.predict(x), m.predict(x))


def _cubic(v: np.ndarray | float) -> np.ndarray | float:
    return v ** 3 - v


def test_exact_mean_beyond_the_largest_value_follows_the_last_span_secant() -> None:
    # f = v^3 - v on [-1, 2] is in the spline space, so the fit (no ridge) is exact inside; above
    # the largest fitted value h the term goes on along the secant of the last span, from the
    # last interior knot q (the 10/11 quantile, default 10 knots) to h. The mean over rows
    # h + 0.5 and h + 3 (more than twice h above 0) is f(h) + slope * (0.5 + 3) / 2.
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 2, (3000, 1))
    m = fit_additive_splines(x, _cubic(x), ridge=0.0)
    h, q = float(x.max()), float(np.quantile(x, 10 / 11))
    slope = (_cubic(h) - _cubic(q)) / (h - q)
    mean, _ = m.mean(np.array([[h + 0.5], [h + 3.0]]))
    assert mean[0] == pytest.approx(_cubic(h) + slope * 1.75, abs=1e-6)


def test_sandwich_covariance_factor_is_n_over_n_minus_p_unrounded() -> None:
    # One categorical column of 3 codes: the design is [1, one-hot], p = 4, on n = 7 rows; the HC1
    # sandwich G^-1 (B' diag(r^2) B) G^-1 * n / (n - p) written out with numpy, with the factor
    # 7 / 3 (not a whole number, unlike the 5-row case in test_additive_splines.py).
    codes = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 2.0])
    y = np.array([[1.0], [2.0], [4.0], [2.0], [5.0], [3.0], [7.0]])
    ridge = 0.1
    m = fit_additive_splines(codes[:, None], y, categorical=[True], ridge=ridge)
    b = np.column_stack([np.ones(7), codes[:, None] == np.arange(3)]).astype(float)
    g = b.T @ b + np.diag([0.0, 7 * ridge, 7 * ridge, 7 * ridge])
    r = (y - b @ np.linalg.solve(g, b.T @ y))[:, 0]
    gi = np.linalg.inv(g)
    sigma = gi @ (b.T @ np.diag(r ** 2) @ b) @ gi * (7 / 3)
    assert m.covariance[0] == pytest.approx(sigma, rel=1e-9, abs=1e-15)


def test_unpickled_model_with_a_categorical_column_predicts_as_fitted() -> None:
    # y = [0, 2, -1][code] + 2 x1 is additive and in the model's space (a value per code, a line
    # in x1): with no ridge the fit is exact. After a pickle round trip (the term's kind comes back
    # as a new string object) the code effects must still be applied, in predict and in mean.
    rng = np.random.default_rng(13)
    codes = rng.integers(0, 3, 60).astype(float)
    x1 = rng.uniform(0, 1, 60)
    effect = np.array([0.0, 2.0, -1.0])
    m = fit_additive_splines(np.column_stack([codes, x1]), (effect[codes.astype(int)] + 2 * x1)[:, None],
                             categorical=[True, False], ridge=0.0)
    again = pickle.loads(pickle.dumps(m, protocol=5))  # noqa: S301 - our own bytes
    rows = np.array([[0.0, 0.5], [1.0, 0.5], [2.0, 0.25]])
    truth = [0.0 + 1.0, 2.0 + 1.0, -1.0 + 0.5]
    assert again.predict(rows)[:, 0] == pytest.approx(truth, abs=1e-9)
    assert again.mean(rows)[0][0] == pytest.approx(np.mean(truth), abs=1e-9)


def test_x_of_the_wrong_shape_is_refused_with_the_documented_message() -> None:
    # predict and mean take 2-D x with one column per term: fewer columns, a 1-D array, or a 3-D
    # array whose second axis matches, are refused with the message that names the shape.
    x = np.linspace(0.0, 1.0, 20)
    m = fit_additive_splines(np.column_stack([x, x ** 2]), x[:, None])
    for bad in (np.zeros((3, 1)), np.zeros(3), np.zeros((3, 2, 1))):
        message = rf"^x must be 2-D with 2 columns; got shape {re.escape(repr(bad.shape))}$"
        with pytest.raises(ValueError, match=message):
            m.predict(bad)
        with pytest.raises(ValueError, match=message):
            m.mean(bad)


def test_a_state_with_more_fields_is_refused_with_the_version_message() -> None:
    # A stored state of version 1 with a field too many is not this version's form: refused with
    # the message that asks for a refit (not zip's own error).
    x = np.linspace(0.0, 1.0, 20)[:, None]
    m = fit_additive_splines(x, x)
    blank = object.__new__(AdditiveSplineRegressor)
    with pytest.raises(ValueError, match=r"^stored additive spline model has format version 1; this "):
        blank.__setstate__((1, m.terms, m.intercept, m.covariance, None))


def test_one_fitted_row_a_missing_or_unseen_code_takes_that_rows_effect() -> None:
    # One row, code 0, y = 3, no ridge: the minimum-norm fit puts 1.5 in the intercept and 1.5 on
    # code 0 and predicts 3 there. A NaN or an unseen code takes the column's mean basis row over
    # the fitted rows, here the one row's: the prediction is that row's, 3 (not 1.5 + 1.5 / 2).
    m = fit_additive_splines([[0.0]], [[3.0]], categorical=[True], ridge=0.0)
    assert m.predict([[0.0], [np.nan], [4.0]])[:, 0] == pytest.approx([3.0, 3.0, 3.0], abs=1e-12)
    assert m.mean([[np.nan], [4.0]])[0] == pytest.approx([3.0], abs=1e-12)


def test_a_model_of_many_columns_takes_x_with_as_many() -> None:
    # 257 columns (past CPython's cache of small ints): y = 2 x0, the other columns constant (no
    # term). x with 257 columns is accepted and predicts 2 x0 (no ridge: exact in the spline space).
    x = np.ones((20, 257))
    x[:, 0] = np.linspace(0.0, 1.0, 20)
    m = fit_additive_splines(x, 2 * x[:, :1], ridge=0.0)
    rows = np.ones((2, 257))
    rows[:, 0] = [0.25, 0.5]
    assert m.predict(rows)[:, 0] == pytest.approx([0.5, 1.0], abs=1e-9)
    assert m.mean(rows)[0] == pytest.approx([0.75], abs=1e-9)


@pytest.mark.parametrize("ridge", [1e-20, 1e-16], ids=["ridge-1e-20", "ridge-1e-16"])
def test_a_tiny_ridge_fits_like_no_ridge(ridge: float) -> None:
    # y = x^3 - x is in the spline space (cubic, no noise): least squares recovers it exactly,
    # and a ridge of 1e-16 or less per row shrinks the coefficients by far less than 1e-9. The
    # Gram matrix is then nearly singular (the intercept and the bases' partition of unity), so
    # the coefficients must come from solving the system, not from multiplying by its inverse.
    rng = np.random.default_rng(14)
    x = rng.uniform(-1, 2, (500, 1))
    m = fit_additive_splines(x, _cubic(x), ridge=ridge)
    grid = np.linspace(-0.9, 1.9, 15)[:, None]
    assert m.predict(grid)[:, 0] == pytest.approx(_cubic(grid[:, 0]), abs=1e-8)
    assert m.mean(grid)[0] == pytest.approx([np.mean(_cubic(grid[:, 0]))], abs=1e-8)


def _exact_mean_variance(design: np.ndarray, y: np.ndarray, row: np.ndarray, ridge: float) -> float:
    """The documented sandwich variance of ``row @ coef`` in 60-digit decimal arithmetic:
    ``z = G^-1 row`` with ``G = B'B + ridge n I`` (no penalty on the intercept), then
    ``sum_i (r_i B_i z)^2 n / (n - p)``. Gauss-Jordan elimination with partial pivoting."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        b = [[Decimal(v) for v in r] for r in design.tolist()]
        n, p = len(b), len(b[0])
        gram = [[sum(b[k][i] * b[k][j] for k in range(n)) for j in range(p)] for i in range(p)]
        for i in range(1, p):
            gram[i][i] += Decimal(ridge) * n
        aug = [gram[i] + [Decimal(int(i == j)) for j in range(p)] for i in range(p)]
        for c in range(p):
            pivot = max(range(c, p), key=lambda r: abs(aug[r][c]))
            aug[c], aug[pivot] = aug[pivot], aug[c]
            aug[c] = [v / aug[c][c] for v in aug[c]]
            for r in range(p):
                if r != c:
                    aug[r] = [a - aug[r][c] * e for a, e in zip(aug[r], aug[c], strict=True)]
        inv = [r[p:] for r in aug]
        bty = [sum(b[k][j] * Decimal(y[k]) for k in range(n)) for j in range(p)]
        coef = [sum(inv[i][j] * bty[j] for j in range(p)) for i in range(p)]
        z = [sum(inv[i][j] * Decimal(row[j]) for j in range(p)) for i in range(p)]
        total = Decimal(0)
        for k in range(n):
            resid = Decimal(y[k]) - sum(b[k][j] * coef[j] for j in range(p))
            total += (resid * sum(b[k][j] * z[j] for j in range(p))) ** 2
        return float(total * n / (n - p))


@pytest.mark.parametrize("ridge", [1e-12, 1e-16, 1e-20])
def test_a_tiny_ridge_gives_the_exact_fitting_variance(ridge: float) -> None:
    # The intercept and a column's bases (which sum to 1) make B'B singular; a ridge this small
    # does not outweigh rounding, and inverting G directly gave a variance off by a third or
    # more at 1e-16 (0.66 instead of about 6e-5 with a column given twice). The exact value
    # comes from decimal arithmetic on the same design (cubic B-splines, 2 interior knots at the
    # quantiles, scipy's BSpline), which least squares makes independent of such a ridge.
    from scipy.interpolate import BSpline

    rng = np.random.default_rng(11)
    x0 = rng.uniform(0, 1, 40)
    y = x0 ** 2 + 0.1 * rng.normal(size=40)
    knots = np.r_[[x0.min()] * 4, np.quantile(x0, [1 / 3, 2 / 3]), [x0.max()] * 4]
    basis = BSpline.design_matrix(x0, knots, 3).toarray()
    at = BSpline.design_matrix(np.array([0.3]), knots, 3).toarray()[0]
    for design, x, row in [
        (np.column_stack([np.ones(40), basis]), x0[:, None], np.r_[1.0, at]),
        (np.column_stack([np.ones(40), basis, basis]), np.column_stack([x0, x0]), np.r_[1.0, at, at]),
    ]:
        m = fit_additive_splines(x, y[:, None], n_knots=2, ridge=ridge)
        exact = _exact_mean_variance(design, y, row, ridge)
        assert m.mean(np.full((1, x.shape[1]), 0.3))[1][0] == pytest.approx(exact, rel=1e-6)
