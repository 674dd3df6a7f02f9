"""Frame validation: a pandas frame's feature columns as the ONNX Runtime inputs of one model.

The graph is fed one input per manifest feature (numeric columns ``[N, 1]`` in the graph
input's own element type, float32, float64 or int64; categorical columns as string
(object) ``[N, 1]``, or as int64 codes where the graph was rewritten to take them,
:mod:`modelgate.onnx.codes`: same function, no per-element string conversion), or, with
the manifest's ``input_tensor``, one ``[N, F]`` tensor of the features in manifest order.
Missing values are refused unless the manifest feature says ``allow_missing`` (the graph
handles them, e.g. a skl2onnx ``SimpleImputer``); then missing numerics are fed as NaN and
missing categoricals as ``""``. Every numeric feed is range-checked for the graph input's
type: infinite values and values beyond float32's range are refused, and so are missing,
fractional or out-of-range values (a float 1e30, a uint64 >= 2**63) for an integer input,
which a cast would wrap silently. Errors name the column, the count of bad rows and the
first one's id (the manifest's ``id_column`` when the data has it, else its 0-based
position), never other values of the row.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from modelgate.onnx.manifest import Feature
from modelgate.onnx.settings import ScoringError

__all__ = ["NUMERIC_FEEDS", "RowsRefused", "UnscorableRows", "code_feed", "frame_feed", "numeric_feed",
           "refused"]


class UnscorableRows(ScoringError):
    """Rows of the input the model cannot be scored on, the first named by its id: a value
    the feature does not allow (missing, infinite, out of the fed type's range, an unknown
    category) or an output that is not a number.  The same rows are refused on every try, so
    a pipeline refuses its input with it rather than retrying."""


class RowsRefused(ScoringError):
    """Rows a check refused, with the position of the first one in the frame checked.

    Whoever knows the rows' ids names that row with :meth:`at` (an :class:`UnscorableRows`).
    """

    def __init__(self, message: str, first: int) -> None:
        super().__init__(message)
        self.message, self.first = message, first

    def at(self, index: pd.Index) -> UnscorableRows:
        """The same error naming the first refused row by ``index`` (its name: the id column;
        unnamed: positions, shown as ``row``).

        >>> str(RowsRefused("column 'x': 2 rows overflow INT64", 1).at(pd.Index([7, 9], name="id")))
        "column 'x': 2 rows overflow INT64 (first: id 9)"
        >>> str(RowsRefused("column 'x': 1 row is NaN", 0).at(pd.RangeIndex(5, 8)))
        "column 'x': 1 row is NaN (first: row 5)"
        """
        return UnscorableRows(f"{self.message} (first: {index.name or 'row'} "
                              f"{_shown_id(index[self.first])})")


def _shown_id(value: Any) -> str:
    """A row id as one short line: numbers as they are, strings quoted, at most 40 characters."""
    from modelgate.logsafe import escape_for_log

    value = value.item() if isinstance(value, np.generic) else value
    text = repr(value) if isinstance(value, str) else str(value)
    return escape_for_log(text if len(text) <= 40 else f"{text[:37]}...")


def refused(message: str, bad: np.ndarray) -> RowsRefused:
    """:class:`RowsRefused` for the rows where ``bad`` is true (at least one)."""
    count = int(bad.sum())
    return RowsRefused(message.format(rows=f"{count} rows"),
                       int(np.argmax(bad)))


#: How to fix a refused missing value (the manifest's ``allow_missing``, and when it is right).
_ALLOW_MISSING_HINT = ("(if the graph handles missing values itself, e.g. with an imputer, set "
                       "\"allow_missing\": true on this feature in the manifest)")
#: numpy type fed for each ONNX Runtime input type of a numeric feature.
NUMERIC_FEEDS: dict[str, np.dtype] = {
    "tensor(float)": np.dtype(np.float32), "tensor(double)": np.dtype(np.float64),
    "tensor(int64)": np.dtype(np.int64), "tensor(int32)": np.dtype(np.int32)}
#: ONNX's name of each fed integer type, for messages.
_ONNX_NAMES = {np.dtype(np.int64): "INT64", np.dtype(np.int32): "INT32",
               np.dtype(np.float32): "FLOAT", np.dtype(np.float64): "DOUBLE"}


def frame_feed(feature: Feature, series: pd.Series, dtype: np.dtype | None = None) -> np.ndarray:
    if feature.kind == "numeric":
        return numeric_feed(feature, series, dtype or np.dtype(np.float32))
    return _categorical_feed(feature, series)


def numeric_feed(feature: Feature, series: pd.Series,
                  dtype: np.dtype = np.dtype(np.float32)) -> np.ndarray:  # noqa: B008
    """The column as ``[N, 1]`` of ``dtype`` (the graph input's type), range-checked for it.

    Raises :class:`RowsRefused` naming the column, the count and the first bad row.
    """
    if not pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype):
        raise ScoringError(
            f"column {feature.name!r}: expected a numeric dtype, got {str(series.dtype)!r}")
    if dtype.kind == "f":
        return _float_feed(feature, series, dtype)
    if pd.api.types.is_integer_dtype(series.dtype):
        return _int_from_ints(feature, series, dtype)
    return _int_from_floats(feature, series, dtype)


def _float_feed(feature: Feature, series: pd.Series, dtype: np.dtype) -> np.ndarray:
    with np.errstate(over="ignore"):  # a double beyond float32's range becomes inf: refused
        values = series.to_numpy(dtype=dtype, na_value=np.nan)
    missing = np.isnan(values)
    infinite = np.isinf(values)
    if infinite.any():
        raise refused(f"column {feature.name!r}: {{rows}} are infinite or overflow "
                       f"{_ONNX_NAMES[dtype]} ({dtype.name})", infinite)
    if missing.any() and not feature.allow_missing:
        raise refused(f"column {feature.name!r}: {{rows}} are missing (NaN) and the manifest "
                       f"does not allow missing values for this feature {_ALLOW_MISSING_HINT}",
                       missing)
    return values.reshape(-1, 1)


def _refuse_int_missing(feature: Feature, missing: np.ndarray, dtype: np.dtype) -> None:
    if missing.any():
        raise refused(f"column {feature.name!r}: {{rows}} are missing (NaN) and the graph takes "
                       f"this feature as {_ONNX_NAMES[dtype]}, which cannot hold missing values",
                       missing)


def _out_of_range(feature: Feature, dtype: np.dtype) -> str:
    info = np.iinfo(dtype)
    return (f"column {feature.name!r}: {{rows}} are outside {_ONNX_NAMES[dtype]}'s range "
            f"[{info.min}, {info.max}] (the graph takes this feature as {_ONNX_NAMES[dtype]})")


def _int_from_ints(feature: Feature, series: pd.Series, dtype: np.dtype) -> np.ndarray:
    """An integer column, compared with the target's bounds in its own type (a cast to int64
    first would already have wrapped a uint64 >= 2**63)."""
    _refuse_int_missing(feature, series.isna().to_numpy(), dtype)
    raw = series.to_numpy(dtype=getattr(series.dtype, "numpy_dtype", series.dtype))
    target, source = np.iinfo(dtype), np.iinfo(raw.dtype)
    bad = np.zeros(raw.shape, dtype=bool)
    if source.max > target.max:
        bad |= raw > raw.dtype.type(target.max)
    if source.min < target.min:
        bad |= raw < raw.dtype.type(target.min)
    if bad.any():
        raise refused(_out_of_range(feature, dtype), bad)
    return raw.astype(dtype).reshape(-1, 1)


def _int_from_floats(feature: Feature, series: pd.Series, dtype: np.dtype) -> np.ndarray:
    values = series.to_numpy(dtype=np.float64, na_value=np.nan)
    _refuse_int_missing(feature, np.isnan(values), dtype)
    if np.isinf(values).any():
        raise refused(f"column {feature.name!r}: {{rows}} are infinite", np.isinf(values))
    fractional = values != np.round(values)
    if fractional.any():
        raise refused(f"column {feature.name!r}: {{rows}} are not whole numbers and the graph "
                       f"takes this feature as {_ONNX_NAMES[dtype]}", fractional)
    info = np.iinfo(dtype)
    # Both bounds are exact in float64: -2**63 and 2**63 (the first value past int64's max).
    bad = (values < float(info.min)) | (values >= float(info.max + 1))
    if bad.any():
        raise refused(_out_of_range(feature, dtype), bad)
    return values.astype(dtype).reshape(-1, 1)


def _refuse_missing(feature: Feature, missing: np.ndarray) -> None:
    if not feature.allow_missing and missing.any():
        raise refused(f"column {feature.name!r}: {{rows}} are missing and the manifest does not "
                       f"allow missing values for this feature {_ALLOW_MISSING_HINT}", missing)


def _refuse_missing_codes(feature: Feature, codes: np.ndarray) -> None:
    """:func:`_refuse_missing` for codes where ``-1`` marks a missing value."""
    if len(codes) and codes.min() < 0:
        _refuse_missing(feature, codes < 0)


def _categorical_strings(feature: Feature, series: pd.Series) -> np.ndarray:
    """The column as a 1-D object array of str, missing values as ``""``."""
    missing = series.isna().to_numpy()
    _refuse_missing(feature, missing)
    if isinstance(series.dtype, pd.CategoricalDtype):  # cheap: stringify categories only
        values = _category_strings(series.cat.categories)[series.cat.codes.to_numpy()]
    elif pd.api.types.is_string_dtype(series.dtype) and series.dtype != object:
        values = series.to_numpy(dtype=object, na_value="")
    else:  # object, categorical, integer...: stringify non-missing values
        values = series.astype(object).to_numpy(dtype=object, copy=True)
        values[missing] = ""
        values = _as_strings(values)
    return values


def _as_strings(values: np.ndarray) -> np.ndarray:
    """Object array with every non-str element replaced by its ``str`` (in place)."""
    not_str = ~np.fromiter((isinstance(v, str) for v in values), bool, len(values))
    if not_str.any():
        values[not_str] = values[not_str].astype(str)
    return values


def _category_strings(categories: pd.Index) -> np.ndarray:
    """Each category as the string fed to the graph, then ``""`` for code -1 (missing)."""
    return np.append(_as_strings(categories.to_numpy(dtype=object, copy=True)), "")


def _label_codes(labels: pd.Index, strings: np.ndarray,
                 aliases: Mapping[str, int]) -> np.ndarray:
    """Code of each string: its ``aliases`` entry, else its position in ``labels`` (-1: not a
    label), int64."""
    codes = labels.get_indexer(pd.Index(strings, dtype=object)).astype(np.int64)
    for i, value in enumerate(strings):  # once per distinct value, not per row
        code = aliases.get(value) if aliases and isinstance(value, str) else None
        if code is not None:
            codes[i] = code
    return codes


def _categorical_feed(feature: Feature, series: pd.Series) -> np.ndarray:
    return _categorical_strings(feature, series).reshape(-1, 1)


def code_feed(feature: Feature, series: pd.Series, labels: pd.Index, strict: bool,
               cache: dict[str, tuple[pd.Index, np.ndarray]],
               aliases: Mapping[str, int] = MappingProxyType({})) -> np.ndarray:
    """The column as int64 codes into ``labels`` (``-1``: not a label), shape ``[N, 1]``;
    a string in ``aliases`` takes its code there (``""``, a missing value, as the code of the
    graph's fill value, :mod:`modelgate.onnx.encoder_cones`).

    Codes are computed once per distinct value (a categorical's categories, remembered in
    ``cache`` while the same categories come back, or the factorized strings), so the
    cost per row is one ``take``.
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.array.codes
        _refuse_missing_codes(feature, codes)
        categories = series.dtype.categories
        hit = cache.get(feature.name)
        if hit is not None and hit[0] is categories:
            code_of = hit[1]
        else:
            code_of = _label_codes(labels, _category_strings(categories), aliases)
            cache[feature.name] = (categories, code_of)
    else:
        codes, distinct = pd.factorize(series)  # missing values get code -1
        if pd.api.types.infer_dtype(distinct, skipna=False) == "string":  # all str: as fed
            _refuse_missing_codes(feature, codes)
            strings = np.append(distinct.to_numpy(dtype=object), "")  # code -1 -> ""
        else:  # mixed types: 1 and 1.0 are one value to factorize, not to str()
            codes, strings = pd.factorize(_categorical_strings(feature, series))
        code_of = _label_codes(labels, strings, aliases)
    fed = code_of.take(codes)  # code -1 takes the last entry: the code of ""
    if strict and code_of.size and code_of.min() < 0 and (fed < 0).any():
        raise refused(
            f"column {feature.name!r}: {{rows}} hold values that are not among the model's "
            f"{len(labels)} known categories (its encoder rejects unknown values)", fed < 0)
    return fed.reshape(-1, 1)
