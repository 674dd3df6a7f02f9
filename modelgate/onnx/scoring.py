"""Scoring with ONNX Runtime: streamed parquet scoring, and the public surface of the scoring modules.

:func:`score_parquet` reads a parquet file batch by batch, feeds each batch to a
:class:`~modelgate.onnx.scorer.ModelScorer` (features checked by :mod:`modelgate.onnx.feeds`,
sessions opened by :func:`~modelgate.onnx.scorer.open_session` with
:class:`~modelgate.onnx.settings.SessionSettings`) and writes the scores to another parquet
file. Callers import all of these from here.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.onnx import devices
from modelgate.onnx.feeds import RowsRefused
from modelgate.onnx.scorer import ModelScorer, open_session
from modelgate.onnx.settings import ScoringError, SessionSettings, settings_from_os_environ

__all__ = [
    "ModelScorer",
    "ScoringError",
    "ScoringRun",
    "SessionSettings",
    "open_session",
    "score_parquet",
    "settings_from_os_environ",
]

logger = logging.getLogger("modelgate.onnx.scoring")
CPU = devices.CPU
CUDA = devices.CUDA
#: Rows per parquet batch when none is given: larger on CUDA, where a ``run`` call's fixed
#: cost (launches, copies) is spread over more rows.
DEFAULT_BATCH_ROWS = {CPU: 65536, CUDA: 262144}
#: Output values (rows x output columns) a default batch holds at most. A batch's output is held
#: two or three times over (the engine's float32 array, the float64 columns, the writer's
#: buffers), so a wide output (a 1000-class model) takes fewer rows a batch: 4,194 rows of
#: 1,000 classes is about 32 MB a copy, where 65,536 rows would be 524 MB.
BATCH_OUTPUT_VALUES = 1 << 22
_MIN_DEFAULT_BATCH_ROWS = 1024
PROGRESS_EVERY_S = 5.0
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class ScoringRun:
    """Summary of one :func:`score_parquet` call."""

    rows: int
    seconds: float
    rows_per_s: float
    provider: str
    input_fingerprint: str
    output_path: Path
    #: Why ``provider`` was chosen (see :func:`modelgate.onnx.devices.choose_device`).
    provider_reason: str = ""
    #: Whether CUDA could use TF32 (False on the CPU).
    tf32_allowed: bool = False


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, streamed in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _read_schema(path: Path) -> pa.Schema:
    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise ScoringError(f"cannot read parquet file {str(path)!r}: {exc}") from exc


def _open_parquet(path: Path, categorical: Sequence[str] = ()) -> pq.ParquetFile:
    # Categorical features are read dictionary-encoded: far cheaper to stringify. Only
    # columns present are named (pyarrow answers a missing one with a bare KeyError);
    # missing columns are reported by _needed_columns with the column's name.
    schema = _read_schema(path)
    present = [c for c in categorical if c in schema.names]
    for name in present:  # pyarrow answers a nested column with a bare KeyError
        if pa.types.is_nested(schema.field(name).type):
            raise ScoringError(
                f"categorical feature column {name!r} in {str(path)!r}: expected a flat column "
                f"(string, dictionary, integer or boolean), got {schema.field(name).type}")
    try:
        return pq.ParquetFile(path, read_dictionary=present or None)
    except (pa.ArrowException, OSError) as exc:
        raise ScoringError(f"cannot read parquet file {str(path)!r}: {exc}") from exc


def _needed_columns(scorer: ModelScorer, schema: pa.Schema, path: Path,
                    id_column: str | None, keep_columns: Sequence[str]) -> list[str]:
    wanted = [*scorer.feature_names, *([id_column] if id_column else []), *keep_columns]
    chosen = {*([id_column] if id_column else []), *keep_columns}
    clash = {c for c in chosen if c in ("score", "prediction") or c.startswith("proba_")}
    if clash:
        raise ScoringError(f"id_column/keep_columns: {sorted(clash)} clash with output columns")
    for name in wanted:
        if name not in schema.names:
            raise ScoringError(f"column {name!r} is missing from parquet file {str(path)!r}")
    return list(dict.fromkeys(wanted))


def _batches(pf: pq.ParquetFile, path: Path, batch_rows: int,
             columns: list[str]) -> Iterator[pa.RecordBatch]:
    try:
        yield from pf.iter_batches(batch_size=batch_rows, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise ScoringError(f"cannot read parquet file {str(path)!r}: {exc}") from exc


Prepared = tuple[pa.RecordBatch, dict[str, np.ndarray], pd.Index]


def _row_index(batch: pa.RecordBatch, offset: int, id_column: str | None) -> pd.Index:
    """How a batch's rows are named in errors: their ids, or their 0-based file positions."""
    if id_column is not None:
        return pd.Index(batch.column(id_column).to_pandas(), name=id_column)
    return pd.RangeIndex(offset, offset + batch.num_rows)


