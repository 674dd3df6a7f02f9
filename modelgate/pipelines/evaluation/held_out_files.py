"""The held-out files' footers checked when a run is accepted, before anything is scored.

Scoring needs, in every held-out file, the model's label, features and sensitive features (the
champion's features too), a numeric feature as integers or floats, and rows in every partition
it scores. Each of these is written in a parquet file's footer (its schema and row counts), so
the ``prepare`` step reads the footers alone (:func:`refuse_unusable_files`; an ``s3://`` file
by ranged reads, a few files at a time) and refuses a dataset that cannot be scored with
:class:`HeldOutRefused`, final like the other refusals: a retry would read the same files.

Missing values are in the footers too, where the writer kept statistics (each row group's
null count): a missing label, or a missing value in a feature that does not allow them, is
refused here.  The other values (a label outside the model's classes, an infinite feature, a
float NaN, which parquet stores as a value, not a null) need the data read, so the scoring step
checks them (and all of these again: the files may change between the two steps). Segment
columns are counted elsewhere (:mod:`~modelgate.pipelines.evaluation.segment_values`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from modelgate.pipelines.refusals import InputRefused

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from modelgate.onnx.manifest import Manifest
    from modelgate.store.objects import ObjectStore

log = logging.getLogger("modelgate.evaluate")

#: Footers of ``s3://`` files read at once (each is one or two ranged GETs, mostly waiting).
FOOTER_THREADS = 8


class HeldOutRefused(InputRefused):
    """A held-out file that the model cannot be evaluated on: unreadable, a column it needs
    missing or of the wrong type, no rows, or a label or group label scoring cannot take."""


@dataclass(frozen=True, slots=True)
class NeededColumn:
    """A column every held-out file must have: its name, what it is to the model (for the
    message), whether it must hold numbers, whether scoring takes a missing value in it and
    whether it is the label."""

    name: str
    role: str
    numeric: bool = False
    missing_allowed: bool = True
    label: bool = False


def needed_columns(manifest: Manifest, champion: Manifest | None = None) -> tuple[NeededColumn, ...]:
    """The columns scoring reads from each held-out file: the label, the candidate's (and the
    champion's) features, the sensitive features; one entry per name, numeric if any use is,
    missing values allowed if every use allows them (the label never; a feature by its
    ``allow_missing``; a sensitive feature always: its missing values are a group).

    >>> from modelgate.onnx.manifest import Feature, LabelSpec, Manifest, OutputSpec
    >>> m = Manifest(name="m", version="1", sha256="0" * 64, opset=None,
    ...              features=(Feature("age", "numeric"), Feature("city", "categorical")),
    ...              label=LabelSpec("y"), output=OutputSpec("p"), threshold=0.5,
    ...              sensitive_features=("city",), task="binary_classification")
    >>> [(c.name, c.numeric, c.missing_allowed) for c in needed_columns(m)]
    [('y', False, False), ('age', True, False), ('city', False, False)]
    """
    found: dict[str, NeededColumn] = {}

    def need(name: str, role: str, numeric: bool = False, missing_allowed: bool = True,
             label: bool = False) -> None:
        before = found.get(name)
        if before is not None and (before.numeric or not numeric):
            role = before.role
        if before is not None:
            numeric, missing_allowed, label = (numeric or before.numeric,
                                               missing_allowed and before.missing_allowed,
                                               label or before.label)
        found[name] = NeededColumn(name, role, numeric, missing_allowed, label)

    need(manifest.label.column, f"the label of model {manifest.name!r}", missing_allowed=False,
         label=True)
    for model, whose in ((manifest, "model"), (champion, "production champion")):
        for f in model.features if model is not None else ():
            need(f.name, f"a {f.kind} feature of the {whose} {model.name!r}",  # type: ignore[union-attr]
                 f.kind == "numeric", f.allow_missing)
    for name in manifest.sensitive_features:
        need(name, f"a sensitive feature of model {manifest.name!r}")
    return tuple(found.values())


def column_problem(schema: pa.Schema, column: NeededColumn) -> str | None:
    """What is wrong with ``column`` in a file of ``schema``, or None.

    A numeric feature must be integers or floats: scoring refuses text, booleans, decimals,
    dates and categoricals (:func:`modelgate.onnx.feeds.numeric_feed`).

    >>> import pyarrow as pa
    >>> schema = pa.schema([("age", pa.string())])
    >>> column_problem(schema, NeededColumn("age", "a numeric feature", numeric=True))
    "column 'age' (a numeric feature) holds string; expected integers or floats"
    >>> column_problem(schema, NeededColumn("y", "the label"))
    "has no column 'y' (the label)"
    """
    import pyarrow as pa

    if column.name not in schema.names:
        return f"has no column {column.name!r} ({column.role})"
    kind = schema.field(column.name).type
    if column.numeric and not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        return f"column {column.name!r} ({column.role}) holds {kind}; expected integers or floats"
    return None


@dataclass(frozen=True, slots=True)
class Footer:
    """One held-out file's footer: its columns, rows and, for the columns asked about, the
    missing values its row groups' statistics count (None where a row group has none)."""

    uri: str
    schema: pa.Schema
    rows: int
    missing: dict[str, int | None]


