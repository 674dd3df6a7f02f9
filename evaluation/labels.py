"""Labels from a label column, checked before any metric or error is computed.

:func:`model_labels` is the one check of a label column against a model's manifest, used
by ``modelgate evaluate`` (every task) and by drift monitoring before a label reaches
ADWIN's error stream. For binary models a label column must hold the manifest's positive
value and at most one other value (the negative class; when the manifest declares
``label.negative``, exactly that value).
Anything else (a third class, ``"1"`` where ``1`` is positive, ``"yes"``)
is an error naming the column and the offending values with their counts, never a silent
"everything else is negative". Equality is exact and typed: ``"1"`` is not ``1``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

MAX_SHOWN_VALUES = 5
# modelgate.onnx.manifest.TASKS, restated: the evaluation core does not import the ONNX adapters
TASKS = ("binary_classification", "multiclass_classification", "regression")


class LabelError(ValueError):
    """The label column does not hold a binary label with the declared positive value."""


def _key(value: Any) -> tuple[str, Any]:
    # Typed identity: 1 and 1.0 are one label; "1" and True are not the number 1.
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, (int, float, np.integer, np.floating)):
        return ("number", float(value))
    return (type(value).__name__, value)


def binary_labels(values: Sequence[Any] | np.ndarray, *, column: str, positive: Any,
                  negative: Any = None) -> np.ndarray:
    """0/1 labels (int8) from ``values``: 1 where the value is ``positive``.

    Parameters
    ----------
    values : sequence or ndarray
        The label column, no missing values.
    column : str
        The column's name, used in error messages.
    positive : str, int or bool
        The positive class (the manifest's ``label.positive``).
    negative : str, int or bool, optional
        The declared negative class (``label.negative``): every other row must hold it.

    Returns
    -------
    ndarray of int8
        1 for the positive class, 0 for the one other value.

    Raises
    ------
    LabelError
        More than one value other than ``positive``, or no positive row and a value of
        another type (``"1"`` for ``1``); the message names the column and up to 5 offending
        values with their counts (most frequent first).

    Examples
    --------
    >>> binary_labels([1, 0, 1], column="y", positive=1).tolist()
    [1, 0, 1]
    >>> binary_labels(["<=50K", ">50K"], column="income", positive=">50K").tolist()
    [0, 1]
    >>> def why(values):
    ...     try:
    ...         binary_labels(values, column="y", positive=1)
    ...     except LabelError as exc:
    ...         return str(exc)
    >>> why(["1", "1"])
    "label column 'y' must hold the positive value 1 and one other value; found 1 other value: '1' (2 rows)"
    >>> why([1, 0, 2, 2]).split("; ")[1]
    'found 2 other values: 2 (2 rows), 0 (1 row)'
    >>> try:
    ...     binary_labels([1, 2, 2], column="y", positive=1, negative=0)
    ... except LabelError as exc:
    ...     print(str(exc).split("; ")[1])
    found other values: 2 (2 rows)

    """
    items, counts, inverse = _distinct(values)
    wanted = _key(positive)
    is_positive = np.fromiter((_key(v) == wanted for v in items), dtype=bool, count=len(items))
    others: Counter[tuple[str, Any]] = Counter()
    for v, pos, n in zip(items, is_positive, counts, strict=True):
        if not pos:
            others[_key(v)] += int(n)
    # One other value of another type than the positive one ("1" vs 1) is a typing mistake,
    # not a column of negatives only.
    mistyped = not is_positive.any() and any(k[0] != wanted[0] for k in others)
    if negative is not None:
        undeclared = Counter({k: n for k, n in others.items() if k != _key(negative)})
        if undeclared:
            shown = {_key(v): v for v in items}
            raise LabelError(
                f"label column {column!r} must hold the positive value {positive!r} and the "
                f"declared negative value {negative!r}; found other values: "
                + ", ".join(f"{shown[k]!r} ({n} row{'s' if n != 1 else ''})"
                            for k, n in undeclared.most_common(MAX_SHOWN_VALUES)))
        return _per_row(is_positive, inverse)
    if len(others) > 1 or mistyped:
        shown = {_key(v): v for v in items}
        listed = ", ".join(f"{shown[k]!r} ({n} row{'s' if n != 1 else ''})"
                           for k, n in others.most_common(MAX_SHOWN_VALUES))
        more = f" and {len(others) - MAX_SHOWN_VALUES} more" if len(others) > MAX_SHOWN_VALUES else ""
        raise LabelError(
            f"label column {column!r} must hold the positive value {positive!r} and one other "
            f"value; found {len(others)} other value{'s' if len(others) != 1 else ''}: "
            f"{listed}{more}")
    return _per_row(is_positive, inverse)


def _distinct(values: Sequence[Any] | np.ndarray) -> tuple[list[Any], np.ndarray, np.ndarray | None]:
    """``values``' distinct items in order of first appearance, each one's count and each row's
    position among them (None: every row is its own item).

    A numeric, boolean or fixed-width string array is reduced by :func:`pandas.factorize`
    (hashing, first-appearance order), so the typed comparison in Python runs once per
    distinct value rather than once per row; within one such dtype equal values are one
    label. Anything else (an object column may mix ``1`` and ``True``, which hash alike) is
    compared row by row.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind in "biufU" and values.ndim == 1:
        codes, distinct = pd.factorize(values, use_na_sentinel=False)
        return (np.asarray(distinct).tolist(), np.bincount(codes, minlength=len(distinct)),
                codes)
    items = list(values.tolist() if isinstance(values, np.ndarray) else values)
    return items, np.ones(len(items), dtype=np.int64), None


def _per_row(is_positive: np.ndarray, inverse: np.ndarray | None) -> np.ndarray:
    """0/1 labels per row from the distinct items' (int8)."""
    labels = is_positive.astype(np.int8)
    return labels if inverse is None else labels[inverse]


def class_indices(values: Sequence[Any] | np.ndarray, classes: Sequence[Any], *,
                  column: str) -> np.ndarray:
    """Position of each label among a multiclass model's ``classes`` (int64).

    Equality is typed exactly as in :func:`binary_labels`: ``1`` and ``1.0`` are one label,
    while ``True`` is not the class ``1`` and ``"1"`` is not ``1``.

    Parameters
    ----------
    values : sequence or ndarray
        The label column.
    classes : sequence
        The model's classes in probability-column order.
    column : str
        The column's name, used in error messages.

    Returns
    -------
    ndarray of int64
        The class index of each row.

    Raises
    ------
    LabelError
        Missing labels or labels that are not among the classes; the message names the
        column, the classes and up to 5 offending values with their counts (most frequent
        first).

    Examples
    --------
    >>> class_indices(["b", "a", "b"], ["a", "b", "c"], column="y").tolist()
    [1, 0, 1]
    >>> try:
    ...     class_indices([0, True, 2, True, None], [0, 1, 2], column="y")
    ... except LabelError as exc:
    ...     print(exc)
    label column 'y' must hold the model's classes [0, 1, 2]; found other values: True (2 rows), None (1 row)
    """
    items = list(values.tolist() if isinstance(values, np.ndarray) else values)
    position = {_key(c): i for i, c in enumerate(classes)}
    # every missing value is one key (NaN != NaN would make each its own)
    keys = [("missing", None) if v is None or (isinstance(v, float) and v != v) else _key(v)
            for v in items]
    out = np.fromiter((position.get(k, -1) for k in keys), dtype=np.int64, count=len(items))
    if (out < 0).any():
        shown = {k: v for k, v in zip(keys, items, strict=True)}
        others = Counter(k for k, i in zip(keys, out, strict=True) if i < 0)
        listed = ", ".join(f"{shown[k]!r} ({n} row{'s' if n != 1 else ''})"
                           for k, n in others.most_common(MAX_SHOWN_VALUES))
        more = f" and {len(others) - MAX_SHOWN_VALUES} more" if len(others) > MAX_SHOWN_VALUES else ""
        raise LabelError(f"label column {column!r} must hold the model's classes {list(classes)}; "
                         f"found other values: {listed}{more}")
    return out


def model_labels(values: Sequence[Any] | np.ndarray, manifest: Mapping[str, Any]) -> np.ndarray:
    """The label column as the model's metrics compare it, checked against its manifest.

    Parameters
    ----------
    values : sequence or ndarray
        The label column's values.
    manifest : mapping
        The model's manifest (``task``, ``label`` and, multiclass, ``output.classes``).

    Returns
    -------
    ndarray
        Binary: 0/1 (int8, :func:`binary_labels`); multiclass: the index of each label among
        ``output.classes`` (int64); regression: the values as finite float64.

    Raises
    ------
    LabelError
        A missing value (None, NaN, NaT), a binary column that is not the positive value and
        one other, a multiclass label that is not among the model's classes, a regression
        label that is not a finite number; the message names the column.
    ValueError
        A ``task`` other than the three in :data:`TASKS`.

    Examples
    --------
    >>> binary = {"label": {"column": "y", "positive": 1}}
    >>> model_labels([0, 1, 1], binary).tolist()
    [0, 1, 1]
    >>> try:
    ...     model_labels(["0", "1"], binary)
    ... except LabelError as exc:
    ...     print(str(exc).split("; ")[1])
    found 2 other values: '0' (1 row), '1' (1 row)
    >>> model_labels([2.5, 1], {"task": "regression", "label": {"column": "y"}}).tolist()
    [2.5, 1.0]
    """
    task, column = manifest.get("task", "binary_classification"), manifest["label"]["column"]
    if task not in TASKS:
        raise ValueError(f"manifest task must be one of {list(TASKS)}; got {task!r}")
    array = np.asarray(values) if isinstance(values, np.ndarray) else np.asarray(list(values), dtype=object)
    if array.dtype.kind == "f":
        missing = int(np.isnan(array).sum())
    elif array.dtype.kind in "mM":  # NaT, which tolist() would turn into an ordinary None value
        missing = int(np.isnat(array).sum())
    elif array.dtype.kind == "O":
        missing = sum(1 for v in array.tolist() if v is None or (isinstance(v, float) and v != v))
    else:
        missing = 0
    if missing:
        raise LabelError(f"label column {column!r} has {missing} missing value(s)")
    if task == "multiclass_classification":
        return class_indices(array.tolist(), tuple((manifest.get("output") or {}).get("classes") or ()),
                             column=column)
    if task == "regression":
        if array.dtype.kind == "O" and all(isinstance(v, (int, float, np.integer, np.floating))
                                           and not isinstance(v, (bool, np.bool_)) for v in array.tolist()):
            array = array.astype(np.float64)
        if array.dtype.kind not in "iuf":
            raise LabelError(f"label column {column!r} of a regression model must be numeric; got "
                             f"dtype {array.dtype}")
        y = array.astype(np.float64)
        if not np.isfinite(y).all():
            raise LabelError(f"label column {column!r} has {int((~np.isfinite(y)).sum())} infinite "
                             "value(s); regression labels must be finite")
        return y
    return binary_labels(array if array.dtype.kind in "biufU" else array.tolist(), column=column,
                         positive=manifest["label"]["positive"],
                         negative=manifest["label"].get("negative"))