def _with_offsets(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.RecordBatch]]:
    offset = 0
    for batch in batches:
        yield offset, batch
        offset += batch.num_rows


#: Batches read and checked ahead of the one being scored: on CUDA the device outruns one
#: host thread decoding parquet and building feeds, so several batches are built at once.
READ_AHEAD = {CPU: 1, CUDA: 3}


class _ReadAhead:
    """Batches decoded in order by one thread, their feeds built by ``depth`` threads.

    Parquet decoding, pandas conversion and ONNX Runtime mostly release the GIL, so these
    stages overlap the ``run`` of the current batch.
    """

    def __init__(self, scorer: ModelScorer, batches: Iterator[pa.RecordBatch], depth: int,
                 names: str | None = None) -> None:
        self._scorer, self._batches, self._names = scorer, _with_offsets(batches), names
        self._read = ThreadPoolExecutor(max_workers=1, thread_name_prefix="modelgate-read")
        self._build = ThreadPoolExecutor(max_workers=depth, thread_name_prefix="modelgate-feed")
        self._queue: deque[Future[Prepared | None]] = deque()
        for _ in range(depth):
            self._submit()

    def _submit(self) -> None:
        # One reader thread: batches come out of the iterator in file order.
        read = self._read.submit(next, self._batches, None)
        self._queue.append(self._build.submit(self._feeds, read))

    def _feeds(self, read: Future[tuple[int, pa.RecordBatch] | None]) -> Prepared | None:
        item = read.result()
        if item is None:
            return None
        offset, batch = item
        frame = batch.select(list(self._scorer.feature_names)).to_pandas()
        frame.index = _row_index(batch, offset, self._names)
        return batch, self._scorer.feeds(frame), frame.index

    def __next__(self) -> Prepared | None:
        item = self._queue.popleft().result()
        if item is not None:
            self._submit()
        return item

    def close(self) -> None:
        for pool in (self._build, self._read):
            pool.shutdown(wait=True, cancel_futures=True)


#: Scored tables queued for the writer thread at most: it falls behind while the caller's
#: ``on_batch`` summarises (a million rows at once), and the engine keeps running meanwhile.
WRITE_AHEAD = 8


class _Sink:
    """Scored tables written and handed to ``on_batch`` by one thread, in row order.

    The engine's runs go on while a table is written and summarised; at most
    :data:`WRITE_AHEAD` tables wait. After a failure nothing more is written or handed on,
    and the error is raised by the next :meth:`put` or by :meth:`finish`.
    """

    def __init__(self, tmp: Path, keep_columns: Sequence[str],
                 on_batch: Callable[[pa.Table], None] | None) -> None:
        self._tmp, self._keep, self._on_batch = tmp, list(keep_columns), on_batch
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="modelgate-write")
        self._queue: deque[Future[None]] = deque()
        self._writer: pq.ParquetWriter | None = None
        self._failed = False

    def put(self, table: pa.Table) -> None:
        while len(self._queue) >= WRITE_AHEAD:
            self._queue.popleft().result()
        self._queue.append(self._pool.submit(self._write, table))

    def _write(self, table: pa.Table) -> None:
        if self._failed:
            return
        try:
            self._writer = self._writer or pq.ParquetWriter(self._tmp, table.schema,
                                                            use_dictionary=self._keep)
            self._writer.write_table(table)
            if self._on_batch is not None:
                self._on_batch(table)
        except BaseException:
            self._failed = True
            raise

    def finish(self) -> bool:
        """Wait for every table; True when one was written (the file can be closed)."""
        while self._queue:
            self._queue.popleft().result()
        return self._writer is not None

    def close(self) -> None:
        """Stop the thread (queued tables dropped after a failure) and close the file."""
        self._failed = self._failed or bool(self._queue)
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._writer is not None:
            self._writer.close()


