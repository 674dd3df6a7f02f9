"""End-to-end evaluation at scale: wall time per stage and peak RSS of one process.

Builds the demo model (baseline variant), resamples its held-out rows with replacement
to ``--rows`` rows (demo schema, fresh ``row_id``) written as parquet partitions of at
most ``--partition-rows`` rows (1M rows: one file; 100M rows: 20 files of 5M), then runs
the whole evaluation (register, prepare, score every partition and merge, metrics with
1000 bootstrap resamples, fairness, SHAP, decision, report, store) in a fresh child
process, the way ``modelgate evaluate --data DIR`` does, against a PostgreSQL database
made for the run and a local object store. Peak RSS is the child's ``ru_maxrss``; data
generation happens before the child starts and is not counted.

Run: ``.venv/bin/python -m bench.bench_evaluate_scale --rows 10000000``
(needs PostgreSQL on ``--pg``, default ``postgresql://postgres@127.0.0.1:5432/postgres``).

``--segment-values K`` adds two segment columns ``segment_a``, ``segment_b`` of ``K`` values
each (drawn uniformly, independently of everything) to the rows and evaluates them twice, back
to back in fresh child processes on the same files: without segments, then with
``--segments segment_a,segment_b``; it prints both and what segments add (issue #43 item 6).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

WRITE_CHUNK = 1_000_000


SEGMENT_COLUMNS = ("segment_a", "segment_b")


def _generate(heldout: Path, out_dir: Path, rows: int, partition_rows: int, seed: int,
              segment_values: int = 0) -> int:
    """Write ``rows`` resampled held-out rows as partitions; returns the number of files."""
    table = pq.read_table(heldout)
    rng = np.random.default_rng(seed)
    labels = np.array([f"v{k:03d}" for k in range(segment_values)], dtype=object)
    files, done = 0, 0
    while done < rows:
        size = min(partition_rows, rows - done)
        path = out_dir / f"part-{files:05d}.parquet"
        writer = None
        for start in range(0, size, WRITE_CHUNK):
            n = min(WRITE_CHUNK, size - start)
            chunk = table.take(pa.array(rng.integers(0, table.num_rows, n)))
            chunk = chunk.set_column(0, "row_id", pa.array(np.arange(done + start, done + start + n)))
            if segment_values:
                for name in SEGMENT_COLUMNS:
                    chunk = chunk.append_column(
                        name, pa.array(labels[rng.integers(0, segment_values, n)], pa.string()))
            writer = writer or pq.ParquetWriter(path, chunk.schema)
            writer.write_table(chunk)
        assert writer is not None
        writer.close()
        files, done = files + 1, done + size
    return files


#: The runner's steps as this benchmark's stage names (bench/RESULTS.md uses them).
STAGES = {"partitions": "list partitions", "score": "score + summarise partitions", "merge": "merge",
          "metrics": "metrics (1000 resamples)", "fairness": "fairness (1000 resamples)",
          "explain": "SHAP (sample across partitions)", "decide": "decide", "report": "report",
          "store": "store"}


def _child(archive: Path, data: Path, segments: tuple[str, ...] = ()) -> dict[str, Any]:
    """The evaluation through the runner (as ``modelgate evaluate``), each step timed."""
    from modelgate.pipelines.context import Context, register_archive
    from modelgate.pipelines.evaluation.runner import run_evaluation

    stages: dict[str, float] = {}

    def timed(name: str, fn: Any, *args: Any) -> Any:
        start = time.perf_counter()
        result = fn(*args)
        stages[name] = stages.get(name, 0.0) + time.perf_counter() - start
        return result

    samples: list[tuple[float, int]] = []
    sampling = threading.Event()

    def sample() -> None:  # resident set every 20 ms, to tell which step holds the peak
        while not sampling.wait(0.02):
            samples.append((time.perf_counter(), _rss_mb()))

    threading.Thread(target=sample, daemon=True).start()
    start = time.perf_counter()
    ctx = timed("open stores + migrate", Context.open)
    row, _ = timed("register archive", register_archive, ctx, archive)
    done = run_evaluation(ctx, model_name=row.model_name, version=row.version, dataset_uri=str(data),
                          run_key="bench-scale", segments=segments)
    sampling.set()
    stages.update({STAGES.get(name, name): s for name, s in done.seconds.items()})
    # the runner's steps run one after the other, in done.seconds' order, up to its return
    peaks, edge = {}, time.perf_counter() - sum(done.seconds.values())
    for name, seconds in done.seconds.items():
        inside = [rss for t, rss in samples if edge <= t < edge + seconds]
        peaks[STAGES.get(name, name)] = max(inside, default=0)
        edge += seconds
    return {"stages": stages, "total_s": time.perf_counter() - start, "status": done.status,
            "partitions": len(done.outputs["partitions"]), "rss_mb": peaks}


def _rss_mb() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


def _database(pg: str, name: str, create: bool) -> str:
    import psycopg2

    conn = psycopg2.connect(pg)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE IF EXISTS "{name}"')
        if create:
            cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()
    return pg.rsplit("/", 1)[0] + f"/{name}"


def _run_child(args: argparse.Namespace, root: Path, archive: Path, data: Path,
               segments: bool) -> tuple[dict[str, Any], Any]:
    """One evaluation in a fresh child process against a database of its own."""
    db_name = f"modelgate_bench_{os.getpid()}"
    env = {**os.environ, "MODELGATE_HOME": str(root / ("home-segments" if segments else "home")),
           "MODELGATE_DATABASE_URL": _database(args.pg, db_name, create=True)}
    for key in ("MODELGATE_S3_ENDPOINT", "AIRFLOW_CONN_MODELGATE_S3"):
        env.pop(key, None)
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "bench.bench_evaluate_scale", "--child", str(archive), str(data),
             *(["--child-segments"] if segments else [])], env=env, stdout=subprocess.PIPE)
        assert child.stdout is not None
        out = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0:
            raise SystemExit(f"child failed with status {status}")
    finally:
        _database(args.pg, db_name, create=False)
    return json.loads(out.decode().strip().splitlines()[-1]), usage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partition-rows", type=int, default=5_000_000)
    parser.add_argument("--segment-values", type=int, default=0,
                        help="add two segment columns of this many values; evaluate without and with them")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--child", nargs=2, metavar=("ARCHIVE", "DATA"), help=argparse.SUPPRESS)
    parser.add_argument("--child-segments", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        segments = SEGMENT_COLUMNS if args.child_segments else ()
        print(json.dumps(_child(Path(args.child[0]), Path(args.child[1]), segments)))
        return
    from modelgate.demo.data import build_demo

    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        root = Path(tmp)
        demo = build_demo(root / "demo", version="1", variant="baseline")
        data = root / "heldout"
        data.mkdir()
        start = time.perf_counter()
        files = _generate(demo.heldout_path, data, args.rows, args.partition_rows, seed=0,
                          segment_values=args.segment_values)
        generated = time.perf_counter() - start
        runs = [False, True] if args.segment_values else [False]
        done = [(_run_child(args, root, demo.archive_path, data, segments), os.getloadavg()[0])
                for segments in runs]
    print(f"rows {args.rows:,} in {files} partition(s) (generated in {generated:.1f} s, not counted)")
    names = ["without segments", f"with 2 x {args.segment_values} segments"][:len(done)]
    print("| stage | " + " | ".join(f"{n}: wall s | most RSS sampled, MB" for n in names) + " |")
    print("|---|" + "---:|---:|" * len(done))
    for stage in done[0][0][0]["stages"]:
        print(f"| {stage} | " + " | ".join(f"{r['stages'].get(stage, 0.0):.2f} | {r['rss_mb'].get(stage, '')}"
                                           for (r, _), _ in done) + " |")
    print("| **end to end** | " + " | ".join(f"**{r['total_s']:.2f}** | " for (r, _), _ in done) + " |")
    for name, ((result, usage), load) in zip(names, done, strict=True):
        print(f"{name}: peak RSS {usage.ru_maxrss / 1024:.0f} MB; user {usage.ru_utime:.1f} s, "
              f"sys {usage.ru_stime:.1f} s; gate {result['status']}; 1-min load after {load:.1f}")
    if len(done) == 2:
        (base, base_usage), _ = done[0]
        (seg, seg_usage), _ = done[1]
        cpu = [u.ru_utime + u.ru_stime for u in (base_usage, seg_usage)]
        print(f"segments add {cpu[1] - cpu[0]:.1f} CPU-s ({(cpu[1] - cpu[0]) / cpu[0]:+.1%} of "
              f"{cpu[0]:.1f}) and {seg['total_s'] - base['total_s']:.1f} s wall "
              f"({(seg['total_s'] - base['total_s']) / base['total_s']:+.1%})")


if __name__ == "__main__":
    main()
