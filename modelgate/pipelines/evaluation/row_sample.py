"""Rows of a dataset read by position: only the row groups, and columns, that hold them.

The explain step draws its seeded sample of row positions over the whole dataset
(:func:`~modelgate.pipelines.evaluation.partitions.sample_positions`: it depends only on the
rows in file order and the seed, so a mapped run and a one-process run, whatever the files'
grouping into partitions, explain the same rows). Which row group holds a position is read from
the parquet footers; an ``s3://`` file is read through the object store with ranged reads
(:class:`~modelgate.store.object_file.ObjectFile`), so a sample of a large file fetches its
footer and the column chunks of the row groups it needs, not the file.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.pipelines.evaluation.partitions import members
from modelgate.store.object_file import ObjectFile
from modelgate.store.objects import ObjectStore


def groups_holding(group_rows: Sequence[int], offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The row groups holding the sorted file ``offsets``, and where each offset falls in the
    rows of those groups read together, in order.

    >>> used, at = groups_holding([10, 10, 10], np.array([3, 25, 27]))
    >>> used.tolist(), at.tolist()
    ([0, 2], [3, 15, 17])
    """
    rows = np.asarray(group_rows, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(rows)])
    offsets = np.asarray(offsets, dtype=np.int64)
    if len(offsets) and (offsets[0] < 0 or offsets[-1] >= starts[-1]):
        raise ValueError(f"row offsets must lie in [0, {int(starts[-1])}), got "
                         f"{int(offsets[0])}..{int(offsets[-1])}")
    group = np.searchsorted(starts, offsets, side="right") - 1
    used = np.unique(group)
    read_before = np.concatenate([[0], np.cumsum(rows[used])])[:-1]
    return used, offsets - starts[group] + read_before[np.searchsorted(used, group)]


# columns read at a time: a many-class model's scores file holds a probability column per
# class, and a row group of 1000 of them on 100k rows is 800 MB
_COLUMNS_A_READ = 64


# rows read at a time (whole row groups, at least one): a few hundred sampled rows of a 5M-row
# file touch every row group, and reading them all at once held the file's columns whole
# (~600 MB of a 10M-row evaluation's peak)
_ROWS_A_READ = 1 << 20


def read_positions(pf: pq.ParquetFile, columns: Sequence[str], offsets: np.ndarray) -> pa.Table:
    """``columns`` of the rows at sorted ``offsets`` of a parquet file, reading only the row
    groups that hold them, about a million rows and 64 columns at a time."""
    meta = pf.metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    used, at = groups_holding(sizes, offsets)
    if not len(used):
        schema = pf.schema_arrow
        return pa.Table.from_pylist([], schema=pa.schema([schema.field(c) for c in columns]))
    before = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64)[used])])
    # each read: the groups up to the one that reaches _ROWS_A_READ rows
    cuts = [0]
    while cuts[-1] < len(used):
        reach = int(np.searchsorted(before, before[cuts[-1]] + _ROWS_A_READ, side="right")) - 1
        cuts.append(min(max(reach, cuts[-1] + 1), len(used)))
    pieces = []
    for first, last in zip(cuts[:-1], cuts[1:], strict=True):
        inside = at[(at >= before[first]) & (at < before[last])] - before[first]
        pieces.append(_read_groups(pf, used[first:last], list(columns), inside))
    return pa.concat_tables(pieces).combine_chunks()


def _read_groups(pf: pq.ParquetFile, groups: np.ndarray, names: list[str],
                 at: np.ndarray) -> pa.Table:
    """Rows ``at`` of ``groups`` read together, 64 columns at a time."""
    out = None
    for start in range(0, max(len(names), 1), _COLUMNS_A_READ):  # no columns: one read
        part = pf.read_row_groups(groups.tolist(), columns=names[start:start + _COLUMNS_A_READ]
                                  ).take(pa.array(at))
        out = part if out is None else pa.Table.from_arrays(
            [*out.columns, *part.columns], names=[*out.column_names, *part.column_names])
    assert out is not None
    return out


