"""Additive spline regressor: basis against scipy, exact recovery, linear tails, fitting variance."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
from modelgate.drift.additive_splines import (
    AdditiveSplineRegressor,
    bspline_basis,
    fit_additive_splines,
)
from scipy.interpolate import BSpline


def test_basis_matches_scipy_design_matrix() -> None:
    rng = np.random.default_rng(0)
    knots = np.r_[[-2.0] * 4, [-1.0, -0.2, 0.5, 1.1], [3.0] * 4]
    # random points plus every knot and both ends, where span look-ups go wrong first
    x = np.r_[rng.uniform(-2, 3, 500), knots[3:-3], -2.0, 3.0]
    first, vals = bspline_basis(x, knots)
    dense = np.zeros((x.size, knots.size - 4))
    for r in range(4):
        dense[np.arange(x.size), first + r] = vals[:, r]
    assert dense == pytest.approx(BSpline.design_matrix(x, knots, 3).toarray(), abs=1e-14)


def test_additive_truth_in_the_spline_space_is_recovered() -> None:
    # A cubic in x0, a quadratic in x1 and an offset per category are all in the model's space:
    # with no ridge the fit is exact, inside the range and at unseen points.
    rng = np.random.default_rng(1)
    n = 3000
    x = np.column_stack([rng.uniform(-1, 2, n), rng.normal(size=n), rng.integers(0, 3, n)])

    def truth(v: np.ndarray) -> np.ndarray:
        return (v[:, 0] ** 3 - v[:, 0] + 0.5 * v[:, 1] ** 2 + np.array([0.0, 2.0, -1.0])[
            v[:, 2].astype(int)])

    m = fit_additive_splines(x, truth(x)[:, None], categorical=[False, False, True], ridge=0.0)
    inside = np.column_stack([rng.uniform(-1, 2, 200), rng.uniform(-1.5, 1.5, 200),
                              rng.integers(0, 3, 200)])
    assert m.predict(inside)[:, 0] == pytest.approx(truth(inside), abs=1e-7)
    # Beyond x0's fitted range the term continues along a line from the edge, with its mean
    # slope over the outermost span: from the last interior knot (the 10/11 quantile of the
    # fitted x0, default 10 knots) to the largest fitted x0 = h.
    def f(v: float) -> float:
        return v ** 3 - v

    h, q = float(x[:, 0].max()), float(np.quantile(x[:, 0], 10 / 11))
    line = f(h) + (f(h) - f(q)) / (h - q) * 1.0
    assert m.predict(np.array([[h + 1.0, 0.0, 0.0]]))[0, 0] == pytest.approx(line, abs=1e-6)


def test_missing_values_and_unseen_codes() -> None:
    # y = 5 wherever x0 is missing (else x0): the missing value gets its own fitted value.
    rng = np.random.default_rng(2)
    x0 = rng.uniform(0, 1, 2000)
    x0[::10] = np.nan
    codes = rng.integers(0, 2, 2000).astype(float)
    y = np.where(np.isnan(x0), 5.0, x0) + codes
    m = fit_additive_splines(np.column_stack([x0, codes]), y[:, None], categorical=[False, True],
                             ridge=0.0)
    got = m.predict([[np.nan, 0.0], [0.25, 1.0]])[:, 0]
    assert got == pytest.approx([5.0, 1.25], abs=1e-7)
    # An unseen code (7) takes the codes' mean effect on the fitted rows: between the two.
    unseen = m.predict([[0.25, 7.0]])[0, 0]
    assert 0.25 + 0.4 < unseen < 0.25 + 0.6
    # The exact mean from the basis equals the mean of the row predictions.
    cur = np.column_stack([np.r_[rng.uniform(-0.5, 1.5, 300), np.nan], np.r_[rng.integers(0, 3, 300), 1]])
    mean, _ = m.mean(cur)
    assert mean == pytest.approx(m.predict(cur).mean(axis=0), abs=1e-12)


def test_fitting_variance_matches_repeated_fits() -> None:
    # Monte Carlo oracle for the sandwich variance: refit on fresh samples and compare the spread
    # of the mean prediction over a shifted set of rows with the variance each fit reports.
    rng = np.random.default_rng(3)
    target_rows = rng.normal(1.0, 0.7, (400, 1))
    means, reported = [], []
    for _ in range(150):
        x = rng.normal(size=(1500, 1))
        y = x[:, 0] ** 2 + (0.5 + 0.5 * np.abs(x[:, 0])) * rng.normal(size=1500)
        mean, var = fit_additive_splines(x, y[:, None], n_knots=6).mean(target_rows)
        means.append(mean[0])
        reported.append(var[0])
    ratio = float(np.var(means, ddof=1) / np.mean(reported))
    assert 0.7 < ratio < 1.4, ratio


def test_pickle_round_trip_and_other_format_refused() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(500, 2))
    m = fit_additive_splines(x, np.column_stack([x[:, 0], x[:, 1] ** 2]))
    again = pickle.loads(pickle.dumps(m, protocol=5))  # noqa: S301 - our own bytes
    assert np.array_equal(again.predict(x), m.predict(x))
    old = AdditiveSplineRegressor(0, m.terms, m.intercept, m.covariance)
    with pytest.raises(ValueError, match="format version 0; this modelgate reads version 1"):
        pickle.loads(pickle.dumps(old, protocol=5))  # noqa: S301 - our own bytes


def test_errors_name_what_is_wrong() -> None:
    x = np.zeros((4, 2))
    with pytest.raises(ValueError, match="2-D with one row each"):
        fit_additive_splines(x, np.zeros(4))
    with pytest.raises(ValueError, match="missing or infinite"):
        fit_additive_splines(x, np.full((4, 1), np.nan))
    with pytest.raises(ValueError, match="one flag per column"):
        fit_additive_splines(x, np.zeros((4, 1)), categorical=[True])
    with pytest.raises(ValueError, match="n_knots"):
        fit_additive_splines(x, np.zeros((4, 1)), n_knots=0)
    m = fit_additive_splines(np.column_stack([np.arange(4.0), np.ones(4)]), np.arange(4.0)[:, None])
    with pytest.raises(ValueError, match="2-D with 2 columns"):
        m.predict(np.zeros((3, 3)))
    assert m.predict([[1.5, 1.0]])[0, 0] == pytest.approx(1.5, abs=1e-3)  # constant x1: no term


# --- cases added for the mutation session of drift/additive_splines.py (tests/MUTATION.md) ---------


def _cubic_fit() -> tuple[np.ndarray, AdditiveSplineRegressor]:
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 2, (3000, 1))
    return x, fit_additive_splines(x, (x[:, 0] ** 3 - x[:, 0])[:, None], ridge=0.0)


def test_left_tail_continues_along_the_first_span_secant() -> None:
    # Below the smallest fitted x0 = l the term follows the secant of the outermost span, from l
    # to the first interior knot (the 1/11 quantile of the fitted x0, default 10 knots).
    x, m = _cubic_fit()

    def f(v: float) -> float:
        return v ** 3 - v

    low, q = float(x[:, 0].min()), float(np.quantile(x[:, 0], 1 / 11))
    slope = (f(q) - f(low)) / (q - low)
    for step in (0.5, 1.0, 3.0):
        assert m.predict(np.array([[low - step]]))[0, 0] == pytest.approx(f(low) - slope * step, abs=1e-6)
    # and the exact mean over rows in the tail equals the mean of their predictions
    rows = np.array([[low - 1.0], [low - 2.0], [0.5], [q]])
    mean, _ = m.mean(rows)
    assert mean == pytest.approx(m.predict(rows).mean(axis=0), abs=1e-9)
    term = m.terms[0]
    assert (term.kind, term.low, term.high) == ("spline", low, float(x[:, 0].max()))


def test_many_knots_take_the_binary_search() -> None:
    # 200 interior knots: spans are found by np.searchsorted; the fit still matches the truth.
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, (4000, 1))
    m = fit_additive_splines(x, (np.sin(6 * x[:, 0]))[:, None], n_knots=200, ridge=0.0)
    assert np.unique(m.terms[0].breaks).size == 202
    grid = np.linspace(0.01, 0.99, 97)[:, None]
    assert m.predict(grid)[:, 0] == pytest.approx(np.sin(6 * grid[:, 0]), abs=1e-6)
    mean, _ = m.mean(grid)
    assert mean == pytest.approx(m.predict(grid).mean(axis=0), abs=1e-9)


def test_constant_column_has_no_term_in_the_mean_either() -> None:
    rng = np.random.default_rng(6)
    x = np.column_stack([rng.uniform(0, 1, 200), np.full(200, 3.0)])
    m = fit_additive_splines(x, (2 * x[:, 0])[:, None], ridge=0.0)
    assert [t.kind for t in m.terms] == ["spline", "none"] and m.terms[1].size == 0
    cur = np.column_stack([rng.uniform(0, 1, 20), rng.uniform(-5, 5, 20)])
    mean, var = m.mean(cur)
    assert mean == pytest.approx(m.predict(cur).mean(axis=0), abs=1e-9)
    assert mean[0] == pytest.approx(2 * cur[:, 0].mean(), abs=1e-6)
    assert var.shape == (1,) and var[0] >= 0


def test_a_model_without_columns_predicts_its_intercept() -> None:
    # a bug, fixed: with no columns, predict returned no rows whatever the rows of x.
    y = np.array([[1.0, 10.0], [2.0, 20.0], [6.0, 30.0]])
    m = fit_additive_splines(np.zeros((3, 0)), y)
    assert m.terms == () and m.intercept == pytest.approx([3.0, 20.0])
    assert m.predict(np.zeros((4, 0))) == pytest.approx(np.tile([3.0, 20.0], (4, 1)))
    mean, var = m.mean(np.zeros((5, 0)))
    assert mean == pytest.approx([3.0, 20.0]) and var.shape == (2,)
    empty_mean, empty_var = m.mean(np.zeros((0, 0)))
    assert np.isnan(empty_mean).all() and np.array_equal(empty_var, [0.0, 0.0])


def test_a_covariance_rounding_below_zero_gives_a_variance_of_0() -> None:
    # The sandwich variance row' Sigma row is a squared norm, never negative in exact
    # arithmetic; a fitted Sigma's rounding can leave it a little below 0, which no small fit
    # was found to do, so the model is built with such a Sigma (one output, no columns).
    model = AdditiveSplineRegressor(format_version=1, terms=(), intercept=np.array([0.5]),
                                    covariance=np.array([[[-1e-30]]]))
    mean, var = model.mean(np.zeros((3, 0)))
    assert mean.tolist() == [0.5] and var.tolist() == [0.0]


def test_mean_of_no_rows_is_nan_with_no_variance() -> None:
    _, m = _cubic_fit()
    mean, var = m.mean(np.zeros((0, 1)))
    assert mean.shape == (1,) and np.isnan(mean[0]) and np.array_equal(var, [0.0])
    assert m.predict(np.zeros((0, 1))).shape == (0, 1)


def test_models_are_frozen_and_slotted() -> None:
    import dataclasses

    _, m = _cubic_fit()
    for obj, field in ((m, "intercept"), (m.terms[0], "coef")):
        assert not hasattr(obj, "__dict__") and field in type(obj).__slots__
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, None)


def test_a_state_that_is_not_a_tuple_is_refused() -> None:
    _, m = _cubic_fit()
    blank = object.__new__(AdditiveSplineRegressor)
    with pytest.raises(ValueError, match="format version None; this modelgate reads version 1"):
        blank.__setstate__([1, m.terms, m.intercept, m.covariance])
    with pytest.raises(ValueError, match="format version 1; this modelgate reads version 1"):
        blank.__setstate__((1, m.terms, m.intercept))
    with pytest.raises(ValueError, match="format version None"):
        blank.__setstate__(())
    blank.__setstate__((1, m.terms, m.intercept, m.covariance))
    assert np.array_equal(blank.predict([[0.5]]), m.predict([[0.5]]))


def test_rows_of_x_and_y_must_match_and_exist() -> None:
    for x, y in ((np.zeros((4, 1)), np.zeros((3, 1))), (np.zeros((3, 1)), np.zeros((4, 1))),
                 (np.zeros((0, 1)), np.zeros((0, 1))), (np.zeros(4), np.zeros((4, 1))),
                 (np.zeros((4, 1, 1)), np.zeros((4, 1))), (np.zeros((4, 1)), np.zeros((4, 1, 1)))):
        message = (f"x and y must be 2-D with one row each, at least one; got shapes {x.shape!r} and "
                   f"{y.shape!r}")
        with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
            fit_additive_splines(x, y)


def test_terms_compare_by_identity_and_hash() -> None:
    _, m = _cubic_fit()
    term = m.terms[0]
    copy = type(term)(*(getattr(term, f) for f in type(term).__slots__))
    assert term == term and term != copy and hash(term) != hash(copy)
    again = AdditiveSplineRegressor(m.format_version, m.terms, m.intercept, m.covariance)
    assert m == m and m != again and isinstance(hash(m), int)


def test_terms_without_a_spline_have_empty_spline_fields() -> None:
    x = np.column_stack([np.full(10, 2.0), np.arange(10.0) % 3])
    m = fit_additive_splines(x, np.arange(10.0)[:, None], categorical=[False, True])
    none, table = m.terms
    assert (none.kind, none.size, table.kind, table.size) == ("none", 0, "table", 3)
    for t in (none, table):
        assert t.poly.shape == (0, 4, 4) and t.breaks.shape == (0,) and (t.low, t.high) == (0.0, 0.0)
        assert t.d_low.shape == (0,) and t.d_high.shape == (0,)


def test_missing_value_of_a_column_fitted_without_any_is_its_mean_effect() -> None:
    # No missing x0 in the fitted rows: a NaN takes f0's mean over the fitted rows (the column
    # marginalised out), i.e. the mean prediction over the fitted x0 at the same code.
    rng = np.random.default_rng(7)
    x = np.column_stack([rng.uniform(0, 1, 500), rng.integers(0, 2, 500)])
    m = fit_additive_splines(x, (x[:, 0] ** 2 + 2 * x[:, 1])[:, None], categorical=[False, True])
    assert m.terms[0].coef.shape[0] == m.terms[0].size  # no column of its own for a missing value
    for code in (0.0, 1.0):
        at_code = np.column_stack([x[:, 0], np.full(500, code)])
        got = m.predict([[np.nan, code]])[0, 0]
        assert got == pytest.approx(m.predict(at_code)[:, 0].mean(), abs=1e-9)
        mean, _ = m.mean([[np.nan, code], [0.5, code]])
        assert mean[0] == pytest.approx((got + m.predict([[0.5, code]])[0, 0]) / 2, abs=1e-9)
    # an unseen code, likewise, takes the codes' mean effect over the fitted rows
    at_x = np.column_stack([np.full(500, 0.5), x[:, 1]])
    assert m.predict([[0.5, 9.0]])[0, 0] == pytest.approx(m.predict(at_x)[:, 0].mean(), abs=1e-9)
    unseen = np.array([[0.5, 9.0], [0.5, 2.0], [0.5, -3.0], [0.5, -1.0], [0.5, 1.0]])
    mean, _ = m.mean(unseen)
    assert mean == pytest.approx(m.predict(unseen).mean(axis=0), abs=1e-9)
    assert m.predict(unseen)[:4, 0] == pytest.approx([m.predict(at_x)[:, 0].mean()] * 4, abs=1e-9)


def test_options_at_their_bounds_and_defaults() -> None:
    from modelgate.drift import additive_splines as mod

    assert (mod.FORMAT_VERSION, mod.DEFAULT_KNOTS, mod.DEFAULT_RIDGE) == (1, 10, 1e-5)
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 1, (300, 1))
    y = (x[:, 0] ** 2)[:, None]
    one = fit_additive_splines(x, y, n_knots=1)
    assert one.terms[0].breaks.size == 3 and one.terms[0].size == 5  # one interior knot, 5 bases
    default = fit_additive_splines(x, y)
    explicit = fit_additive_splines(x, y, n_knots=10, ridge=1e-5)
    assert np.array_equal(default.predict(x), explicit.predict(x))
    assert default.terms[0].breaks.size == 12
    assert not np.array_equal(default.predict(x), fit_additive_splines(x, y, ridge=1e-3).predict(x))
    for n_knots, ridge in ((0, 0.0), (-1, 0.0), (3, -1e-12), (3, -1.0)):
        with pytest.raises(ValueError, match=rf"^n_knots must be >= 1 and ridge >= 0; got {n_knots} and "):
            fit_additive_splines(x, y, n_knots=n_knots, ridge=ridge)
    with pytest.raises(TypeError):
        fit_additive_splines(x, y, None)  # type: ignore[misc]
    with pytest.raises(ValueError, match=r"^y holds missing or infinite values$"):
        fit_additive_splines(x, np.r_[y[:-1], [[np.inf]]])
    with pytest.raises(ValueError, match=r"^categorical must have one flag per column \(1\); got \(2,\)$"):
        fit_additive_splines(x, y, categorical=[False, False])


def test_knots_at_a_repeated_largest_value_are_dropped() -> None:
    # 40% of the rows at the largest value: the upper quantiles equal it and are no interior knot
    rng = np.random.default_rng(10)
    v = np.r_[rng.uniform(0, 1, 300), np.ones(200)]
    inner = np.unique(np.quantile(v, np.arange(1, 11) / 11))
    inner = inner[(inner > v.min()) & (inner < v.max())]
    m = fit_additive_splines(v[:, None], (v ** 2)[:, None], ridge=0.0)
    assert m.terms[0].size == inner.size + 4 and m.terms[0].breaks.size == inner.size + 2
    grid = np.linspace(v.min(), 1.0, 41)[:, None]
    assert m.predict(grid)[:, 0] == pytest.approx(grid[:, 0] ** 2, abs=1e-6)


def test_repeated_columns_without_ridge_use_the_pseudo_inverse() -> None:
    # x twice, no ridge: the Gram matrix is singular; the pseudo-inverse still fits the truth.
    rng = np.random.default_rng(11)
    x0 = rng.uniform(0, 1, 300)
    m = fit_additive_splines(np.column_stack([x0, x0]), (x0 ** 2)[:, None], ridge=0.0)
    grid = np.linspace(0.05, 0.95, 19)
    assert m.predict(np.column_stack([grid, grid]))[:, 0] == pytest.approx(grid ** 2, abs=1e-8)
    # the minimum-norm solution splits the effect evenly between the two copies
    assert m.terms[0].coef == pytest.approx(m.terms[1].coef, abs=1e-8)


def test_sandwich_covariance_by_hand_with_one_degree_of_freedom() -> None:
    # One categorical column of 3 codes: the design is [1, one-hot], p = 4, on n = 5 rows; the
    # HC1 sandwich written out with numpy (n / (n - p) = 5).
    codes = np.array([0.0, 1.0, 2.0, 0.0, 1.0])
    y = np.array([[1.0], [2.0], [4.0], [2.0], [5.0]])
    ridge = 0.1
    m = fit_additive_splines(codes[:, None], y, categorical=[True], ridge=ridge)
    b = np.column_stack([np.ones(5), codes[:, None] == np.arange(3)]).astype(float)
    g = b.T @ b + np.diag([0.0, 5 * ridge, 5 * ridge, 5 * ridge])
    coef = np.linalg.solve(g, b.T @ y)
    r = (y - b @ coef)[:, 0]
    gi = np.linalg.inv(g)
    sigma = gi @ (b.T @ np.diag(r ** 2) @ b) @ gi * 5 / (5 - 4)
    assert m.covariance[0] == pytest.approx(sigma, rel=1e-9, abs=1e-15)
    assert np.r_[m.intercept, m.terms[0].coef[:, 0]] == pytest.approx(coef[:, 0], rel=1e-9)
    # fewer rows than coefficients: the factor is n / 1
    m3 = fit_additive_splines(codes[:3, None], y[:3], categorical=[True], ridge=ridge)
    b3 = b[:3]
    g3 = b3.T @ b3 + np.diag([0.0, 3 * ridge, 3 * ridge, 3 * ridge])
    c3 = np.linalg.solve(g3, b3.T @ y[:3])
    r3 = (y[:3] - b3 @ c3)[:, 0]
    gi3 = np.linalg.inv(g3)
    assert m3.covariance[0] == pytest.approx(gi3 @ (b3.T @ np.diag(r3 ** 2) @ b3) @ gi3 * 3, rel=1e-9,
                                             abs=1e-15)


def test_ridge_fit_with_a_missing_value_column_by_hand() -> None:
    # Codes 0, 1 and missing: the design is [1, one-hot, missing], the ridge on all but the
    # intercept, solved with numpy here. Without the ridge a missing value's effect could also
    # sit in the intercept (the codes' columns sum to 1 minus it): the ridge tells them apart.
    codes = np.array([0.0, 1.0, np.nan, 0.0, 1.0, np.nan, 1.0])
    y = np.array([[1.0], [2.0], [7.0], [2.0], [3.0], [9.0], [2.5]])
    ridge = 0.2
    m = fit_additive_splines(codes[:, None], y, categorical=[True], ridge=ridge)
    b = np.column_stack([np.ones(7), codes == 0, codes == 1, np.isnan(codes)]).astype(float)
    g = b.T @ b + np.diag([0.0, 7 * ridge, 7 * ridge, 7 * ridge])
    coef = np.linalg.solve(g, b.T @ y)[:, 0]
    assert np.r_[m.intercept, m.terms[0].coef[:, 0]] == pytest.approx(coef, rel=1e-9)
    assert m.predict([[np.nan], [0.0], [1.0]])[:, 0] == pytest.approx(
        [coef[0] + coef[3], coef[0] + coef[1], coef[0] + coef[2]], rel=1e-9)
    assert np.array_equal(m.terms[0].missing_row, [0.0, 0.0, 1.0])


def test_a_nan_ridge_is_refused() -> None:
    # a bug, fixed: `ridge < 0` let NaN through, and the fit raised numpy's LinAlgError
    x = np.random.default_rng(0).uniform(0, 1, (50, 1))
    with pytest.raises(ValueError, match=r"^n_knots must be >= 1 and ridge >= 0; got 10 and nan$"):
        fit_additive_splines(x, x ** 2, ridge=float("nan"))
