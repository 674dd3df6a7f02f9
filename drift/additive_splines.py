"""An additive spline regressor: a smooth function per column, summed, fitted by ridge least squares.

The nanny error model (:mod:`modelgate.drift.regression_estimation`) predicts each row's expected
``|e|`` and ``e ** 2`` once per monitored interval; a tree ensemble costs tens of milliseconds per
5,000 rows there, this a span look-up and a cubic per row and column; and the mean over an
interval's rows, which is what the estimate needs, comes from per-span sums without per-row
predictions.

Model
-----
``f(x) = b + sum_j f_j(x_j)``, linear in its coefficients ``beta``: ``f(x) = B(x) beta`` for a
basis row ``B(x)``. A numeric column's ``f_j`` is a cubic B-spline with interior knots at
``n_knots`` quantiles of the column (fewer where values repeat) between its smallest and largest
fitted value, continued as a straight line beyond them (from the spline's value at the edge, with
its mean slope over the outermost span):
errors that grow with a feature keep growing outside the reference's range, where trees stay
flat. A categorical column (category codes ``0 .. k-1``) has one value per code. All
coefficients are fitted at once by least squares with a small ridge penalty (``ridge`` times the
row count, not on ``b``), which also settles the spline bases' partition of unity.

A missing value (NaN) takes the column's fitted "missing" coefficient when the fitted rows held
some, else the column's mean basis row over the fitted rows (the column marginalised out); an
unseen category code likewise.

The model is additive: it is exact for an additive truth (e.g. ``E[e ** 2 | x]`` for
``e = a(x1) + b(x2) eps``) and sees interactions only through columns that carry them (the nanny
model adds the prediction).

Fitting error
-------------
The fitted mean over a set of rows, ``mean_i B(x_i) beta_hat``, differs from the true function's
mean by the fitting noise ``Bbar (beta_hat - beta)``, shared by every set of rows predicted with
the same fit. Its variance is ``Bbar Sigma Bbar'`` with the sandwich (heteroscedasticity-robust,
HC1) covariance ``Sigma = G^-1 (B' diag(r ** 2) B) G^-1 n / (n - p)``, ``G = B'B + ridge n I``,
``r`` the fitted rows' residuals (``G^-1`` the pseudo-inverse, eigenvalues below 1e-10 of the
largest taken as 0: the directions a ridge of 0, or one too small to outweigh rounding, leaves
singular); :meth:`AdditiveSplineRegressor.mean` returns it beside the
mean. It is largest where the fitted rows are few: an interval shifted into the tails.

Why not scikit-learn's ``SplineTransformer`` with ``Ridge``
----------------------------------------------------------
They fit the same model, but each prediction builds the dense ``rows x basis`` matrix (about a
dozen columns per feature) although the interval's mean needs only per-span sums, and neither
exposes what the fitting-noise variance needs (the basis Gram matrix and residual sandwich).
scipy's ``BSpline.design_matrix`` builds the same basis as a sparse matrix, again per row; it is
the tests' oracle for :func:`bspline_basis`.

Stored form
-----------
:class:`AdditiveSplineRegressor` is pickled inside the estimation reference of a model version.
It carries ``format_version`` (:data:`FORMAT_VERSION`); unpickling another version raises a
``ValueError`` that says so instead of yielding a model that predicts something else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

__all__ = ["FORMAT_VERSION", "AdditiveSplineRegressor", "SplineTerm", "bspline_basis",
           "fit_additive_splines"]

#: Version of the pickled form; bump when the fields or their meaning change.
FORMAT_VERSION = 1
#: Default interior knots per numeric column.
DEFAULT_KNOTS = 10
#: Default ridge penalty per fitted row.
DEFAULT_RIDGE = 1e-5
#: Relative size under which an eigenvalue of the Gram matrix counts as 0 (see the fit).
_EIGEN_CUTOFF = 1e-10
_DEGREE = 3
_FIELDS = ("format_version", "terms", "intercept", "covariance")


def bspline_basis(x: NDArray[np.float64],
                  knots: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """The cubic B-spline basis at ``x`` (within the knots' range), four functions per row.

    Returns the index of each row's first non-zero basis function and the four values (de Boor's
    recursion, vectorised over rows).

    Examples
    --------
    >>> t = np.array([0.0, 0, 0, 0, 1, 2, 2, 2, 2])
    >>> first, vals = bspline_basis(np.array([0.0, 1.0, 2.0]), t)
    >>> first.tolist(), np.round(vals.sum(axis=1), 12).tolist()
    ([0, 1, 1], [1.0, 1.0, 1.0])
    """
    first, vals = _basis(x, knots)
    return first, np.column_stack(vals)


def _basis(x: NDArray[np.float64],
           knots: NDArray[np.float64]) -> tuple[NDArray[np.intp], list[NDArray[np.float64]]]:
    """:func:`bspline_basis` with the four values as separate contiguous arrays."""
    k = _DEGREE
    # the knot span: few knots, so counting the inner knots at or below x beats a binary search
    inner = knots[k + 1:knots.size - k - 1]
    span = np.full(x.size, k, dtype=np.intp)
    for knot in inner:
        span += x >= knot
    left = [x] + [x - knots[span + 1 - j] for j in range(1, k + 1)]  # left[0] unused
    right = [x] + [knots[span + j] - x for j in range(1, k + 1)]  # right[0] unused
    vals = [np.ones_like(x)]
    for j in range(1, k + 1):
        saved: Any = 0.0
        for r in range(j):
            temp = vals[r] / (right[r + 1] + left[j - r])
            vals[r] = saved + right[r + 1] * temp
            saved = left[j - r] * temp
        vals.append(saved)
    return span - k, vals


@dataclass(frozen=True, slots=True, eq=False)
class SplineTerm:
    """One column's basis and coefficients.

    Attributes
    ----------
    kind : {"spline", "table", "none"}
        Numeric (a cubic B-spline), categorical (a value per code) or constant on the fitted rows.
    size : int
        Basis functions of the values (spline coefficients, or codes); ``coef`` has one more, the
        missing value's, when the fitted rows held missing values.
    breaks : ndarray
        ``spline``: the distinct knots, ``low`` to ``high``; otherwise empty.
    poly : ndarray, shape (spans, 4, 4)
        ``spline``: on span ``s`` (``breaks[s]`` to ``breaks[s + 1]``), basis function ``s + r``
        is ``sum_d poly[s, r, d] * v ** d`` with ``v`` the position in the span, 0 to 1 (the
        B-spline basis, precomputed: evaluating it is then a polynomial per row).
    coef : ndarray, shape (width, outputs)
        The column's coefficients.
    low, high : float
        ``spline``: the fitted range; beyond it ``f_j`` is linear.
    d_low, d_high : ndarray
        ``spline``: the basis functions' slopes at each edge.
    missing_row : ndarray
        The basis row (length ``width``) of a missing value or an unseen code.
    """

    kind: str
    size: int
    breaks: NDArray[np.float64]
    poly: NDArray[np.float64]
    coef: NDArray[np.float64]
    low: float
    high: float
    d_low: NDArray[np.float64]
    d_high: NDArray[np.float64]
    missing_row: NDArray[np.float64]

    @property
    def inverse_width(self) -> NDArray[np.float64]:
        """1 / the width of each span."""
        return 1.0 / np.diff(self.breaks)

    def _span(self, v: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        """Each value's span and its offset from the span's start (values clipped to the range)."""
        clipped = np.clip(v, self.low, self.high)
        inner = self.breaks[1:-1]
        if inner.size < 127:  # few knots: counting those passed (bytes) beats a binary search
            count: NDArray[Any] = np.zeros(v.size, dtype=np.int8)
            for knot in inner:
                count += (clipped >= knot).view(np.int8)
            span = count.astype(np.intp)
        else:
            span = np.searchsorted(inner, clipped, side="right")
        return span, clipped - self.breaks[span]

    def _locate(self, v: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64],
                                                       NDArray[np.float64], NDArray[np.float64]]:
        """Span, position in the span (0 to 1), and distances below ``low`` / above ``high``."""
        span, offset = self._span(v)
        return (span, offset * self.inverse_width[span], np.minimum(v - self.low, 0.0),
                np.maximum(v - self.high, 0.0))

    def values(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """``f_j`` of every output at each value of ``x`` (NaN: missing), shape (n, outputs)."""
        ok = ~np.isnan(x)
        out = np.tile(self.missing_row @ self.coef, (x.size, 1))
        if self.kind == "table":
            codes = np.where(ok, x, -1.0).astype(np.intp)
            known = ok & (codes >= 0) & (codes < self.size)
            out[known] = self.coef[codes[known]]
        elif self.kind == "spline":
            all_ok = bool(ok.all())
            span, pos, below, above = self._locate(x if all_ok else x[ok])
            c = self.coef[:self.size]
            # per span, the polynomial of each output: q[s, d, k] = sum_r poly[s, r, d] c[s + r, k]
            window = np.stack([c[r:r + self.poly.shape[0]] for r in range(_DEGREE + 1)], axis=1)
            q = np.einsum("srd,srk->kds", self.poly, window)
            fitted = np.empty((pos.size, c.shape[1]))
            for k in range(c.shape[1]):
                acc = q[k, _DEGREE][span]
                for d in range(_DEGREE - 1, -1, -1):
                    acc = acc * pos + q[k, d][span]
                fitted[:, k] = acc + below * float(self.d_low @ c[:, k]) + above * float(
                    self.d_high @ c[:, k])
            if all_ok:
                return fitted
            out[ok] = fitted
        return out

    def basis_sum(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """The sum over the values of ``x`` of their basis rows (length ``width``)."""
        ok = ~np.isnan(x)
        total = np.zeros(self.coef.shape[0])
        n_other = x.size - int(np.count_nonzero(ok))  # missing or unseen: the missing row
        if self.kind == "table":
            codes = np.where(ok, x, -1.0).astype(np.intp)
            known = ok & (codes >= 0) & (codes < self.size)
            n_other = x.size - int(np.count_nonzero(known))
            total[:self.size] = np.bincount(codes[known], minlength=self.size)
        elif self.kind == "spline":
            v = x[ok] if n_other else x
            span, offset = self._span(v)
            spans = self.poly.shape[0]
            # sums of offset ** d per span, scaled to the position (offset / width) ** d after
            power = offset
            moments: list[NDArray[Any]] = [np.bincount(span, minlength=spans).astype(np.float64)]
            for _ in range(_DEGREE):
                moments.append(np.bincount(span, weights=power, minlength=spans))
                power = power * offset
            scale = self.inverse_width[:, None] ** np.arange(_DEGREE + 1)
            contrib = np.einsum("sd,srd->sr", np.column_stack(moments) * scale, self.poly)
            for r in range(_DEGREE + 1):
                total[r:r + spans] += contrib[:, r]
            below, above = v[v < self.low], v[v > self.high]  # few rows: no full-length arrays
            total[:self.size] += ((below - self.low).sum() * self.d_low
                                  + (above - self.high).sum() * self.d_high)
        return total + n_other * self.missing_row


@dataclass(frozen=True, slots=True, eq=False)
class AdditiveSplineRegressor:
    """``f(x) = intercept + sum_j f_j(x[:, j])``; see the module docstring.

    Attributes
    ----------
    format_version : int
        :data:`FORMAT_VERSION` when fitted.
    terms : tuple of SplineTerm
        One per column of the design matrix.
    intercept : ndarray
        One per output.
    covariance : ndarray
        Per output, the sandwich covariance of ``[intercept, terms' coefficients...]`` (see
        "Fitting error"), shape (outputs, p, p).
    """

    format_version: int
    terms: tuple[SplineTerm, ...]
    intercept: NDArray[np.float64]
    covariance: NDArray[np.float64]

    def _columns(self, x: ArrayLike) -> list[NDArray[np.float64]]:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != len(self.terms):
            raise ValueError(f"x must be 2-D with {len(self.terms)} columns; got shape {arr.shape!r}")
        return [np.ascontiguousarray(arr[:, j]) for j in range(arr.shape[1])]

    def predict(self, x: ArrayLike) -> NDArray[np.float64]:
        """Predictions for the rows of ``x`` (2-D, a column per term, NaN for missing), shape
        (n, outputs)."""
        cols = self._columns(x)
        out = np.tile(self.intercept, (cols[0].size if cols else np.shape(x)[0], 1))
        for term, col in zip(self.terms, cols, strict=True):
            out += term.values(col)
        return out

    def mean(self, x: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per output, the mean prediction over the rows of ``x`` and its variance from the
        fitting noise (NaN and 0 for no rows). Exact, without per-row predictions: the mean basis
        row times the coefficients."""
        cols = self._columns(x)
        n = cols[0].size if cols else np.asarray(x).shape[0]
        if n == 0:
            return np.full(self.intercept.size, np.nan), np.zeros(self.intercept.size)
        row = np.concatenate([[float(n)], *(t.basis_sum(c) for t, c in zip(self.terms, cols,
                                                                       strict=True))]) / n
        coef = np.vstack([self.intercept[None, :], *(t.coef for t in self.terms)])
        return row @ coef, np.maximum(0.0, self.covariance @ row @ row)

    def __getstate__(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in _FIELDS)

    def __setstate__(self, state: Any) -> None:
        version = state[0] if isinstance(state, tuple) and state else None
        if version != FORMAT_VERSION or len(state) != len(_FIELDS):
            raise ValueError(f"stored additive spline model has format version {version!r}; this "
                             f"modelgate reads version {FORMAT_VERSION}: refit the estimation "
                             f"reference of that model version")
        for name, value in zip(_FIELDS, state, strict=True):
            object.__setattr__(self, name, value)


