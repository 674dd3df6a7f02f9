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
  then ``evaluate_segments`` (1,000 resamples) and ``search_slices``.

Scoring (ONNX Runtime) and I/O are left out, so the share is an upper bound on what segments add
to a whole run.
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

    start = time.perf_counter()
    parts = [sufficient.collect(y[i:i + BATCH], s[i:i + BATCH], threshold=0.5)
             for i in range(0, n, BATCH)]
    stats = sufficient.merge(parts)
    performance_from_statistics(stats, n_bootstrap=1000)
    base = time.perf_counter() - start

    start = time.perf_counter()
    seg_parts, slice_parts = [], []
    for i in range(0, n, BATCH):
        cols = {"a": encode_groups(a[i:i + BATCH]), "b": encode_groups(b[i:i + BATCH])}
        seg_parts.append(collect_segments(y[i:i + BATCH], s[i:i + BATCH], threshold=0.5,
                                          columns=cols))
        slice_parts.append(count_slices(y[i:i + BATCH], s[i:i + BATCH], threshold=0.5,
                                        columns=cols))
    collected = time.perf_counter() - start
    segments = merge_segments(seg_parts)
    report = evaluate_segments(segments, n_bootstrap=1000)
    found = search_slices(merge_slice_counts(slice_parts))
    extra = time.perf_counter() - start
    print(f"| {n:,} | 2 x {args.values} | {base:.1f} | {collected:.1f} | {extra:.1f} | "
          f"{extra / base:.0%} | {len(report.segments)} segments, {found.candidates} slices searched |")


if __name__ == "__main__":
    main()
