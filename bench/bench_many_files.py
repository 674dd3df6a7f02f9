"""Listing a dataset of many small parquet files (issue #22 item 9): time per file.

Writes ``--files`` parquet files of ``--rows`` rows each under ``day=<k>/`` folders, plus a
Spark-style ``_temporary/`` folder, ``_SUCCESS`` and ``.crc`` files that must be left out,
then times, per file, :func:`list_partitions_local` (one ``os.scandir`` walk),
:func:`local_rows` (row counts from the footers, the memory check before scoring),
:func:`batch_small_files` and :func:`fetch_partition` of every batch (reading the small files
and writing each batch as one parquet file to score): the per-file part of an evaluation,
the rest being per partition. Median of ``--repeat`` runs each.

Run: ``.venv/bin/python -m bench.bench_many_files --files 10000``
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.pipelines.partitions import (
    batch_small_files,
    fetch_partition,
    list_partitions_local,
    local_rows,
)


def _write(root: Path, files: int, rows: int) -> None:
    table = pa.table({"x": pa.array(range(rows), pa.float64()), "y": pa.array([0, 1] * (rows // 2)
                                                                               + [0] * (rows % 2))})
    for i in range(files):
        folder = root / f"day={i // 100}"
        folder.mkdir(exist_ok=True)
        pq.write_table(table, folder / f"part-{i:05d}.parquet")
        (folder / f".part-{i:05d}.parquet.crc").write_bytes(b"")
    (root / "_temporary" / "0").mkdir(parents=True)
    pq.write_table(table, root / "_temporary" / "0" / "part-x.parquet")
    (root / "_SUCCESS").write_bytes(b"")


def _median_s(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, args.files, args.rows)
        found = list_partitions_local(root)
        assert len(found) == args.files, len(found)
        listing = _median_s(lambda: list_partitions_local(root), args.repeat)
        footers = _median_s(lambda: local_rows(found), args.repeat)
        batches = batch_small_files(found)
        work = root / "_work"

        def read_batches() -> None:  # what each scoring partition does before scoring its rows
            for i, batch in enumerate(batches):
                fetch_partition(None, batch, work / str(i))  # type: ignore[arg-type]  # local: no store

        batching = _median_s(lambda: batch_small_files(found), args.repeat)
        reading = _median_s(read_batches, args.repeat)
    per_file = {"listing": listing, "footers": footers, "batching": batching, "reading": reading}
    print(json.dumps({"files": args.files, "rows_per_file": args.rows, "partitions": len(batches),
                      **{f"{k}_ms_per_file": round(1000 * v / args.files, 4) for k, v in per_file.items()},
                      "total_ms_per_file": round(1000 * sum(per_file.values()) / args.files, 4)}))


if __name__ == "__main__":
    main()
