"""The masker of the SHAP estimators: masked model outputs averaged over a background.

A feature that is "absent" from a coalition takes its value from each row of a background
sample in turn, and the model output is averaged over the background rows
(``shap.maskers.Independent``). When many masked inputs are identical (columns with few
distinct values: categories, counts, flags; repeated rows), each distinct input is scored
once and counted with its multiplicity, which gives the same values with fewer model rows;
whether that pays is decided from a sample of the inputs (it does not change the values).
Inputs are identical when every float column has the same bits and every other column
compares equal. With ``output="logit"`` each model output is turned into log-odds BEFORE
averaging (see :mod:`modelgate.reports.explanation`).

Exact: the means are the plain means over every (row, coalition, background row) input.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

Output = Literal["probability", "logit", "value"]
Predict = Callable[[pd.DataFrame], npt.ArrayLike]

__all__ = ["MaskedEvaluator", "Output", "Predict", "unique_rows"]


class MaskedEvaluator:
    """Evaluates masked coalitions of explained rows, averaged over the background.

    Every (row, coalition, background row) triple is one masked model input. Identical
    inputs are scored once: each column is coded over the values of the explained rows
    and the background together, a triple's input gets an integer key (mixed radix over
    the column codes) and only the first triple of each key goes to ``predict``. A
    coalition's value is then the plain mean over its background rows, exactly as if
    every triple had been scored.

    Examples
    --------
    >>> import numpy as np
    >>> total = lambda f: (f["a"] + f["b"]).to_numpy()
    >>> ev = MaskedEvaluator(total, ("a", "b"), [np.array([1.0]), np.array([2.0])],
    ...                      [np.array([0.0, 4.0]), np.array([0.0, 0.0])], "value", 1000)
    >>> ev.endpoints()[0], ev.coalitions(np.array([0]), np.array([[True, False]])).tolist()
    (2.0, [1.0])
    """

    def __init__(
        self,
        predict: Predict,
        names: tuple[str, ...],
        x_cols: list[np.ndarray],
        bg_cols: list[np.ndarray],
        output: Output,
        max_batch_rows: int,
    ) -> None:
        self.predict, self.names = predict, names
        self.output, self.max_batch_rows = output, max_batch_rows
        self.n_rows = len(x_cols[0])
        pooled = [np.concatenate([x, bg]) for x, bg in zip(x_cols, bg_cols, strict=True)]
        coded = [_value_codes(col) for col in pooled]
        codes = [c for c, _ in coded]
        self.x_codes = np.column_stack([c[: self.n_rows] for c in codes])
        self.bg_codes = np.column_stack([c[self.n_rows :] for c in codes])
        self.n_bg = len(self.bg_codes)
        self.cards = [int(c.max()) + 1 for c in codes]
        # Non-numeric columns go to predict as pandas categoricals over these codes where
        # the values allow it: building a masked column is then integer work and a model
        # scorer can feed codes (modelgate.onnx.codes) instead of strings.
        self.dtypes = [_categorical_dtype(values) for _, values in coded]
        # the codes in the integer type pandas keeps them in, so no batch casts them again
        self.pooled = [
            col if d is None else pd.Categorical.from_codes(c, dtype=d).codes
            for c, d, col in zip(codes, self.dtypes, pooled, strict=True)
        ]
        self.x_cols = [c[: self.n_rows] for c in self.pooled]
        self.bg_cols = [c[self.n_rows :] for c in self.pooled]

    def endpoints(self) -> tuple[float, npt.NDArray[np.float64]]:
        """Mean output over the background, and the output on each explained row."""
        base = self._call(self.bg_cols).mean()
        return float(base), self._call(self.x_cols)

    def coalitions(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float64]:
        """Masked output of row ``row_idx[k]`` with features ``masks[k]`` present."""
        # Hand-written instead of shap's explainers: they call the model once per explained
        # row (and spend most of their time in per-row Python); here the masked inputs of a
        # whole block of (row, coalition) pairs go out in as few predict calls as
        # max_batch_rows allows.
        out = np.empty(len(row_idx), dtype=np.float64)
        step = max(1, _DEDUP_TRIPLES // self.n_bg)
        for start in range(0, len(row_idx), step):
            sl = slice(start, start + step)
            if self._worth_deduplicating(row_idx[sl], masks[sl]):
                out[sl] = self._distinct_means(row_idx[sl], masks[sl])
            else:
                out[sl] = self._all_means(row_idx[sl], masks[sl])
        return out

    def _worth_deduplicating(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_]
    ) -> bool:
        """Whether the first pairs repeat enough inputs for deduplication to pay off."""
        n = max(len(row_idx) // 8, min(len(row_idx), 64))
        keys = self._input_keys(row_idx[:n], masks[:n])
        return len(pd.unique(keys.ravel())) <= (1.0 - _DEDUP_MIN_SAVING) * keys.size

    def _distinct_means(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float64]:
        """Coalition means, scoring each distinct masked input once."""
        inverse, first = _first_occurrences(self._input_keys(row_idx, masks).ravel())
        pair, bg_row = np.divmod(first, self.n_bg)
        scored = self._score(row_idx[pair], masks[pair], bg_row)
        return scored[inverse].reshape(len(row_idx), self.n_bg).mean(axis=1)

    def _all_means(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float64]:
        """Coalition means, scoring every (pair, background row) input."""
        out = np.empty(len(row_idx), dtype=np.float64)
        step = max(1, self.max_batch_rows // self.n_bg)
        for start in range(0, len(row_idx), step):
            sl = slice(start, start + step)
            cols = [
                _masked_column(masks[sl, j], x[row_idx[sl]], bg)
                for j, (x, bg) in enumerate(zip(self.x_cols, self.bg_cols, strict=True))
            ]
            out[sl] = self._call(cols).reshape(len(row_idx[sl]), self.n_bg).mean(axis=1)
        return out

    def _input_keys(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.int64]:
        """One int64 per (pair, background row), pair-major; equal iff the inputs are equal."""
        kinds, kind_of = unique_rows(masks)

        def group_key(group: list[int]) -> npt.NDArray[np.int64]:
            weights = _group_weights(self.cards, group)
            present = masks[:, group] * (self.x_codes[row_idx][:, group] * weights)
            absent = (~kinds[:, group] * weights) @ self.bg_codes[:, group].T
            return present.sum(axis=1)[:, None] + absent[kind_of]

        return functools.reduce(_pair_key, map(group_key, _radix_groups(self.cards))).ravel()

    def _score(
        self, row_idx: npt.NDArray[np.intp], masks: npt.NDArray[np.bool_], bg_row: np.ndarray
    ) -> npt.NDArray[np.float64]:
        """Output on the masked inputs (row ``row_idx[i]``, background row ``bg_row[i]``)."""
        out = np.empty(len(row_idx), dtype=np.float64)
        # source[j, i]: position in pooled[j] (explained rows, then background) of input i
        source = np.where(masks.T, row_idx, self.n_rows + bg_row)
        for start in range(0, len(row_idx), self.max_batch_rows):
            sl = slice(start, start + self.max_batch_rows)
            out[sl] = self._call([col.take(source[j, sl]) for j, col in enumerate(self.pooled)])
        return out

    def _call(self, cols: list[np.ndarray]) -> npt.NDArray[np.float64]:
        series = {
            name: _series(col, dtype) for name, col, dtype in zip(self.names, cols, self.dtypes, strict=True)
        }
        frame = pd.DataFrame(series, copy=False)
        out = np.asarray(self.predict(frame), dtype=np.float64)
        if out.shape != (len(frame),):
            raise ValueError(f"predict must return shape ({len(frame)},); got {out.shape!r}")
        return _TRANSFORMS[self.output](out)


def _as_value(out: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """A regression's raw output: any finite number."""
    if not np.isfinite(out).all():
        raise ValueError("predict must return finite values; got NaN or infinity")
    return out


