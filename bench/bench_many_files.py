"""Listing a dataset of many small parquet files (issue #22 item 9): time per file.

Writes ``--files`` parquet files of ``--rows`` rows each under ``day=<k>/`` folders, plus a
Spark-style ``_temporary/`` folder, ``_SUCCESS`` and ``.crc`` files that must be left out,
then times, per file, :func:`list_partitions_local` (one ``os.scandir`` walk),
:func:`local_rows` (row counts from the footers, the memory check before scoring),
:func:`batch_small_files` and :func:`fetch_partition` of every batch (reading the small files
and writing each batch as one parquet file to score): the per-file part of an evaluation,
the rest being per partition. Median of ``--repeat`` runs each.

Run: ``.venv/bin/python -m bench.bench_many_files --files 10000``

With ``--model ARCHIVE --heldout PARQUET`` it also times whole evaluations (``modelgate
evaluate``'s code, :func:`run_evaluation_locally`) of the same rows as one file and as
``--files`` files, against the results store configured in the environment
(``MODELGATE_DATABASE_URL`` or the embedded default): the difference per file is the overhead
of many files, end to end.

With ``--s3`` the same files are uploaded (not timed) under a fresh prefix of the S3 server
configured in the environment (``MODELGATE_S3_ENDPOINT``, ``MODELGATE_S3_ACCESS_KEY``,
``MODELGATE_S3_SECRET_KEY``, ``MODELGATE_S3_BUCKET``; moto's server will do) and the per-file
part is timed for the ``s3://`` prefix instead: :func:`list_sized` (one listing, sizes
included), :func:`batch_by_size` and :func:`fetch_members` of every batch (downloading,
hashing, reading and deleting each member, writing the batch). The prefix is deleted after.
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

from modelgate.pipelines.evaluation.partitions import (
    batch_by_size,
    batch_small_files,
    fetch_members,
    fetch_partition,
    list_partitions_local,
    list_sized,
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


def _end_to_end(archive: Path, heldout: Path, files: int, rows: int) -> dict[str, float]:
    """Seconds of one evaluation of ``files * rows`` held-out rows as one file and as ``files``
    files of ``rows`` rows (the held-out rows repeated as needed, ``row_id`` made unique)."""
    import numpy as np
    import pandas as pd

    from modelgate.cli.runs import run_evaluation_locally

    source = pd.read_parquet(heldout)
    frame = source.iloc[np.arange(files * rows) % len(source)].reset_index(drop=True)
    if "row_id" in frame.columns:
        frame["row_id"] = np.arange(len(frame))
    with tempfile.TemporaryDirectory() as tmp:
        one, many = Path(tmp) / "one.parquet", Path(tmp) / "many"
        frame.to_parquet(one, index=False)
        for i in range(files):
            folder = many / f"day={i // 100}"
            folder.mkdir(parents=True, exist_ok=True)
            frame.iloc[rows * i:rows * (i + 1)].to_parquet(folder / f"part-{i:05d}.parquet", index=False)
        # many files first: that run also pays the process's one-time costs (imports, the
        # database's migrations), so the overhead per file is not understated
        started = time.perf_counter()
        split = run_evaluation_locally(archive, many, None).payload
        middle = time.perf_counter()
        whole = run_evaluation_locally(archive, one, None).payload
        ended = time.perf_counter()
    assert split["metrics"] == whole["metrics"], "many files must give the numbers of one"
    return {"one_file_s": round(ended - middle, 2), "many_files_s": round(middle - started, 2),
            "overhead_ms_per_file": round(1000 * ((middle - started) - (ended - middle)) / files, 3)}


def _s3_per_file(files: int, rows: int, repeat: int) -> dict[str, object]:
    """Per-file seconds of listing, batching and fetching ``files`` objects of ``rows`` rows."""
    import uuid

    from modelgate.config import Settings
    from modelgate.pipelines.context import Context
    from modelgate.store.objects import S3ObjectStore

    settings = Settings.from_env()
    if settings.s3 is None:
        raise SystemExit("--s3 needs an S3 server: set MODELGATE_S3_ENDPOINT, MODELGATE_S3_ACCESS_KEY, "
                         "MODELGATE_S3_SECRET_KEY (and MODELGATE_S3_BUCKET)")
    store = S3ObjectStore(settings.s3)
    ctx = Context(settings=settings, db_url="", store=store)  # fetching needs only the store
    prefix = f"bench-many-files-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, files, rows)
        for path in list_partitions_local(root):  # the data files only, as a copy would hold
            store.put_file(f"{prefix}/{Path(path).relative_to(root).as_posix()}", Path(path),
                           content_type="application/vnd.apache.parquet")
        uri = f"s3://{store.bucket}/{prefix}"
        try:
            sized = list_sized(store, uri)
            assert len(sized) == files, len(sized)
            batches = batch_by_size(sized)

            def fetch_batches() -> None:
                for i, batch in enumerate(batches):
                    fetch_members(ctx, batch, root / "_work" / str(i))

            per_file = {"listing": _median_s(lambda: list_sized(store, uri), repeat),
                        "batching": _median_s(lambda: batch_by_size(sized), repeat),
                        "fetching": _median_s(fetch_batches, repeat)}
        finally:
            store.delete_keys(store.list_keys(prefix + "/"))
    return {"files": files, "rows_per_file": rows, "partitions": len(batches), "dataset": "s3",
            **{f"{k}_ms_per_file": round(1000 * v / files, 4) for k, v in per_file.items()},
            "total_ms_per_file": round(1000 * sum(per_file.values()) / files, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--model", type=Path, help="a model archive: also time whole evaluations")
    parser.add_argument("--heldout", type=Path, help="held-out parquet for --model")
    parser.add_argument("--s3", action="store_true", help="time an s3:// prefix of the files instead")
    args = parser.parse_args()
    if args.s3:
        print(json.dumps(_s3_per_file(args.files, args.rows, args.repeat)))
        return
    if args.model is not None:
        print(json.dumps({"files": args.files, "rows_per_file": args.rows,
                          **_end_to_end(args.model, args.heldout, args.files, args.rows)}))
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