def open_parquet(store: ObjectStore | None, uri: str) -> pq.ParquetFile:
    """A parquet file given as a local path, ``file://`` URI or ``s3://`` URI of the store's
    bucket; an ``s3://`` one is read by ranges, only what is asked for.

    Raises
    ------
    ValueError
        If an ``s3://`` file is not in the configured bucket.
    """
    if not uri.startswith("s3://"):
        return pq.ParquetFile(uri[7:] if uri.startswith("file://") else uri)
    bucket, _, key = uri[5:].partition("/")
    if store is None or bucket != getattr(store, "bucket", None):
        raise ValueError(f"dataset file {uri!r} is not in the configured bucket")
    # pre_buffer: the column chunks of the row groups read are fetched in coalesced ranges
    return pq.ParquetFile(ObjectFile(store, key), pre_buffer=True)


def read_partition_rows(store: ObjectStore | None, partition_uri: str, columns: Sequence[str],
                        offsets: np.ndarray, *, optional: Sequence[str] = ()) -> pa.Table:
    """``columns`` of the rows at sorted ``offsets`` of a partition (one file, or a batch's
    members in order), and each ``optional`` column a file has (null where it has not, absent
    when none has). Files after the last offset are not opened."""
    parts: list[pa.Table] = []
    start = 0
    for member in members(partition_uri):
        if not len(offsets) or start > offsets[-1]:
            break
        pf = open_parquet(store, member)
        n = pf.metadata.num_rows
        inside = offsets[(offsets >= start) & (offsets < start + n)] - start
        if len(inside):
            names = set(pf.schema_arrow.names)
            parts.append(read_positions(pf, [*columns, *(c for c in optional if c in names)], inside))
        start += n
    if start <= (offsets[-1] if len(offsets) else -1):
        raise ValueError(f"partition {partition_uri!r} holds {start} rows, fewer than the sample's "
                         f"offset {int(offsets[-1])}")
    if not parts:
        return pa.Table.from_pylist([], schema=pa.schema([(c, pa.null()) for c in columns]))
    return pa.concat_tables(parts, promote_options="default")


def open_object(store: ObjectStore, key: str) -> pq.ParquetFile:
    """A parquet object of the store (a partition's scores), read by ranges."""
    return pq.ParquetFile(ObjectFile(store, key), pre_buffer=True)


#: A scored partition as the merged statistics list it: (name, data URI, rows, scores key).
Partition = tuple[str, str, int, str]


def sample_scores(store: ObjectStore, parts: Sequence[Partition], offsets: Sequence[np.ndarray],
                  columns: Sequence[str]) -> pa.Table:
    """``columns`` of the scores files at each partition's sampled ``offsets``, in sample order
    (partition by partition)."""
    tables = [read_positions(open_object(store, scores_key), columns, where)
              for (_, _, _, scores_key), where in zip(parts, offsets, strict=True) if len(where)]
    return pa.concat_tables(tables)


def sample_features(store: ObjectStore | None, parts: Sequence[Partition], offsets: Sequence[np.ndarray],
                    needed: np.ndarray, features: Sequence[str], *, id_column: str | None = None
                    ) -> tuple[pa.Table, dict[int, str]]:
    """``features`` of the sorted sample indices ``needed`` (positions in the sample of
    :func:`sample_scores`' order), read from the data files, and how a report names each
    row: by ``id_column`` where the file has it (``row_id 8812``), else by its position
    (``row 17``; ``row <partition>:17`` when there are several partitions)."""
    bounds = np.concatenate([[0], np.cumsum([len(w) for w in offsets])])
    tables, names = [], {}
    for i, ((name, uri, _, _), where) in enumerate(zip(parts, offsets, strict=True)):
        mine = needed[(needed >= bounds[i]) & (needed < bounds[i + 1])]
        if not len(mine):
            continue
        at = where[mine - bounds[i]]
        table = read_partition_rows(store, uri, features, at, optional=[id_column] if id_column else [])
        ids = (table.column(id_column).to_pylist() if id_column and id_column in table.column_names
               else [None] * len(at))
        for k, o, v in zip(mine.tolist(), at.tolist(), ids, strict=True):
            names[k] = (f"{id_column} {v}" if v is not None
                        else f"row {o}" if len(parts) == 1 else f"row {name}:{o}")
        tables.append(table.select(list(features)))
    return pa.concat_tables(tables), names