def _as_probability(out: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """A probability in [0, 1] (NaN is not)."""
    outside = np.clip(out, 0.0, 1.0) != out  # NaN != NaN: outside too
    if outside.any():
        raise ValueError(f"predict must return probabilities in [0, 1]; got {float(out[outside][0])!r}")
    return out


def _as_log_odds(out: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Log-odds of a probability strictly inside (0, 1)."""
    prob = _as_probability(out)
    if np.isin(prob, (0.0, 1.0)).any():
        raise ValueError(
            "output='logit' needs probabilities strictly inside (0, 1); predict "
            "returned 0 or 1 (saturated model); use output='probability'"
        )
    return np.log(prob) - np.log1p(-prob)


_TRANSFORMS: dict[str, Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]] = {
    "value": _as_value, "probability": _as_probability, "logit": _as_log_odds,
}


def _series(col: np.ndarray, dtype: pd.CategoricalDtype | None) -> pd.Series:
    """``col`` as a Series: codes of ``dtype`` as a categorical, else values as they are."""
    if dtype is not None:
        return pd.Series(pd.Categorical.from_codes(col, dtype=dtype), copy=False)
    # an explicit dtype keeps object columns as object (pandas 3 would infer "str", slowly)
    return pd.Series(col, dtype=col.dtype, copy=False)


def _masked_column(present: npt.NDArray[np.bool_], x: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """Flat ``(pair, background row)`` column: ``x[pair]`` where present, else ``bg``.

    Tiling the background and overwriting the present pairs is about twice as fast as
    ``np.where`` with broadcasting.
    """
    out = np.empty((len(present), len(bg)), dtype=bg.dtype)
    out[...] = bg
    out[present] = x[present][:, None]
    return out.ravel()


#: Most (row, coalition, background row) triples deduplicated together (bounds memory).
_DEDUP_TRIPLES = 2_000_000
#: Smallest share of repeated masked inputs (in a sample) for which deduplicating pays off:
#: hashing every input costs about as much as scoring 20% of them with a small ONNX model.
_DEDUP_MIN_SAVING = 0.3
#: Largest product of column cardinalities combined into one int64 key.
_RADIX_LIMIT = 2**62


def _value_codes(col: np.ndarray) -> tuple[npt.NDArray[np.int64], list[object] | None]:
    """Integer code per value, and for object columns the value of each code.

    Equal codes mean identical model input values. Floats are compared by bit pattern
    (-0.0 and 0.0 differ); other objects by type and equality (1, 1.0 and True differ),
    unhashable ones by identity.
    """
    if np.issubdtype(col.dtype, np.floating):
        # long double: its padding bytes are no part of the value, so the key is the value and
        # its sign (-0.0 and 0.0 differ as for the others; every NaN is one value)
        col = (pd.factorize(col, use_na_sentinel=False)[0] * 2 + np.signbit(col)
               if col.dtype.itemsize > 8 else col.view(np.dtype(f"i{col.dtype.itemsize}")))
    elif np.issubdtype(col.dtype, np.object_):
        seen: dict[object, int] = {}
        values: list[object] = []
        codes = np.empty(len(col), dtype=np.int64)
        for i, v in enumerate(col):
            key = _object_key(v)
            if key not in seen:
                seen[key] = len(values)
                values.append(v)
            codes[i] = seen[key]
        return codes, values
    codes, _ = pd.factorize(col, use_na_sentinel=False)
    return np.asarray(codes, dtype=np.int64), None


def _categorical_dtype(values: list[object] | None) -> pd.CategoricalDtype | None:
    """A categorical dtype whose categories are ``values`` (code order), if it is faithful.

    ``values`` are an object column's distinct values from :func:`_value_codes` (None for
    other columns). Faithful: they are hashable, not missing, and stay distinct as pandas
    categories (``1`` and ``1.0``, or ``0.0`` and ``-0.0``, would merge); then
    ``Categorical.from_codes`` gives back exactly the original values.
    """
    if values is None:
        return None
    try:
        # tupleize_cols=False: values that are all tuples stay one level of tuples, not a
        # MultiIndex
        categories = pd.Index(values, dtype=object, tupleize_cols=False)
        if categories.hasnans or not categories.is_unique:
            return None
        return pd.CategoricalDtype(categories)
    except TypeError:  # unhashable values
        return None


def _object_key(value: object) -> object:
    if isinstance(value, float | complex | np.inexact):
        return type(value), np.asarray(value).tobytes()
    try:
        hash(value)
    except TypeError:
        return id(value)
    return type(value), value


def _radix_groups(cards: list[int]) -> list[list[int]]:
    """Split columns into groups whose code combinations fit in one int64.

    In column order, each group as long as its product of cardinalities stays below
    ``_RADIX_LIMIT`` (2**62); a column whose cardinality alone reaches it is a group of its
    own (its codes, below the row count, still fit).

    Examples
    --------
    >>> _radix_groups([2**31, 2**31, 3, 2**40])
    [[0], [1, 2], [3]]
    >>> _radix_groups([2**20, 2**20, 2**21, 2])
    [[0, 1, 2], [3]]
    >>> _radix_groups([2**62, 1])
    [[0], [1]]
    """
    groups, size = [[0]], cards[0]
    for j, card in enumerate(cards[1:], start=1):
        if size * card >= _RADIX_LIMIT:
            groups.append([j])
            size = card
        else:
            groups[-1].append(j)
            size *= card
    return groups


def _group_weights(cards: list[int], group: list[int]) -> npt.NDArray[np.int64]:
    """Mixed-radix place values of a group's columns, its first column least significant.

    Examples
    --------
    >>> _group_weights([5, 3, 4, 7], [1, 2, 3]).tolist()
    [1, 3, 12]
    """
    return np.cumprod([1] + [cards[j] for j in group[:-1]], dtype=np.int64)


def _pair_key(
    left: npt.NDArray[np.int64], right: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Key of the pair (left, right), elementwise, without overflow."""
    a, _ = pd.factorize(left.ravel())
    b, _ = pd.factorize(right.ravel())
    return (a.astype(np.int64) * (int(b.max()) + 1) + b).reshape(left.shape)


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, npt.NDArray[np.intp]]:
    """Distinct rows of a 2-D array of small integers >= 0, in the order they first occur, and
    for each row the position of its distinct row.

    Each row gets one integer key as in :meth:`MaskedEvaluator._input_keys` (mixed radix
    over the columns' ranges, groups of columns paired where one int64 cannot hold them);
    hashing the keys is much faster than ``np.unique(a, axis=0)``.

    Examples
    --------
    >>> unique, inverse = unique_rows(np.array([[1, 0], [0, 2], [1, 0]]))
    >>> unique.tolist(), inverse.tolist()
    ([[1, 0], [0, 2]], [0, 1, 0])
    """
    cards = [int(c) + 1 for c in a.max(axis=0, initial=0)]
    # a boolean column times int64 place values is int64
    parts = (a[:, group] @ _group_weights(cards, group) for group in _radix_groups(cards))
    inverse, first = _first_occurrences(functools.reduce(_pair_key, parts))
    return a[first], inverse


def _first_occurrences(
    keys: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Code of each key (first-seen order) and the position where each code first occurs."""
    inverse, uniques = pd.factorize(keys)
    first = np.empty(len(uniques), dtype=np.intp)
    first[inverse[::-1]] = np.arange(len(keys) - 1, -1, -1)
    return inverse, first
