"""The partitions a drift run reads, and whether each can be used.

Live rows and labels arrive as daily partitions ``dt=YYYY-MM-DD`` under a directory or an
``s3://`` prefix. A partition that cannot be used raises :class:`BadPartition`, whose message
names the partition and the problem in one line (counts and types, never data values or
ids); the drift steps quarantine it and go on with the rest of the interval:

* live: a file that cannot be read, files whose schemas do not fit together, a feature
  column missing or of a type the drift statistics cannot read (the rules of
  :func:`modelgate.pipelines.drift.columns.check_columns`), an id column missing or neither
  integer nor string;
* labels: the same for the id and label columns, ids of another kind than the scored live
  rows' (strings where the live ids are integers), ids that repeat, and labels that are
  not the model's (:func:`modelgate.evaluation.labels.model_labels`, the check ``modelgate
  evaluate`` applies: ``"1"`` is not the positive class ``1``).

Errors of the stores themselves (an object store that does not answer) are not a partition's
fault and propagate: the task fails and Airflow retries it. So does a file that cannot be
read on an Airflow try that will be retried (it may be half-written); the last try
quarantines it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.evaluation import model_labels
from modelgate.onnx.manifest import Manifest
from modelgate.pipelines.dataset_files import s3_parquet, walk_parquet
from modelgate.pipelines.drift.columns import check_columns

if TYPE_CHECKING:
    import pandas as pd

    from modelgate.pipelines.context import Context

#: The label column of :func:`labels_frame`, already checked and encoded.
LABEL = "__label__"


class BadPartition(ValueError):
    """A live or labels partition that cannot be used; the message names it and the problem.

    Examples
    --------
    >>> str(BadPartition("labels", "dt=2026-11-28", "s3://b/labels", "3 rows share their id"))
    'labels partition dt=2026-11-28 under s3://b/labels: 3 rows share their id'
    """

    def __init__(self, source: str, partition: str, uri: str, problem: str, *,
                 transient: bool = False) -> None:
        super().__init__(f"{source} partition {partition} under {uri}: {problem}")
        self.source, self.partition, self.uri = source, partition, uri
        #: a file that could not be read may still be being written: worth another try
        self.transient = transient


def partition_dates(start: dt.datetime, end: dt.datetime) -> list[dt.date]:
    """Dates ``d`` of daily partitions ``dt=YYYY-MM-DD`` with start <= d < end.

    >>> partition_dates(dt.datetime(2000, 1, 1), dt.datetime(2000, 1, 3))
    [datetime.date(2000, 1, 1), datetime.date(2000, 1, 2)]
    """
    days, day = [], start.date()
    while dt.datetime.combine(day, dt.time(), start.tzinfo) < end:
        if dt.datetime.combine(day, dt.time(), start.tzinfo) >= start:
            days.append(day)
        day += dt.timedelta(days=1)
    return days


def partition_name(day: dt.date) -> str:
    """The name of a day's partition.

    >>> partition_name(dt.date(2026, 11, 28))
    'dt=2026-11-28'
    """
    return f"dt={day.isoformat()}"


def partition_files(ctx: Context, root_uri: str, day: dt.date, work: Path) -> list[Path]:
    """The parquet files of partition ``dt=<day>`` under a directory or ``s3://`` prefix, as
    every dataset is listed (:mod:`~modelgate.pipelines.dataset_files`: nested folders
    read, ``_``/``.`` names left out)."""

    part = partition_name(day)
    if root_uri.startswith("s3://"):
        _, _, prefix = root_uri[5:].partition("/")
        folder = f"{prefix.rstrip('/')}/{part}".lstrip("/")
        # the key below the partition names the file: two folders' part-0.parquet stay two
        return [ctx.store.download(k, work / part / k[len(folder) + 1:])
                for k, _ in s3_parquet(ctx.store, folder + "/")]
    directory = Path(root_uri[7:] if root_uri.startswith("file://") else root_uri) / part
    return [Path(p) for p in walk_parquet(directory)] if directory.is_dir() else []


def _id_kind(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    return str(t)


def _read(files: list[Path], bad: BadPartition, columns: list[str] | None) -> pa.Table:
    """The partition's files as one table; ``bad`` (with the problem filled in) otherwise."""
    def fail(problem: str, transient: bool = False) -> BadPartition:
        return BadPartition(bad.source, bad.partition, bad.uri, problem, transient=transient)

    tables = []
    for f in files:
        try:
            schema = pq.read_schema(f)
            missing = [c for c in columns or () if c not in schema.names]
            if missing:
                raise fail(f"column(s) {missing} missing from {f.name}; columns present: "
                           f"{schema.names}")
            tables.append(pq.read_table(f, columns=columns))
        except (pa.ArrowException, OSError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise fail(f"cannot read {f.name}: {type(exc).__name__}: {first}", transient=True) from exc
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except pa.ArrowException as exc:
        raise fail(f"its files have incompatible schemas: {str(exc).splitlines()[0]}") from exc


def live_table(files: list[Path], partition: str, uri: str, features: Mapping[str, str],
               id_column: str | None) -> pa.Table:
    """The live rows of one partition, checked: every feature column present with a type the
    drift statistics read, and the id column (when the manifest names one) integer or string.

    Raises
    ------
    BadPartition
        Naming the partition, the file or column and the problem.
    """

    bad = BadPartition("live", partition, uri, "")
    table = _read(files, bad, None)
    try:
        check_columns(table.schema, features, where=f"live partition {partition}")
    except ValueError as exc:
        raise BadPartition("live", partition, uri, str(exc).splitlines()[0]) from exc
    if id_column:
        if id_column not in table.column_names:
            raise BadPartition("live", partition, uri, f"id column {id_column!r} is missing")
        kind = _id_kind(table.schema.field(id_column).type)
        if kind not in ("integer", "string"):
            raise BadPartition("live", partition, uri, f"id column {id_column!r} holds {kind} "
                                                       "values; ids must be integers or strings")
    return table


def labels_frame(files: list[Path], partition: str, uri: str, manifest: Manifest,
                 id_type: pa.DataType) -> pd.DataFrame:
    """The labels of one partition as ``[<id column>, __label__]``, ``__label__`` encoded by
    :func:`~modelgate.evaluation.labels.model_labels` (binary 0/1, class index, or value).

    Parameters
    ----------
    files : list of Path
        The partition's parquet files.
    partition, uri : str
        The partition's name (``dt=...``) and the root it is under, for messages.
    manifest : Manifest
        The model's manifest (``id_column``, ``label``, ``task``).
    id_type : pyarrow.DataType
        The type of the scored live rows' id column, which the labels are joined to.

    Raises
    ------
    BadPartition
        A file that cannot be read, the id or label column missing, ids of another kind than
        the live ids, repeated ids (counted, not shown), or labels the model does not have.
    """

    id_column, label = manifest.id_column, manifest.label.column
    if id_column is None:
        raise ValueError(f"model {manifest.name!r}: labels are joined by the manifest's id_column, "
                         "which is not set")
    table = _read(files, BadPartition("labels", partition, uri, ""), [id_column, label])
    got, want = table.schema.field(id_column).type, id_type
    if _id_kind(got) != _id_kind(want):
        raise BadPartition("labels", partition, uri,
                           f"column {id_column!r} holds {_id_kind(got)} ids ({got}) where the "
                           f"scored live rows' ids are {_id_kind(want)} ({want}); they cannot be joined")
    frame = table.to_pandas()
    duplicated = int(frame[id_column].duplicated(keep=False).sum())
    if duplicated:
        # one line, a count and no id values: the reason lands in logs and the database
        raise BadPartition("labels", partition, uri,
                           f"{duplicated} rows share their {id_column!r} value with another "
                           "row (ids must be unique)")
    try:
        encoded = model_labels(frame[label].tolist(), manifest.to_dict())
    except ValueError as exc:  # LabelError, or a class the model does not have
        raise BadPartition("labels", partition, uri, str(exc).splitlines()[0]) from exc
    return frame[[id_column]].assign(**{LABEL: encoded})
