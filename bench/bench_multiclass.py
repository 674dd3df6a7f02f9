"""Multiclass metrics of a many-class model: wall time and peak memory (issue #22 item 4).

Draws ``--rows`` rows of a ``--classes``-class model's probabilities (softmax of normal
logits, the true class's raised by ``--signal``; built a slice at a time so the peak is
the evaluation's, not the generator's), then runs :func:`evaluate_multiclass` with
``--resamples`` bootstrap resamples, the pipeline's 1000 by default. Prints the wall time
and CPU time of the evaluation, the process's peak RSS (``ru_maxrss``: the ``[N, C]`` float64 input
included) and the up-front estimate :func:`multiclass_memory_bytes` compares with the
limit. Before issue #22 the same call held ``C^2 + 1`` float64 cells per row and per
resample chunk row: ``MemoryError`` at 1000 classes on 300 rows.

Run: ``.venv/bin/python -m bench.bench_multiclass --rows 100000 --classes 1000``
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
from modelgate.evaluation.multiclass import evaluate_multiclass, multiclass_memory_bytes


def _probabilities(rows: int, classes: int, signal: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=rows)
    proba = np.empty((rows, classes))
    for start in range(0, rows, 10_000):
        stop = min(start + 10_000, rows)
        logits = rng.normal(size=(stop - start, classes))
        logits[np.arange(stop - start), y[start:stop]] += signal
        e = np.exp(logits)
        proba[start:stop] = e / e.sum(axis=1, keepdims=True)
    return y, proba


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--signal", type=float, default=3.0)
    args = parser.parse_args()
    y, proba = _probabilities(args.rows, args.classes, args.signal, seed=0)
    started, cpu = time.perf_counter(), time.process_time()
    report = evaluate_multiclass(y, proba, n_bootstrap=args.resamples, seed=0)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    auc = report.by_name()["roc_auc_ovr_macro"]
    print(json.dumps({
        "rows": args.rows, "classes": args.classes, "resamples": args.resamples,
        "seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "estimate_mib": round(multiclass_memory_bytes(args.rows, args.classes,
                                                      n_bootstrap=args.resamples) / 2**20),
        "roc_auc_ovr_macro": [auc.value, auc.ci_lower, auc.ci_upper],
    }))


if __name__ == "__main__":
    main()
