"""Parquet adapter for data drift: read one column at a time, call the pure drift core.

Each feature is read on its own with ``pq.read_table(path, columns=[c])`` inside a thread pool
(two workers by default: parquet decoding, numpy sorts and searchsorted release the GIL), so
memory holds about one column per worker. Categorical string columns are read dictionary
encoded and counted with ``pyarrow.compute.value_counts``, so JS costs milliseconds; numeric
columns are sorted once and compared with the pre-sorted reference.

Type rules: a numeric feature needs an integer or floating column; a categorical feature needs
a string, dictionary or boolean column (store integer codes as strings). Anything else is an
error naming the column, the expected and the actual type.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Literal, TypeAlias, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.drift import (
    MISSING,
    CategoricalReference,
    DriftThresholds,
    FeatureDrift,
    NumericReference,
    build_categorical_reference_from_counts,
    build_numeric_reference,
    categorical_drift_from_counts,
    numeric_drift_sorted,
)

__all__ = ["FeatureKind", "build_references_from_parquet", "drift_from_parquet"]

FeatureKind: TypeAlias = Literal["numeric", "categorical"]
Reference: TypeAlias = NumericReference | CategoricalReference
T = TypeVar("T")


log = logging.getLogger("modelgate.drift")
PROGRESS_EVERY_S = 2.0


def _is_numeric(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t))


def _is_categorical(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_boolean(t))


_EXPECTED = {
    "numeric": ("numeric (integer or floating)", _is_numeric),
    "categorical": ("categorical (string, dictionary or boolean)", _is_categorical),
}


def _check_schema(path: str | os.PathLike[str], features: Mapping[str, str]) -> pa.Schema:
    schema = pq.read_schema(path)
    check_columns(schema, features, where=repr(os.fspath(path)))
    return schema


def check_columns(schema: pa.Schema, features: Mapping[str, str], *, where: str) -> None:
    """Raise ``ValueError`` naming the first feature column of ``features`` (name -> kind)
    that is missing from ``schema`` or has a type the drift statistics cannot read;
    ``where`` names the file or partition in the message."""
    for name, kind in features.items():
        if kind not in _EXPECTED:
            raise ValueError(
                f"kind of feature {name!r} must be 'numeric' or 'categorical', got {kind!r}"
            )
        if name not in schema.names:
            raise ValueError(
                f"column {name!r} is missing from {where}; columns present: {schema.names!r}"
            )
        expected, ok = _EXPECTED[kind]
        actual = schema.field(name).type
        if not ok(actual):
            raise ValueError(
                f"column {name!r} in {where} has the wrong type: expected "
                f"{expected}, got {str(actual)!r}"
            )


def _read(path: str | os.PathLike[str], name: str, schema: pa.Schema) -> pa.ChunkedArray:
    t = schema.field(name).type
    as_dict = [name] if (pa.types.is_string(t) or pa.types.is_large_string(t)) else None
    # ParquetFile, not pq.read_table: read_table goes through pyarrow.dataset, whose import
    # pulls in pandas (about 0.5 s of a one-shot ``modelgate drift`` run)
    return pq.ParquetFile(path, read_dictionary=as_dict).read(columns=[name]).column(name)


def _fixed_width(arr: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """Values of an integer or floating array as a read-only numpy view, and its validity.

    Read from the Arrow buffers because ``Array.to_numpy`` imports pandas (0.3-0.5 s, a third
    of a one-shot ``modelgate drift`` run). Validity is None when there is no null.
    """
    t = arr.type
    kind = "f" if pa.types.is_floating(t) else "i" if pa.types.is_signed_integer(t) else "u"
    start, stop = arr.offset, arr.offset + len(arr)
    validity, data = arr.buffers()[:2]
    if data is None:  # an empty array may have no data buffer
        return np.empty(0, dtype=f"{kind}{t.bit_width // 8}"), None
    values = np.frombuffer(data, dtype=f"{kind}{t.bit_width // 8}", count=stop)[start:]
    if not arr.null_count:
        return values, None
    bits = np.unpackbits(np.frombuffer(validity, np.uint8), count=stop, bitorder="little")
    return values, bits[start:].view(np.bool_)


def _sorted_finite(col: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """Finite values as float64 sorted ascending, and the count of null/NaN/inf values.

    Integer and floating columns only (checked by ``_check_schema``). Integers above 2**53 in
    magnitude round to the nearest float64.
    """
    pieces, n_missing = [], 0
    for chunk in col.chunks:
        values, keep = _fixed_width(chunk)
        if values.dtype.kind == "f":
            finite = np.isfinite(values)
            keep = finite if keep is None else keep & finite
        if keep is not None:
            n_keep = int(np.count_nonzero(keep))
            n_missing += values.size - n_keep
            values = values[keep] if n_keep < values.size else values
        pieces.append(values)
    joined = pieces[0] if len(pieces) == 1 else np.concatenate(pieces or [np.empty(0)])
    # one writable float64 copy: filtering or joining made one already, views of Arrow's
    # buffers are read-only
    kept = joined.astype(np.float64, copy=not joined.flags.writeable)
    kept.sort()
    return kept, n_missing


def _add_count(out: dict[str, int], label: object, k: int) -> None:
    if k:
        key = MISSING if label is None else str(label)
        out[key] = out.get(key, 0) + k


def _counts(col: pa.ChunkedArray) -> dict[str, int]:
    """Count per label (as a string), nulls under MISSING; labels of count 0 left out.

    Dictionary and boolean chunks are counted with numpy, without importing pyarrow.compute
    (0.1 s) or pandas; string columns arrive dictionary encoded from ``_read``.
    """
    out: dict[str, int] = {}
    for chunk in col.chunks:
        if isinstance(chunk, pa.DictionaryArray):
            idx, valid = _fixed_width(chunk.indices)
            idx = idx if valid is None else idx[valid]
            counts = np.bincount(idx.astype(np.intp), minlength=len(chunk.dictionary))
            for label, k in zip(chunk.dictionary.to_pylist(), counts.tolist(), strict=True):
                _add_count(out, label, k)
        elif pa.types.is_boolean(chunk.type):
            true = chunk.true_count
            _add_count(out, True, true)
            _add_count(out, False, len(chunk) - chunk.null_count - true)
        else:
            # imported here: only boolean columns need it, and it costs more than this module
            import pyarrow.compute as pc

            for row in pc.value_counts(chunk.drop_null()).to_pylist():
                _add_count(out, row["values"], int(row["counts"]))
        _add_count(out, None, chunk.null_count)
    return out


def _map(fn: Callable[[str], T], names: list[str], max_workers: int) -> list[T]:
    """``[fn(name) for name in names]`` on a thread pool, logging progress (columns/s, ETA)."""
    if not isinstance(max_workers, int) or max_workers < 1:
        raise ValueError(f"max_workers must be an integer >= 1, got {max_workers!r}")
    start = last = time.perf_counter()
    results: list[T] = []
    with ThreadPoolExecutor(max_workers=max_workers) as pool:
        for done, result in enumerate(pool.map(fn, names), start=1):
            results.append(result)
            now = time.perf_counter()
            if now - last >= PROGRESS_EVERY_S and done < len(names):
                rate = done / (now - start)
                log.info("%d/%d columns (%.1f columns/s, ETA %.0f s)", done, len(names), rate,
                         (len(names) - done) / rate, extra={"progress": (done, len(names), "columns")})
                last = now
    return results


def build_references_from_parquet(
    path: str | os.PathLike[str],
    features: Mapping[str, FeatureKind],
    *,
    bins: int = 10,
    max_values: int | None = None,
    seed: int = 0,
    max_workers: int = 2,
) -> dict[str, Reference]:
    """Build reference sketches for ``features`` from a parquet file, one column at a time.

    Parameters
    ----------
    path : str or PathLike
        Reference parquet file.
    features : mapping of str to {"numeric", "categorical"}
        Feature names and kinds.
    bins : int, default 10
        Quantile bins for numeric JS.
    max_values : int, optional
        Thin each numeric reference to this many order statistics (see
        :mod:`modelgate.drift.reference` for the W1 error bound).
    seed : int, default 0
        Seed of the baseline half splits.
    max_workers : int, default 2
        Columns processed at once.

    Returns
    -------
    dict of str to NumericReference or CategoricalReference
        In the order of ``features``.

    Raises
    ------
    ValueError
        Missing column, wrong column type, or a column without any usable value.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ref.parquet"
    >>> pq.write_table(pa.table({"x": [1.0, 2.0, 3.0], "c": ["a", "b", None]}), p)
    >>> refs = build_references_from_parquet(p, {"x": "numeric", "c": "categorical"})
    >>> refs["x"].values.tolist(), refs["c"].categories
    ([1.0, 2.0, 3.0], ('a', 'b', '__missing__'))
    """
    schema = _check_schema(path, features)

    def one(name: str) -> Reference:
        col = _read(path, name, schema)
        if len(col) == 0:
            raise ValueError(f"column {name!r} in {os.fspath(path)!r} has no rows")
        if features[name] == "categorical":
            return build_categorical_reference_from_counts(_counts(col), name=name, seed=seed)
        values, n_missing = _sorted_finite(col)
        if values.size == 0:
            raise ValueError(f"column {name!r} in {os.fspath(path)!r} has no finite value")
        ref = build_numeric_reference(
            values, name=name, bins=bins, max_values=max_values, seed=seed, assume_sorted=True,
            copy=False,  # values is this call's own sorted copy
        )
        return replace(ref, n_missing=n_missing)

    names = list(features)
    return dict(zip(names, _map(one, names, max_workers), strict=True))


def drift_from_parquet(
    path: str | os.PathLike[str],
    references: Mapping[str, Reference],
    *,
    thresholds: DriftThresholds | None = None,
    max_workers: int = 2,
) -> list[FeatureDrift]:
    """Drift of each referenced feature in a current parquet file, one column at a time.

    Parameters
    ----------
    path : str or PathLike
        Current-data parquet file (an empty file gives ``"no_data"`` verdicts).
    references : mapping of str to NumericReference or CategoricalReference
        Sketches keyed by feature name.
    thresholds : DriftThresholds, optional
    max_workers : int, default 2
        Columns processed at once.

    Returns
    -------
    list of FeatureDrift
        In the order of ``references``; pass to :func:`modelgate.drift.data_drift.summarise`.

    Raises
    ------
    ValueError
        Missing column or a column whose type no longer matches the reference kind.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "cur.parquet"
    >>> pq.write_table(pa.table({"x": [1.0, 2.0, 3.0]}), p)
    >>> refs = build_references_from_parquet(p, {"x": "numeric"})
    >>> [(r.feature, r.wasserstein) for r in drift_from_parquet(p, refs)]
    [('x', 0.0)]
    """
    kinds: dict[str, str] = {}
    for name, ref in references.items():
        if ref.name != name:
            raise ValueError(f"references[{name!r}] is the sketch of {ref.name!r}")
        kinds[name] = "numeric" if isinstance(ref, NumericReference) else "categorical"
    schema = _check_schema(path, kinds)

    def one(name: str) -> FeatureDrift:
        ref = references[name]
        col = _read(path, name, schema)
        if isinstance(ref, CategoricalReference):
            return categorical_drift_from_counts(ref, _counts(col), thresholds=thresholds)
        values, n_missing = _sorted_finite(col)
        return numeric_drift_sorted(ref, values, n_missing=n_missing, thresholds=thresholds)

    return _map(one, list(references), max_workers)
