"""End-to-end scoring throughput: parquet -> stored scores vs a bare ONNX Runtime ``run``.

Builds the demo model (baseline variant), samples ``--rows`` rows with replacement from
its held-out set into a parquet file (demo schema, fresh ``row_id``), then measures

* ours: :func:`modelgate.onnx.scoring.score_parquet` (read, validate, run, write parquet),
  for a few ``batch_rows``;
* bare: ``session.run`` over the same rows already in memory as ready-made ONNX inputs
  (exactly the arrays our path feeds), for several batch sizes, in a session with ONNX
  Runtime's default threads; the best is the baseline of the target;
* bare parallel: the same batches in a single-threaded session run from one Python thread
  per core, the way modelgate runs by default (``SessionSettings.parallel_runs``): inference
  alone with our threading, so the gap to ours is the cost of reading, checking and writing.

Every configuration is warmed up once, then timed ``--repeats`` times, interleaved so
that all of them see the same CPU contention; best and median are reported.
Run: ``.venv/bin/python -m bench.bench_scoring [--rows 1000000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from modelgate.demo.data import build_demo
from modelgate.onnx.artifact import verify
from modelgate.onnx.scoring import ModelScorer, SessionSettings, open_session, score_parquet


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _synthetic(heldout: Path, out: Path, rows: int, seed: int) -> None:
    table = pq.read_table(heldout)
    idx = np.random.default_rng(seed).integers(0, table.num_rows, rows)
    sample = table.take(pa.array(idx))
    sample = sample.set_column(0, "row_id", pa.array(np.arange(rows, dtype=np.int64)))
    pq.write_table(sample, out)


def _bare_runner(scorer: ModelScorer, path: Path, rows: int, batch: int,
                 pool: ThreadPoolExecutor | None = None) -> Callable[[], object]:
    cats = [f.name for f in scorer.manifest.features if f.kind == "categorical"]
    frame = pq.read_table(path, read_dictionary=cats).to_pandas()
    feeds = scorer.feeds(frame)  # preloaded, ready-made ONNX inputs (what our path feeds)
    output = [scorer.manifest.output.name]

    def run_one(i: int) -> object:
        return scorer.session.run(output, {k: v[i:i + batch] for k, v in feeds.items()})

    def run_all() -> None:
        if pool is None:
            for i in range(0, rows, batch):
                run_one(i)
        else:
            list(pool.map(run_one, range(0, rows, batch)))

    return run_all


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="ORT intra-op threads")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        demo = build_demo(tmp / "demo")
        data = tmp / "input.parquet"
        _synthetic(demo.heldout_path, data, args.rows, seed=0)
        model = verify(demo.archive_path)
        # ours as deployed (parallel runs unless --threads is given); bare with ORT's defaults
        scorer = open_session(model, SessionSettings(provider="auto", intra_op_threads=args.threads))
        default = open_session(model, SessionSettings(provider="auto", parallel_runs=1))
        single = open_session(model, SessionSettings(provider="auto", intra_op_threads=1,
                                                     parallel_runs=1))
        pool = ThreadPoolExecutor(max_workers=max(2, scorer.parallel_runs))
        runners: dict[tuple[str, int], Callable[[], object]] = {}
        for batch in (4096, 16384, 65536, 262144, args.rows):
            runners[("bare", batch)] = _bare_runner(default, data, args.rows, batch)
        for batch in (4096, 16384):
            runners[("bare parallel", batch)] = _bare_runner(single, data, args.rows, batch, pool)
        for batch in (16384, 65536, 262144):
            runners[("ours", batch)] = partial(score_parquet, scorer, data, tmp / "s.parquet",
                                               batch_rows=batch, id_column="row_id")
        times: dict[tuple[str, int], list[float]] = {key: [] for key in runners}
        for fn in runners.values():
            fn()  # warm-up
        for _ in range(args.repeats):  # interleaved, so both paths see the same contention
            for key, fn in runners.items():
                times[key].append(_seconds(fn))
        _report(args, f"{scorer.provider}, ours with {scorer.parallel_runs} parallel run(s)",
                data, times)


def _report(args: argparse.Namespace, provider: str, data: Path,
            times: dict[tuple[str, int], list[float]]) -> None:
    best = {k: args.rows / min(v) for k, v in times.items()}
    median = {k: args.rows / statistics.median(v) for k, v in times.items()}
    top_bare = max(v for (path, _), v in best.items() if path == "bare")
    top_bare_median = max(v for (path, _), v in median.items() if path == "bare")
    print(f"rows={args.rows:,} provider={provider} intra_op_threads={args.threads} "
          f"repeats={args.repeats} input={data.stat().st_size / 2**20:.1f} MiB\n")
    print("| path | batch rows | best rows/s | median rows/s | best / best bare |")
    print("|---|---:|---:|---:|---:|")
    names = {"bare": "bare `session.run`, in-memory inputs, ORT default threads",
             "bare parallel": "bare `session.run`, in-memory inputs, 1-thread session, "
                              "one Python thread per core",
             "ours": "ours `score_parquet`, parquet -> parquet"}
    for (path, batch), value in best.items():
        name = names[path]
        print(f"| {name} | {batch:,} | {value:,.0f} | {median[(path, batch)]:,.0f} | "
              f"{value / top_bare:.2f}x |")
    ours_best = max(v for (path, _), v in best.items() if path == "ours")
    ours_median = max(v for (path, _), v in median.items() if path == "ours")
    top_parallel = max(v for (path, _), v in best.items() if path == "bare parallel")
    print(f"\nours / bare (best of each): {ours_best / top_bare:.2f}x; "
          f"(median of each): {ours_median / top_bare_median:.2f}x; "
          f"ours / bare parallel (best of each): {ours_best / top_parallel:.2f}x")


if __name__ == "__main__":
    main()