def _score_batch(scorer: ModelScorer, prepared: Prepared, schema: pa.Schema,
                 id_column: str | None, keep_columns: Sequence[str]) -> pa.Table:
    batch, feeds, index = prepared
    arrays: dict[str, pa.Array] = {}
    if id_column:
        arrays[id_column] = _as_in_file(batch.column(id_column), schema.field(id_column))
    try:
        arrays.update(_output_columns(scorer, feeds, batch.num_rows))
    except RowsRefused as exc:
        raise exc.at(index) from None
    for name in keep_columns:
        arrays[name] = _as_in_file(batch.column(name), schema.field(name))
    return pa.table(arrays)


def _output_columns(scorer: ModelScorer, feeds: dict[str, np.ndarray], n: int
                    ) -> dict[str, pa.Array]:
    """What one batch's predictions are written as, per task (see :func:`score_parquet`)."""
    task = scorer.manifest.task
    if task == "binary_classification":
        scores = scorer._predict_feeds(feeds, n)
        assert scorer.manifest.threshold is not None  # required for binary models
        prediction = (scores >= scorer.manifest.threshold).astype(np.int8)
        return {"score": pa.array(scores, type=pa.float64()),
                "prediction": pa.array(prediction, type=pa.int8())}
    matrix = scorer._output_matrix(feeds, n)
    if task == "regression":
        return {"prediction": pa.array(matrix[:, 0], type=pa.float64())}
    predicted = matrix.argmax(axis=1)
    columns = {"score": pa.array(matrix[np.arange(n), predicted], type=pa.float64()),
               "prediction": pa.array(predicted.astype(np.int32), type=pa.int32())}
    columns.update({f"proba_{k}": pa.array(matrix[:, k], type=pa.float64())
                    for k in range(matrix.shape[1])})
    return columns


