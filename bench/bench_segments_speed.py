"""Benchmark: what segment statistics add to the evaluation's own statistics and metrics (issue #43 item 6).

Run from the repository root::

    nice -n 10 .venv/bin/python -m bench.bench_segments_speed                 # 1M rows
    .venv/bin/python -m bench.bench_segments_speed --rows 10000000            # the issue's size

Rows: label Bernoulli(0.4), score N(0.35 + 0.3 y, 0.2) clipped to [0, 1] (continuous: about as many
distinct scores as rows), two segment columns of 50 values each. Timed, one process:

* *base*: what a binary evaluation computes from the scores: ``sufficient.collect`` over
  batches of 2**20 rows, ``merge``, ``performance_from_statistics`` (1,000 resamples);
* *segments*: what segments add: per batch ``collect_segments`` (both columns) and
  ``count_slices`` (both columns and their pair), ``merge_segments`` / ``merge_slice_counts``,
  then ``evaluate_segments`` (closed-form intervals, each rest the column's total minus the
  segment) and ``search_slices``.

Both are timed in CPU seconds of this process (``time.process_time``; the machine is shared,
so wall time measures the other sessions too) and in wall seconds.  Scoring (ONNX Runtime)
and I/O are left out, so the share is an upper bound on what segments add to a whole run.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from modelgate.evaluation import sufficient
from modelgate.evaluation.performance import performance_from_statistics
from modelgate.evaluation.segment_statistics import collect_segments, merge_segments
from modelgate.evaluation.segments import evaluate_segments
from modelgate.evaluation.weakest_slices import count_slices, merge_slice_counts, search_slices
from modelgate.fairness.disaggregate import encode_groups

BATCH = 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--values", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n = args.rows
    y = (rng.random(n) < 0.4).astype(np.int8)
    s = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1)
    a, b = rng.integers(0, args.values, n), rng.integers(0, args.values, n)

    start, cpu = time.perf_counter(), time.process_time()
    parts = [sufficient.collect(y[i:i + BATCH], s[i:i + BATCH], threshold=0.5)
             for i in range(0, n, BATCH)]
    stats = sufficient.merge(parts)
    performance_from_statistics(stats, n_bootstrap=1000)
    base, base_cpu = time.perf_counter() - start, time.process_time() - cpu

    start, cpu = time.perf_counter(), time.process_time()
    seg_parts, slice_parts = [], []
    for i in range(0, n, BATCH):
        cols = {"a": encode_groups(a[i:i + BATCH]), "b": encode_groups(b[i:i + BATCH])}
        seg_parts.append(collect_segments(y[i:i + BATCH], s[i:i + BATCH], threshold=0.5,
                                          columns=cols))
        slice_parts.append(count_slices(y[i:i + BATCH], s[i:i + BATCH], threshold=0.5,
                                        columns=cols))
    collected = time.process_time() - cpu
    segments = merge_segments(seg_parts)
    report = evaluate_segments(segments, n_bootstrap=1000)
    found = search_slices(merge_slice_counts(slice_parts))
    extra, extra_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"| {n:,} | 2 x {args.values} | {base_cpu:.1f} | {collected:.1f} | {extra_cpu:.1f} | "
          f"{extra_cpu / base_cpu:.0%} | wall: base {base:.1f} s, segments {extra:.1f} s | "
          f"{len(report.segments)} segments, {found.candidates} slices searched |")


if __name__ == "__main__":
    main()
