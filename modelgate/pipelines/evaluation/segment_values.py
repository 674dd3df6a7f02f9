"""Segment columns checked when a run is accepted, before anything is scored: every held-out
file has them, and none holds too many distinct values.

A segment column missing from a held-out file would fail the scoring of that file, after the
files before it were scored (and, being no refusal, again on every retry). The ``prepare`` step
refuses it with :func:`refuse_segment_columns`, naming the column, the file and the file's
columns of the closest names (:func:`missing_columns`): each file's schema is read from its
footer as the file is opened for the count below, so the dataset is listed once and no file is
opened twice.

A segment column may hold at most :data:`~modelgate.pipelines.evaluation.segments_step.MAX_SEGMENT_VALUES`
distinct values (every value is a slice reported, stored and drawn). The same pass counts them:
only the segment columns are read, one row group at a time, file after file in the dataset's
order (an ``s3://`` file by ranged reads of its footer and those column chunks,
:func:`~modelgate.pipelines.evaluation.row_sample.open_parquet`), and the count stops at the
first row group after which a column has shown more values than the limit. A column of few
values is read once, whole; an id-like column costs a row group or so. The files after that
stop are not opened: the run is refused either way.

The values are counted as the scoring step's segments count them
(:func:`~modelgate.pipelines.evaluation.segments_step.collect_batch`): a missing value (null, or
NaN) is one more value. The scoring step keeps its own checks (a file without the column fails
its scoring, naming the file; too many values are refused): the files may change between the
two steps.
"""

from __future__ import annotations

import difflib
import logging
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from modelgate.input_limits import shown
from modelgate.logsafe import one_line
from modelgate.pipelines.evaluation.segments_step import (
    MAX_SEGMENT_VALUES,
    SegmentColumnRefused,
    too_many_values,
)
from modelgate.pipelines.refusals import InputRefused

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from modelgate.store.objects import ObjectStore

log = logging.getLogger("modelgate.evaluate")


class _Missing:
    """The one value every null and NaN counts as."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()

#: How many of a file's columns a refusal lists when none has a name close to the one missing.
LISTED_COLUMNS = 10


class SegmentColumnMissing(InputRefused):
    """A segment column that a held-out file lacks: refused by the ``prepare`` step before
    any scoring (:func:`refuse_segment_columns`), final like the other refusals."""


def _closest(name: str, columns: Sequence[str]) -> str:
    """The columns of names close to ``name``, as a hint; the first few columns if none is."""
    close = [shown(c) for c in difflib.get_close_matches(name, columns, n=3, cutoff=0.6)]
    if close:
        return f"did you mean {close[0] if len(close) == 1 else ', '.join(close[:-1]) + ' or ' + close[-1]}?"
    listed = ": " + ", ".join(shown(c) for c in columns[:LISTED_COLUMNS]) if columns else ""
    more = f" and {len(columns) - LISTED_COLUMNS:,} more" if len(columns) > LISTED_COLUMNS else ""
    return f"none of its {len(columns):,} columns has a similar name{listed}{more}"


def missing_columns(columns: Sequence[str], names: Sequence[str], where: str) -> str | None:
    """Why a file with ``columns`` cannot serve segment columns ``names`` (None: it has them all).

    ``where`` names the file. Each missing column is named with the file's columns of the
    closest names (:func:`difflib.get_close_matches`).

    >>> missing_columns(["region", "x1"], ["regoin"], "part-0001.parquet")
    "segment column 'regoin' is not in held-out file part-0001.parquet (did you mean 'region'?)"
    >>> for part in missing_columns(["region", "x1"], ["region", "regoin", "zone"], "a.parquet").split("; "):
    ...     print(part)
    segment column 'regoin' is not in held-out file a.parquet (did you mean 'region'?)
    nor 'zone' (none of its 2 columns has a similar name: 'region', 'x1')
    >>> missing_columns(["region"], ["region"], "a.parquet") is None
    True
    """
    present = set(columns)
    missing = [n for n in names if n not in present]
    if not missing:
        return None
    first, *rest = missing
    text = f"segment column {shown(first)} is not in held-out file {where} ({_closest(first, columns)})"
    if rest:
        text += "; nor " + "; nor ".join(f"{shown(n)} ({_closest(n, columns)})" for n in rest)
    return text


@dataclass(frozen=True, slots=True)
class ValueCount:
    """What counting the segment columns found.

    ``column`` is the first column seen with more than ``limit`` distinct values (None: none
    has), ``seen`` how many distinct values it had shown when counting stopped (a lower bound
    of its count), ``row_groups`` how many row groups were read.
    """

    column: str | None
    seen: int
    row_groups: int


def unique_values(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The distinct values of an arrow column (a dictionary column's values, not its codes);
    null and NaN each appear once if present."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):  # a pandas categorical
        column = column.cast(column.type.value_type)
    return pc.unique(column)


def n_distinct(unique: pa.Array) -> int:
    """How many values :func:`unique_values` gave, null and NaN counted as one missing value.

    >>> import pyarrow as pa
    >>> n_distinct(unique_values(pa.array([1.5, None, float("nan"), 1.5, 2.0])))
    3
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    both = (unique.null_count > 0 and pa.types.is_floating(unique.type)
            and bool(pc.any(pc.is_nan(unique)).as_py()))
    return len(unique) - int(both)