def default_batch_rows(scorer: ModelScorer) -> int:
    """Rows a batch takes when the caller sets none: the provider's default, fewer for wide
    outputs (at most :data:`BATCH_OUTPUT_VALUES` output values, at least 1,024 rows).

    The width is the graph's declared last output dimension; an undeclared one counts as 1.
    """
    rows = DEFAULT_BATCH_ROWS.get(scorer.provider, DEFAULT_BATCH_ROWS[CPU])
    width = _declared_output_width(scorer)
    return max(_MIN_DEFAULT_BATCH_ROWS, min(rows, BATCH_OUTPUT_VALUES // width))


def _declared_output_width(scorer: ModelScorer) -> int:
    for output in scorer.session.get_outputs():
        if output.name == scorer.manifest.output.name:
            shape = output.shape or []
            last = shape[-1] if len(shape) >= 2 else 1
            return last if isinstance(last, int) and last > 0 else 1
    return 1


def _as_in_file(column: pa.Array, field: pa.Field) -> pa.Array:
    """Undo the dictionary encoding used for reading categorical features."""
    return column if column.type == field.type else column.cast(field.type)


def score_parquet(scorer: ModelScorer, parquet_path: str | os.PathLike[str],
                  out_path: str | os.PathLike[str], *, batch_rows: int | None = None,
                  id_column: str | None = None, keep_columns: Sequence[str] = (),
                  progress: logging.Logger = logger,
                  on_batch: Callable[[pa.Table], None] | None = None) -> ScoringRun:
    """Score a parquet file batch by batch and write the scores to another parquet file.

    Only the needed columns are read, ``batch_rows`` at a time; the output holds
    ``id_column`` (if given), the predictions and ``keep_columns``, in input row order.
    The predictions, by task: binary classification ``score`` (float64, the positive
    class's probability) and ``prediction`` (int8, ``score >= manifest.threshold``);
    multiclass ``prediction`` (int32, index of the most probable class in the model's
    class order), ``score`` (its probability) and ``proba_0`` .. ``proba_<C-1>`` (float64);
    regression ``prediction`` (float64, the predicted value). It is written to a temporary
    file and renamed, so a failed run leaves no partial output.

    Parameters
    ----------
    scorer
        From :func:`open_session`.
    parquet_path, out_path
        Input and output parquet files.
    batch_rows
        Rows per batch (>= 1; None: :func:`default_batch_rows`).
    id_column
        Input column copied to the output first (None: none).
    keep_columns
        Further input columns copied to the output.
    progress
        Logger for progress lines (rows done, rows/s) at most every 5 s; counts only.
    on_batch
        Called with each batch's output table, in row order, once it is written: a caller
        that summarises the scores does so while they are in memory instead of reading the
        file back. It runs in the writer thread (one call at a time), overlapping the
        engine's runs of later batches. An exception it raises fails the run as a bad batch
        does.

    Returns
    -------
    ScoringRun
        Rows, seconds, rows/s, provider, sha256 of the input file and output path.

    Raises
    ------
    ScoringError
        Unreadable/corrupt parquet (names the file), no rows, missing or invalid columns.
    """
    if batch_rows is None:
        batch_rows = default_batch_rows(scorer)
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise ScoringError(f"batch_rows: expected a positive integer, got {batch_rows!r}")
    src, out = Path(parquet_path), Path(out_path)
    pf = _open_parquet(src, [f.name for f in scorer.manifest.features
                             if f.kind == "categorical"])
    total = pf.metadata.num_rows
    if total == 0:
        raise ScoringError(f"parquet file {str(src)!r} has no rows")
    file_schema = _read_schema(src)  # as stored: pf.schema_arrow shows dictionary types
    columns = _needed_columns(scorer, file_schema, src, id_column, keep_columns)
    # Refused rows are named by the id column when the data has one, even if not written.
    names = id_column or (scorer.manifest.id_column
                          if scorer.manifest.id_column in file_schema.names else None)
    if names is not None and names not in columns:
        columns.append(names)
    fingerprint = file_sha256(src)
    tmp = out.with_name(f".{out.name}.tmp")
    rows, start = 0, time.perf_counter()
    last = start
    batches = _batches(pf, src, batch_rows, columns)
    # Batches read and checked ahead, in threads, while the current one is scored, and
    # written and summarised behind it in another: parquet, ONNX Runtime and numpy release
    # the GIL, so the stages overlap on the cores.
    ahead = _ReadAhead(scorer, batches, READ_AHEAD.get(scorer.provider, 1), names)
    sink = _Sink(tmp, keep_columns, on_batch)
    try:
        while (item := next(ahead)) is not None:
            batch = item[0]
            sink.put(_score_batch(scorer, item, file_schema, id_column, keep_columns))
            rows += batch.num_rows
            if (now := time.perf_counter()) - last >= PROGRESS_EVERY_S:
                rate = rows / (now - start)
                progress.info("scored %d/%d rows (%.0f%%, %.0f rows/s, ETA %.0f s)", rows, total,
                              100.0 * rows / total, rate, (total - rows) / rate,
                              extra={"progress": (rows, total, "rows")})
                last = now
        written = sink.finish()
    except BaseException:
        sink.close()
        tmp.unlink(missing_ok=True)
        raise
    finally:
        ahead.close()
    sink.close()
    assert written  # total > 0 so at least one batch was written
    os.replace(tmp, out)
    seconds = time.perf_counter() - start
    progress.info("scored %d rows in %.2f s (%.0f rows/s) on %s", rows, seconds,
                  rows / seconds, scorer.provider)
    return ScoringRun(rows=rows, seconds=seconds, rows_per_s=rows / seconds,
                      provider=scorer.provider, input_fingerprint=fingerprint, output_path=out,
                      provider_reason=scorer.provider_reason, tf32_allowed=scorer.tf32_allowed)