def _span_polynomials(knots: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The distinct knots and, per span, the cubic in the position ``v`` of its four basis
    functions (solved from the basis at four points inside the span)."""
    breaks = np.unique(knots)
    at = np.array([0.1, 0.4, 0.7, 0.95])
    vander = np.vander(at, _DEGREE + 1, increasing=True)
    poly = np.empty((breaks.size - 1, _DEGREE + 1, _DEGREE + 1))
    for s in range(breaks.size - 1):
        first, vals = bspline_basis(breaks[s] + at * (breaks[s + 1] - breaks[s]), knots)
        if not (first == s).all():
            raise AssertionError("knot span numbering")  # pragma: no cover - by construction
        poly[s] = np.linalg.solve(vander, vals).T
    return breaks, poly


def _knots(v: NDArray[np.float64], n_knots: int) -> NDArray[np.float64]:
    low, high = float(v.min()), float(v.max())
    inner = np.unique(np.quantile(v, np.arange(1, n_knots + 1) / (n_knots + 1)))
    inner = inner[(inner > low) & (inner < high)]
    return np.concatenate([[low] * (_DEGREE + 1), inner, [high] * (_DEGREE + 1)])


def _edge_slopes(knots: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each basis function's slope used beyond each end: its secant over the outermost span
    (the tangent at the very edge rests on the few most extreme rows and can even point the
    wrong way; the outermost span holds about 1 / (n_knots + 1) of them)."""
    breaks = np.unique(knots)
    size = knots.size - _DEGREE - 1

    def row(v: float) -> NDArray[np.float64]:
        first, vals = bspline_basis(np.array([v]), knots)
        out = np.zeros(size)
        out[first[0]:first[0] + _DEGREE + 1] = vals[0]
        return out

    return ((row(breaks[1]) - row(breaks[0])) / (breaks[1] - breaks[0]),
            (row(breaks[-1]) - row(breaks[-2])) / (breaks[-1] - breaks[-2]))


def _column(col: NDArray[np.float64], categorical: bool, n_knots: int) -> tuple[SplineTerm, Any]:
    """A column's term (coefficients still zero) and its sparse basis block on the fitted rows."""
    n = col.size
    ok = ~np.isnan(col)
    has_missing = not ok.all()
    empty = np.zeros(0)
    breaks, poly, d_low, d_high = empty, np.zeros((0, _DEGREE + 1, _DEGREE + 1)), empty, empty
    if categorical and ok.any():
        kind, size = "table", int(np.nanmax(col)) + 1
        rows, cols, data = np.flatnonzero(ok), col[ok].astype(np.intp), np.ones(int(ok.sum()))
    elif ok.any() and np.nanmin(col) < np.nanmax(col):
        kind, knots = "spline", _knots(col[ok], n_knots)
        size = knots.size - _DEGREE - 1
        first, vals = bspline_basis(col[ok], knots)
        rows = np.repeat(np.flatnonzero(ok), _DEGREE + 1)
        cols = (first[:, None] + np.arange(_DEGREE + 1)).ravel()
        data = vals.ravel()
        breaks, poly = _span_polynomials(knots)
        d_low, d_high = _edge_slopes(knots)
    else:
        kind, size = "none", 0
        rows, cols, data = np.zeros(0, np.intp), np.zeros(0, np.intp), empty
    width = size + int(has_missing)
    if has_missing:  # the missing value's own column, last
        missing = np.flatnonzero(~ok)
        rows, cols = np.r_[rows, missing], np.r_[cols, np.full(missing.size, size)]
        data = np.r_[data, np.ones(missing.size)]
    block = sparse.csr_matrix((data, (rows, cols)), shape=(n, width))
    if has_missing:
        missing_row = np.zeros(width)
        missing_row[-1] = 1.0
    else:  # marginalise the column out: its mean basis row
        missing_row = np.asarray(block.sum(axis=0)).ravel() / max(n, 1)
    low, high = (float(breaks[0]), float(breaks[-1])) if kind == "spline" else (0.0, 0.0)
    return SplineTerm(kind, size, breaks, poly, np.zeros((width, 0)), low, high, d_low, d_high,
                      missing_row), block


def fit_additive_splines(x: ArrayLike, y: ArrayLike, *, categorical: ArrayLike | None = None,
                         n_knots: int | None = None,
                         ridge: float | None = None) -> AdditiveSplineRegressor:
    """Fit the additive spline regressor by ridge least squares.

    Parameters
    ----------
    x : array_like of float, shape (n, p)
        Design matrix: numeric columns (NaN: missing) and category codes (``0 .. k-1``, NaN:
        missing) where ``categorical`` says so.
    y : array_like of float, shape (n, outputs)
        Targets, finite; each output is fitted on its own (one basis).
    categorical : array_like of bool, shape (p,), optional
        Which columns hold category codes (default none).
    n_knots : int, optional
        Interior knots per numeric column, at its quantiles (default :data:`DEFAULT_KNOTS`).
    ridge : float, optional
        Penalty on the squared coefficients (not the intercept), per row (default
        :data:`DEFAULT_RIDGE`).

    Returns
    -------
    AdditiveSplineRegressor

    Raises
    ------
    ValueError
        Mismatched shapes, no rows, a non-finite target, ``n_knots < 1`` or ``ridge < 0`` or NaN.

    Examples
    --------
    An additive truth, ``y = x0 ** 2 + 3 * [c == 1]``, is recovered, and the square keeps rising
    (linearly) beyond the fitted range:

    >>> rng = np.random.default_rng(0)
    >>> x = np.column_stack([rng.uniform(-2, 2, 4000), rng.integers(0, 2, 4000)])
    >>> m = fit_additive_splines(x, (x[:, 0] ** 2 + 3 * x[:, 1])[:, None], categorical=[False, True])
    >>> np.round(m.predict([[1.5, 0.0], [1.5, 1.0], [0.0, 0.0]])[:, 0], 2).tolist()
    [2.25, 5.25, 0.0]
    >>> bool(m.predict([[2.5, 0.0]])[0, 0] > m.predict([[2.0, 0.0]])[0, 0])
    True
    """
    n_knots = DEFAULT_KNOTS if n_knots is None else n_knots
    ridge = DEFAULT_RIDGE if ridge is None else ridge
    arr = np.asarray(x, dtype=np.float64)
    target = np.asarray(y, dtype=np.float64)
    if arr.ndim != 2 or target.ndim != 2 or target.shape[0] != arr.shape[0] or arr.shape[0] == 0:
        raise ValueError(f"x and y must be 2-D with one row each, at least one; got shapes "
                         f"{arr.shape!r} and {target.shape!r}")
    if not np.isfinite(target).all():
        raise ValueError("y holds missing or infinite values")
    if n_knots < 1 or not ridge >= 0:  # not "ridge < 0": NaN too
        raise ValueError(f"n_knots must be >= 1 and ridge >= 0; got {n_knots!r} and {ridge!r}")
    cat = (np.zeros(arr.shape[1], dtype=bool) if categorical is None
           else np.asarray(categorical, dtype=bool))
    if cat.shape != (arr.shape[1],):
        raise ValueError(f"categorical must have one flag per column ({arr.shape[1]}); got {cat.shape!r}")
    n = arr.shape[0]
    columns = [_column(arr[:, j], bool(cat[j]), n_knots) for j in range(arr.shape[1])]
    design = sparse.hstack([sparse.csr_matrix(np.ones((n, 1))), *(b for _, b in columns)],
                           format="csr")
    p = design.shape[1]
    penalty = np.full(p, ridge * n)
    penalty[0] = 0.0
    gram = (design.T @ design).toarray() + np.diag(penalty)
    # Pseudo-inverse whatever the ridge: the intercept and any column's bases (which sum to 1)
    # make B'B singular, and where a tiny ridge (below about 1e-10) is all that lifts those
    # directions, inverting them is mostly rounding (1e-16 put the variance a third off).
    # Eigenvalues under _EIGEN_CUTOFF of the largest are dropped, as at ridge 0: such a ridge
    # moves the fit by less than that, and rounding stays under about 1e-16 / _EIGEN_CUTOFF.
    inverse = np.linalg.pinv(gram, rcond=_EIGEN_CUTOFF, hermitian=True)
    coef = inverse @ (design.T @ target)
    resid = target - design @ coef
    covariance = []
    for k in range(target.shape[1]):
        weighted = design.multiply(resid[:, k:k + 1]).tocsr()
        meat = (weighted.T @ weighted).toarray() * (n / max(n - p, 1))
        covariance.append(inverse @ meat @ inverse)
    terms, at = [], 1
    for term, block in columns:
        width = block.shape[1]
        terms.append(SplineTerm(term.kind, term.size, term.breaks, term.poly,
                                coef[at:at + width].copy(), term.low, term.high, term.d_low,
                                term.d_high, term.missing_row))
        at += width
    return AdditiveSplineRegressor(FORMAT_VERSION, tuple(terms), coef[0].copy(),
                                   np.array(covariance))