def python_values(unique: pa.Array) -> set[object]:
    """The values of :func:`unique_values` as Python values, null and NaN as :data:`MISSING`.

    >>> import pyarrow as pa
    >>> sorted(map(str, python_values(unique_values(pa.array([1.5, None, float("nan"), 1.5])))))
    ['1.5', 'MISSING']
    """
    return {MISSING if v is None or (isinstance(v, float) and math.isnan(v)) else v
            for v in unique.to_pylist()}


def count_values(files: Iterable[pq.ParquetFile], names: Sequence[str], *,
                 limit: int = MAX_SEGMENT_VALUES) -> ValueCount:
    """Count the distinct values of columns ``names`` across ``files``, a row group at a time,
    stopping once one column has shown more than ``limit``.

    A file that lacks a column is counted for the columns it has. Files are opened as the
    iterable gives them, so those after the stop are never opened.

    >>> import pyarrow as pa, pyarrow.parquet as pq, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "d.parquet")
    >>> pq.write_table(pa.table({"id": list(range(40)), "g": ["a", "b"] * 20}), path, row_group_size=10)
    >>> count_values([pq.ParquetFile(path)], ["g", "id"], limit=15)
    ValueCount(column='id', seen=20, row_groups=2)
    >>> count_values([pq.ParquetFile(path)], ["g"], limit=15)
    ValueCount(column=None, seen=0, row_groups=4)
    """
    seen: dict[str, set[object]] = {name: set() for name in names}
    read = 0
    for pf in files:
        present = [n for n in names if n in pf.schema_arrow.names]
        if not present:
            continue
        for group in range(pf.metadata.num_row_groups):
            table = pf.read_row_group(group, columns=present)
            read += 1
            for name in present:
                unique = unique_values(table.column(name))
                in_group = n_distinct(unique)
                if in_group > limit:  # an id: refused without a Python object per value
                    return ValueCount(name, max(in_group, len(seen[name])), read)
                seen[name] |= python_values(unique)
                if len(seen[name]) > limit:
                    return ValueCount(name, len(seen[name]), read)
    return ValueCount(None, 0, read)


def refuse_segment_columns(store: ObjectStore | None, dataset_uri: str, names: Sequence[str], *,
                           open_file: Callable[[str], pq.ParquetFile] | None = None) -> ValueCount:
    """Refuse a segment column that a file of the dataset lacks, or that has more than
    :data:`MAX_SEGMENT_VALUES` distinct values in it: one pass over the files in the dataset's
    order, each file's schema checked when it is opened (its footer), then only its segment
    columns read, stopping at the first row group that shows too many values
    (:func:`count_values`).

    Parameters
    ----------
    store : ObjectStore or None
        The object store an ``s3://`` dataset is read from (None: local datasets only).
    dataset_uri : str
        The held-out data: a parquet file, a directory of them or an ``s3://`` prefix.
    names : sequence of str
        The segment columns (those of the policy's pairs included).
    open_file : callable, optional
        Opens a listed file (default: local, ``file://`` or ``s3://`` of the store's bucket).

    Returns
    -------
    ValueCount
        What was counted, when no column is refused.

    Raises
    ------
    SegmentColumnMissing
        Naming the column, the file that lacks it (relative to the dataset) and that file's
        columns of the closest names.
    SegmentColumnRefused
        Naming the column, the values seen and the limit.
    FileNotFoundError, ValueError
        If the dataset holds no parquet file or is not in the store's bucket.
    """
    from modelgate.pipelines.evaluation.partitions import list_partitions_in, partition_name
    from modelgate.pipelines.evaluation.row_sample import open_parquet

    opener = open_file or (lambda uri: open_parquet(store, uri))

    def checked() -> Iterator[pq.ParquetFile]:
        for uri in list_partitions_in(store, dataset_uri):
            pf = opener(uri)
            refused = missing_columns(pf.schema_arrow.names, names, partition_name(dataset_uri, uri))
            if refused is not None:
                raise SegmentColumnMissing(refused)
            yield pf

    counted = count_values(checked(), names)
    if counted.column is not None:
        raise SegmentColumnRefused(too_many_values(
            counted.column, f"more than {MAX_SEGMENT_VALUES:,} distinct values ({counted.seen:,} "
            f"seen when counting stopped)"))
    log.info("segment columns %s: in every file, at most %s distinct values each (%d row group(s) read)",
             one_line(", ".join(names)), f"{MAX_SEGMENT_VALUES:,}", counted.row_groups)
    return counted