def missing_values(metadata: pq.FileMetaData, names: Sequence[str]) -> dict[str, int | None]:
    """Per top-level column of ``names``: the nulls the row groups' statistics count, None
    when a row group kept no null count for it (then only the data can tell).

    >>> import io
    >>> import pyarrow as pa
    >>> import pyarrow.parquet as pq
    >>> buffer = io.BytesIO()
    >>> pq.write_table(pa.table({"x": [1.0, None, None, 4.0]}), buffer, row_group_size=2)
    >>> missing_values(pq.ParquetFile(buffer).metadata, ["x", "y"])
    {'x': 2, 'y': None}
    """
    columns = {metadata.schema.column(i).path for i in range(metadata.num_columns)}
    counts: dict[str, int | None] = {name: 0 if name in columns else None for name in names}
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            known = counts.get(chunk.path_in_schema)
            if known is None:  # not asked about, or unknown in an earlier row group
                continue
            stats = chunk.statistics
            counts[chunk.path_in_schema] = (None if stats is None or not stats.has_null_count
                                            else known + stats.null_count)
    return counts


def read_footers(uris: Sequence[str], open_file: Callable[[str], pq.ParquetFile],
                 *, threads: int = 1, missing_in: Sequence[str] = ()) -> Iterator[Footer]:
    """The footers of ``uris`` in order, ``threads`` read at a time, with the missing values of
    the columns ``missing_in``; a file that is not readable parquet is refused, named, when its
    turn comes."""
    import pyarrow as pa

    def footer(uri: str) -> Footer | HeldOutRefused:
        try:
            pf = open_file(uri)
            return Footer(uri, pf.schema_arrow, pf.metadata.num_rows,
                          missing_values(pf.metadata, missing_in))
        except (pa.ArrowException, OSError) as exc:
            return HeldOutRefused(f"cannot read parquet file {uri!r}: {exc}")

    with ThreadPoolExecutor(max(1, min(threads, len(uris)))) as pool:
        try:
            for one in pool.map(footer, uris):
                if isinstance(one, HeldOutRefused):
                    raise one
                yield one
        finally:
            pool.shutdown(cancel_futures=True)  # a file refused: read no further footer


def refuse_unusable_files(store: ObjectStore | None, dataset_uri: str,
                          columns: Sequence[NeededColumn], *,
                          open_file: Callable[[str], pq.ParquetFile] | None = None) -> int:
    """Refuse held-out data that scoring would refuse for what its footers say; its rows.

    Parameters
    ----------
    store : ObjectStore or None
        The object store an ``s3://`` dataset is read from (None: local datasets only).
    dataset_uri : str
        The held-out data: a parquet file, a directory of them or an ``s3://`` prefix.
    columns : sequence of NeededColumn
        What every file must hold (:func:`needed_columns`).
    open_file : callable, optional
        Opens a listed file (default: local, ``file://`` or ``s3://`` of the store's bucket).

    Returns
    -------
    int
        The rows of every file, from the footers.

    Raises
    ------
    HeldOutRefused
        Naming the dataset (no parquet file in it, or not in the store's bucket) or the file
        and, for a column, the column, what it is to the model and what was expected (its
        missing values, when the footer counts them and the model takes none); a partition
        scoring would get no rows from (a file, or a batch of small files, of none).
    """
    from modelgate.pipelines.evaluation.partitions import batch_by_size, list_sized, members
    from modelgate.pipelines.evaluation.row_sample import open_parquet

    try:
        listed = list_sized(store, dataset_uri)
    except (FileNotFoundError, ValueError) as exc:
        raise HeldOutRefused(str(exc)) from exc
    opener = open_file or (lambda uri: open_parquet(store, uri))
    remote = dataset_uri.startswith("s3://")
    rows: dict[str, int] = {}
    strict = [c.name for c in columns if not c.missing_allowed]
    for one in read_footers([uri for uri, _ in listed], opener,
                            threads=FOOTER_THREADS if remote else 1, missing_in=strict):
        for column in columns:
            problem = column_problem(one.schema, column)
            if problem is not None:
                raise HeldOutRefused(f"held-out file {one.uri!r} {problem}")
            missing = one.missing.get(column.name)
            if missing and column.label:  # as scoring says it (model_tasks.label_values)
                raise HeldOutRefused(f"held-out file {one.uri!r}: label column {column.name!r} "
                                     f"has {missing:,} missing value(s); held-out rows must all "
                                     "be labelled")
            if missing:
                raise HeldOutRefused(
                    f"held-out file {one.uri!r}: column {column.name!r} ({column.role}) has "
                    f"{missing:,} missing value(s); scoring takes none there (if the graph "
                    "handles missing values itself, set \"allow_missing\": true on this "
                    "feature in the manifest)")
        rows[one.uri] = one.rows
    for partition in batch_by_size(listed):  # as scoring will get them
        files = members(partition)
        if not sum(rows[uri] for uri in files):
            named = (f"file {files[0]!r} has" if len(files) == 1 else
                     f"files {files[0]!r} to {files[-1]!r} ({len(files):,}, scored together) have")
            raise HeldOutRefused(f"held-out {named} no rows; held-out data must hold rows to score")
    log.info("held-out data: %d file(s), %s rows, the model's columns in each", len(rows),
             f"{sum(rows.values()):,}")
    return sum(rows.values())
