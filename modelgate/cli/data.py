"""What ``--data`` names, read the same way by every command: a parquet file, a directory of
them (searched recursively) or an ``s3://bucket/prefix`` in the configured bucket.

The partitions are those :func:`modelgate.pipelines.evaluation.partitions.list_partitions_in` lists
(sorted, as the evaluation DAG sees them); ``s3://`` objects are downloaded to a temporary
directory one at a time and deleted once read.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def _store(uri: str) -> Any:
    """The configured object store for an ``s3://`` dataset (None for a local one)."""
    if not uri.startswith("s3://"):
        return None
    from modelgate.config import Settings
    from modelgate.store.objects import open_object_store

    return open_object_store(Settings.from_env())


@contextmanager
def data_files(uri: str) -> Iterator[Generator[Path, None, None]]:
    """The dataset's partitions as local files, in order (downloads removed at the end)."""
    from modelgate.pipelines.evaluation.partitions import local_files

    with tempfile.TemporaryDirectory(prefix="modelgate-data-") as tmp:
        files = local_files(_store(uri), uri, Path(tmp))
        try:
            yield files
        finally:
            files.close()  # deletes the partition it was on


def read_table(uri: str, columns: Sequence[str] | None = None) -> pa.Table:
    """The named columns of every partition, concatenated in partition order."""
    with data_files(uri) as files:
        tables = [pq.read_table(path, columns=list(columns) if columns else None) for path in files]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="default")


@dataclass(frozen=True, slots=True)
class Scored:
    rows: int
    seconds: float
    provider: str


def score_data(scorer: Any, uri: str, out: Path, **options: Any) -> Scored:
    """Score every partition into one parquet file ``out`` (rows in partition order).

    A partition's error names it. ``out`` is written whole or not at all.
    """
    from modelgate.onnx.scoring import ScoringError, score_parquet

    parts: list[Path] = []
    seconds, provider = 0.0, scorer.provider
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}.") as tmp, \
            data_files(uri) as files:
        for i, path in enumerate(files):
            try:
                run = score_parquet(scorer, path, Path(tmp) / f"part-{i:05d}.parquet", **options)
            except ScoringError as exc:
                raise ScoringError(f"partition {path.name!r} of {uri!r}: {exc}") from None
            parts.append(run.output_path)
            seconds += run.seconds
        if len(parts) == 1:
            os.replace(parts[0], out)
        else:
            _concatenate(parts, Path(tmp) / "all.parquet")
            os.replace(Path(tmp) / "all.parquet", out)
    rows = pq.ParquetFile(out).metadata.num_rows
    return Scored(rows, seconds, provider)


def _concatenate(parts: Sequence[Path], out: Path) -> None:
    """Stream the parts into one file, a row group at a time (memory does not grow)."""
    writer: pq.ParquetWriter | None = None
    try:
        for part in parts:
            pf = pq.ParquetFile(part)
            for i in range(pf.num_row_groups):
                table = pf.read_row_group(i)
                writer = writer or pq.ParquetWriter(out, table.schema)
                writer.write_table(table.cast(writer.schema))
    finally:
        if writer is not None:
            writer.close()

