"""ADWIN throughput: modelgate's AdwinDetector.update_many vs river's own element loop.

    .venv/bin/python -m bench.bench_adwin            # 10M-element seeded 0/1 error stream

Both see the same stream (error rate 0.10, rising to 0.15 at the middle, so the detections
path is exercised) and must report the same change points. Timings are end to end: ours
includes ``ndarray.tolist()`` and the change-point bookkeeping; river's is the documented loop
``for x in xs: det.update(x); if det.drift_detected: ...`` over a ready Python list.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from modelgate.drift.adwin import AdwinDetector
from river.drift import ADWIN


def river_loop(xs: list[float]) -> list[int]:
    det = ADWIN()
    hits = []
    for i, x in enumerate(xs):
        det.update(x)
        if det.drift_detected:
            hits.append(i)
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    half = args.n // 2
    errors = np.r_[rng.random(half) < 0.10, rng.random(args.n - half) < 0.15].astype(np.float64)
    as_list = errors.tolist()
    ours, theirs = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        points = AdwinDetector().update_many(errors)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        hits = river_loop(as_list)
        theirs.append(time.perf_counter() - t)
        assert [p.position for p in points] == hits, "change points differ from river"
    print(f"stream: {args.n:,} elements, {len(hits)} detections (identical in both)\n")
    print("| contender | best s | elements/s (M) |")
    print("|---|---:|---:|")
    rows = (("modelgate AdwinDetector.update_many", ours), ("river ADWIN loop", theirs))
    for name, times in rows:
        best = min(times)
        print(f"| {name} | {best:.2f} | {args.n / best / 1e6:.2f} |")


if __name__ == "__main__":
    main()
