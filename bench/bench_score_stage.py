"""The evaluation's score stage, its parts, and the bare engine, on the same rows in one run.

The demo model (baseline variant) on ``--rows`` rows resampled from its held-out set (demo
schema), written as parquet partitions of at most 5M rows as ``bench_evaluate_scale`` writes
them. Three measurements, one after the other in this process:

* **bare engine**: ONNX Runtime alone over in-memory, ready-made inputs (exactly the arrays the
  stage feeds), single-threaded sessions run from one Python thread per core in 4096-row slices
  (the scoring table's "bare parallel");
* **stage**: what ``score_partition`` computes for each partition without a champion: the
  held-out labels and groups checked, :func:`~modelgate.onnx.scoring.score_parquet` (read,
  check, run, write the scores with the label and sensitive columns) and the summary into
  mergeable statistics and group score tables as they are scored (the pipeline's ``_Summary``);
  the object-store upload and pickling are left out;
* **breakdown**: the stage's parts on the first partition, each over all of its batches before
  the next begins: read (parquet batches of the needed columns), convert (to pandas, checked
  ONNX inputs), run (the scorer's parallel runs), write (the scores file), summarise (the
  scored tables into statistics), check (the held-out labels and groups).

Wall and CPU seconds (process user + sys, all threads) are printed for each with rows/s; the
load average before and after says how shared the machine was.

Run: ``.venv/bin/python -m bench.bench_score_stage --rows 10000000``
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.bench_evaluate_scale import _generate

SLICE = 4096


class _ThreadCpu:
    """CPU seconds of each of this process's threads over a block, from /proc/self/task sampled
    every 0.1 s (a thread that ends between samples loses at most its last 0.1 s)."""

    def __init__(self) -> None:
        self.cpu: dict[int, float] = {}
        self._start: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _now() -> dict[int, float]:
        out = {}
        tick = os.sysconf("SC_CLK_TCK")
        for task in Path("/proc/self/task").iterdir():
            try:
                fields = (task / "stat").read_text().rpartition(")")[2].split()
            except OSError:  # ended meanwhile
                continue
            out[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
        return out

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            self._sample()

    def _sample(self) -> None:
        for tid, cpu in self._now().items():
            self.cpu[tid] = cpu - self._start.get(tid, 0.0)

    def __enter__(self) -> _ThreadCpu:
        self._start = self._now()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.cpu.pop(self._thread.native_id or -1, None)  # the sampler's own: not the stage's
        self.cpu = {t: c for t, c in self.cpu.items() if c > 0}


def _timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def _breakdown(scorer: Any, single: Any, first: Path, manifest: Any, keep: list[str],
               root: Path) -> tuple[dict[str, tuple[float, float]], tuple[float, float]]:
    """The stage's parts on one partition, each over every batch, then the bare engine on the
    inputs the convert part built: ``({part: (wall, cpu)}, (bare wall, bare cpu))``."""
    from modelgate.pipelines.evaluation.score_step import _read_columns, _Summary, check_held_out

    model_manifest = scorer.manifest
    names = list(scorer.feature_names)
    cats = [f.name for f in model_manifest.features if f.kind == "categorical"]
    rows: dict[str, tuple[float, float]] = {}
    pf = pq.ParquetFile(first, read_dictionary=cats)
    batches, w, c = _timed(lambda: list(pf.iter_batches(batch_size=65536,
                                                        columns=[*names, "row_id", *keep])))
    rows["read"] = (w, c)
    feeds, w, c = _timed(lambda: [scorer.feeds(b.select(names).to_pandas()) for b in batches])
    rows["convert"] = (w, c)
    outs, w, c = _timed(lambda: [scorer._output_matrix(f, b.num_rows)
                                 for f, b in zip(feeds, batches, strict=True)])
    rows["run"] = (w, c)

    tables: list[pa.Table] = []

    def write() -> Path:
        out = root / "breakdown-scores.parquet"
        writer = None
        for batch, matrix in zip(batches, outs, strict=True):
            score = matrix[:, model_manifest.output.positive_index]
            table = pa.table({"score": pa.array(score, type=pa.float64()),
                              "prediction": pa.array((score >= model_manifest.threshold)
                                                     .astype(np.int8)),
                              **{k: batch.column(k) for k in keep}})
            writer = writer or pq.ParquetWriter(out, table.schema, use_dictionary=keep)
            writer.write_table(table)
            tables.append(table)
        assert writer is not None
        writer.close()
        return out

    written, w, c = _timed(write)
    rows["write"] = (w, c)
    def summarise() -> Any:
        summary = _Summary(manifest)
        for table in tables:
            summary.add(table)
        return summary.result()

    _, w, c = _timed(summarise)
    rows["summarise"] = (w, c)
    coded = manifest.sensitive_features  # read as dictionaries, as score_partition reads them
    _, w, c = _timed(lambda: check_held_out(_read_columns(first, keep, dictionary=coded), manifest))
    rows["check held-out labels and groups"] = (w, c)

    # bare engine on the same in-memory inputs
    output = [model_manifest.output.name]
    pool = ThreadPoolExecutor(max_workers=max(1, scorer.parallel_runs))
    work = [(f, i) for f, b in zip(feeds, batches, strict=True) for i in range(0, b.num_rows, SLICE)]

    def bare() -> None:
        list(pool.map(lambda item: single.session.run(
            output, {k: v[item[1]:item[1] + SLICE] for k, v in item[0].items()}), work))

    bare()  # warm-up
    _, bare_w, bare_c = _timed(bare)
    pool.shutdown()
    return rows, (bare_w, bare_c)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partition-rows", type=int, default=5_000_000)
    args = parser.parse_args()
    from modelgate.demo.data import build_demo
    from modelgate.onnx.artifact import verify
    from modelgate.onnx.scoring import SessionSettings, open_session, score_parquet
    from modelgate.pipelines.evaluation.score_step import _read_columns, _Summary, check_held_out

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-stage-") as tmp:
        root = Path(tmp)
        demo = build_demo(root / "demo", version="1", variant="baseline")
        data = root / "heldout"
        data.mkdir()
        _generate(demo.heldout_path, data, args.rows, args.partition_rows, seed=0)
        parts = sorted(data.glob("*.parquet"))
        model = verify(demo.archive_path)
        scorer = open_session(model)  # as deployed: one single-threaded run per core
        single = open_session(model, SessionSettings(intra_op_threads=1, parallel_runs=1))
        manifest = model.manifest
        keep = list(dict.fromkeys([manifest.label.column, *manifest.sensitive_features]))

        first = parts[0]
        n_first = pq.ParquetFile(first).metadata.num_rows
        rows, (bare_w, bare_c) = _breakdown(scorer, single, first, manifest, keep, root)

        # the stage as the pipeline runs it, every partition
        def stage() -> int:
            done = 0
            for i, part in enumerate(parts):
                check_held_out(_read_columns(part, keep, dictionary=manifest.sensitive_features), manifest)
                summary = _Summary(manifest)  # summarised as scored, as the pipeline does
                run = score_parquet(scorer, part, root / f"scored-{i}.parquet", keep_columns=keep,
                                    on_batch=summary.add)
                summary.result()
                done += run.rows
            return done

        with _ThreadCpu() as threads:
            total, stage_w, stage_c = _timed(stage)
    load_after = os.getloadavg()
    print(f"rows {total:,} in {len(parts)} partition(s); {scorer.provider}, {scorer.parallel_runs} "
          f"parallel run(s); load average {load_before[0]:.1f} before, {load_after[0]:.1f} after\n")
    print("| what | rows | wall s | CPU s | rows/s (wall) | CPU-us a row |\n"
          "|---|---:|---:|---:|---:|---:|")
    print(f"| bare engine: in-memory inputs, 1-thread sessions, {scorer.parallel_runs} thread(s), "
          f"{SLICE}-row slices | {n_first:,} | {bare_w:.2f} | {bare_c:.2f} | {n_first / bare_w:,.0f} "
          f"| {1e6 * bare_c / n_first:.3f} |")
    print(f"| **score stage** (check, read, convert, run, write, summarise) | {total:,} | "
          f"{stage_w:.2f} | {stage_c:.2f} | **{total / stage_w:,.0f}** | {1e6 * stage_c / total:.3f} |")
    for name, (w, c) in rows.items():
        print(f"| part: {name} | {n_first:,} | {w:.2f} | {c:.2f} | {n_first / w:,.0f} "
              f"| {1e6 * c / n_first:.3f} |")
    busiest = max(threads.cpu.values(), default=0.0)
    print(f"\nstage's threads (sampled every 0.1 s): busiest {busiest:.2f} CPU-s of "
          f"{sum(threads.cpu.values()):.2f}; on 2 idle cores its wall is at least "
          f"{max(busiest, sum(threads.cpu.values()) / 2):.2f} s")
    print(f"stage / bare engine (rows/s, wall): {total / stage_w / (n_first / bare_w):.2f}x; "
          f"CPU a row: {stage_c / total / (bare_c / n_first):.1f}x the engine's")


if __name__ == "__main__":
    main()
